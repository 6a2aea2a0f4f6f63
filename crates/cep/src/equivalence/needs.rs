//! What the DEFINE conditions read of a partial match's history, worked out once per pattern.

use super::super::expr::{Agg, Base, RowRef, Sel, E};

/// What the DEFINE conditions read of a partial match's history (the rows before the one
/// being classified).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Needs {
    /// Variables all of whose rows a condition reads (an aggregate whose argument reads
    /// MATCH_NUMBER(), `PREV(CLASSIFIER(A))`).
    pub all: Vec<usize>,
    /// Aggregates a condition computes over rows of a partial match (of a variable, or of
    /// every row with an argument reading each row's CLASSIFIER()): partial matches are told
    /// apart by what the rows gave each so far (`eval/summary.rs`), not by the rows.
    pub aggs: Vec<Agg>,
    /// (variable, k): the last `k` rows mapped to the variable.
    pub last: Vec<(usize, usize)>,
    /// (variable, k): the first `k` rows mapped to the variable.
    pub first: Vec<(usize, usize)>,
    /// The variables of the last `tail` rows.
    pub tail: usize,
    /// The variables of the first `head` rows.
    pub head: usize,
    /// A condition reads something that depends on where the match started (an aggregate
    /// over every row of the match, `FIRST(x)`, `LAST(x, n)`): the same in every thread of
    /// an attempt, not in every attempt.
    pub from_start: bool,
}

impl Needs {
    /// What `defines` (each variable's condition) read.
    pub(crate) fn of(defines: &[Option<E>]) -> Needs {
        let mut needs = Needs::default();
        for (own, e) in defines.iter().enumerate() {
            if let Some(e) = e {
                needs.visit(e, own, defines.len());
            }
        }
        needs
    }

    /// Whether the conditions read nothing of the history: every two threads at one
    /// instruction are equivalent.
    pub(crate) fn nothing(&self) -> bool {
        self.all.is_empty()
            && self.aggs.is_empty()
            && self.last.is_empty()
            && self.first.is_empty()
            && self.tail == 0
            && self.head == 0
    }

    /// What `e`, in the condition of variable `own` of `vars` variables, reads.
    fn visit(&mut self, e: &E, own: usize, vars: usize) {
        let all = |v: usize, needs: &mut Needs| {
            if !needs.all.contains(&v) {
                needs.all.push(v);
            }
        };
        match e {
            // NEXT is a measure's only.
            E::Lit(_) | E::MatchNumber | E::Next { .. } => {}
            E::Col(r, _) => self.reference(*r, own, false, vars),
            E::Classifier(r) => self.reference(*r, own, true, vars),
            E::Agg(a) => {
                // The argument reads the aggregated rows (and PREV of them, the same in every
                // thread), the variable of each (`CLASSIFIER()`), and with `PREV(CLASSIFIER())`
                // the variable of a row before each, which may be any row's.
                let (mut classifier, mut before, mut number) = (false, 0, false);
                for x in a.arg.iter().chain(&a.by) {
                    x.walk(&mut |x| match x {
                        E::Classifier(r) => {
                            classifier = true;
                            before = before.max(r.back);
                        }
                        E::MatchNumber => number = true,
                        _ => {}
                    });
                }
                match a.var {
                    // The rows of the whole match and their columns are the same in every
                    // thread of an attempt; where the match started is not the same in every
                    // attempt.
                    None if !classifier => self.from_start = true,
                    // MATCH_NUMBER() changes as earlier matches are reported: a summary of
                    // the values so far would go stale, the rows themselves tell.
                    Some(sel) if number && before == 0 => {
                        for v in sel.members() {
                            all(v, self);
                        }
                    }
                    _ if number => {
                        self.from_start = true;
                        for v in 0..vars {
                            all(v, self);
                        }
                    }
                    // Otherwise what the rows gave the aggregate so far is summarized
                    // (`eval/summary.rs`): later rows add to it alike. A later row's
                    // `PREV(CLASSIFIER())` reads the variable of one of the last rows, or of a
                    // row before the match (none: in other attempts, one of theirs).
                    _ => {
                        if !self.aggs.contains(a) {
                            self.aggs.push((**a).clone());
                        }
                        self.tail = self.tail.max(before);
                        self.from_start |= a.var.is_none() || before > 0;
                    }
                }
            }
            E::Df(_, args) => {
                for a in args {
                    self.visit(a, own, vars);
                }
            }
            E::Bin(_, a, b) | E::And(a, b) | E::Or(a, b) => {
                self.visit(a, own, vars);
                self.visit(b, own, vars);
            }
            E::Final(a) | E::Not(a) | E::Neg(a) | E::IsNull(a, _) | E::Cast(a, _) => {
                self.visit(a, own, vars)
            }
        }
    }

    /// A reference in the condition of variable `own` (of `vars` variables); with
    /// `classifier`, to the variable of the row rather than a column.
    fn reference(&mut self, r: RowRef, own: usize, classifier: bool, vars: usize) {
        fn at_least(list: &mut Vec<(usize, usize)>, var: usize, k: usize) {
            match list.iter_mut().find(|(v, _)| *v == var) {
                Some((_, had)) => *had = (*had).max(k),
                None => list.push((var, k)),
            }
        }
        match r.base {
            // The n-th row from the last of the match: row `n` counts the one being
            // classified (mapped to `own`), so the history's last `n` rows (and the
            // variable of the row PREV goes back to from there: `n + back`). A column of
            // the row is the same in every thread of an attempt, not in every attempt:
            // row `n` may be before a later attempt's first row.
            Base::Last { var: None, n } => {
                if classifier {
                    self.tail = self.tail.max(n + r.back);
                } else if n > 0 {
                    self.from_start = true;
                }
            }
            // Which row it is depends only on the number of rows, the same in every thread
            // of an attempt; PREV goes back to an earlier one of the first `n + 1` rows, or
            // out of the match.
            Base::First { var: None, n } => {
                self.from_start = true;
                if classifier {
                    self.head = self.head.max(n + 1);
                }
            }
            // The row being classified is the last of its own variable. Of a SUBSET's rows,
            // the last (first) k are among the last (first) k of each member: those tell
            // the threads apart.
            Base::Last { var: Some(sel), n } => {
                for v in sel.members() {
                    let k = if sel == Sel::One(own) { n } else { n + 1 };
                    if k > 0 {
                        at_least(&mut self.last, v, k);
                    }
                }
            }
            Base::First { var: Some(sel), n } => {
                for v in sel.members() {
                    at_least(&mut self.first, v, n + 1);
                }
            }
            // Only inside an aggregate's argument, which the aggregate accounts for.
            Base::Here => {}
        }
        // `PREV(CLASSIFIER(V))`: the variable of the row before a row of V, which may be any
        // row of the match.
        if classifier
            && r.back > 0
            && matches!(
                r.base,
                Base::Last { var: Some(_), .. } | Base::First { var: Some(_), .. }
            )
        {
            for v in 0..vars {
                if !self.all.contains(&v) {
                    self.all.push(v);
                }
            }
        }
    }
}
