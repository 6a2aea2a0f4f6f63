//! What the DEFINE conditions read of a partial match's history, worked out once per pattern.

use super::super::expr::{Agg, Base, RowRef, Sel, E};

/// What the DEFINE conditions read of a partial match's history (the rows before the one
/// being classified).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Needs {
    /// Variables all of whose rows a condition reads (an aggregate whose argument reads
    /// MATCH_NUMBER()).
    pub all: Vec<usize>,
    /// The variables of some of the rows of a variable or SUBSET, or of the rows before them
    /// (`CLASSIFIER(U)`, `PREV(CLASSIFIER(U))`, `FIRST(CLASSIFIER(U), 2)`).
    pub vars_of: Vec<VarsOf>,
    /// Aggregates a condition computes over rows of a partial match (of a variable, or of
    /// every row with an argument reading each row's CLASSIFIER()): partial matches are told
    /// apart by what the rows gave each so far (`eval/summary.rs`), not by the rows.
    pub aggs: Vec<Agg>,
    /// Cells of some of the rows of a variable or SUBSET, or of the rows before them
    /// (`A.x`, `LAST(A.x, 1)`, `FIRST(U.x)`, `PREV(A.x, 2)`).
    pub cells_of: Vec<CellsOf>,
    /// The variables of the last `tail` rows.
    pub tail: usize,
    /// The variables of the first `head` rows.
    pub head: usize,
    /// A condition reads something that depends on where the match started (an aggregate
    /// over every row of the match, `FIRST(x)`, `LAST(x, n)`): the same in every thread of
    /// an attempt, not in every attempt.
    pub from_start: bool,
}

/// A condition reads the variables of the last (`first`: first) `k` rows mapped to `sel`,
/// or, with `back`, of the rows `back` rows before each (none where that row is before the
/// match).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VarsOf {
    pub sel: Sel,
    pub k: usize,
    pub back: usize,
    pub first: bool,
}

/// A condition reads column `col` of the last (`first`: first) `k` rows mapped to `sel`, or
/// with `back`, of the rows `back` rows before each (NULL where that is before the
/// partition's first row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CellsOf {
    pub sel: Sel,
    pub k: usize,
    pub back: usize,
    pub col: usize,
    pub first: bool,
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
            && self.vars_of.is_empty()
            && self.cells_of.is_empty()
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
            E::Col(r, col) => self.reference(*r, own, Some(*col)),
            E::Classifier(r) => self.reference(*r, own, None),
            E::Agg(a) => {
                // The argument reads the aggregated rows (and PREV of them, the same in every
                // thread), the variable of each (`CLASSIFIER()`), and with `PREV(CLASSIFIER())`
                // the variable of a row before each, which may be any row's.
                let (mut classifier, mut before, mut number) = (false, 0, false);
                for x in a.parts() {
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

    /// A reference in the condition of variable `own` to column `col` of a row, or (`None`)
    /// to its variable.
    fn reference(&mut self, r: RowRef, own: usize, col: Option<usize>) {
        let classifier = col.is_none();
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
            // The n-th last row of a variable or SUBSET: the row being classified is the
            // last of its own variable, so the history's last `n` rows of it (of a SUBSET,
            // `n + 1`: the row may not be one of its). What the condition reads of those
            // rows (a column, of the row `back` rows before; the variable of the row or of
            // the one `back` before) tells the threads apart, not where the rows are. A
            // later row of U, `back` rows after one of the last rows, reads that one's
            // variable.
            Base::Last { var: Some(sel), n } => {
                let k = if sel == Sel::One(own) { n } else { n + 1 };
                match col {
                    Some(col) => self.cells_of(CellsOf {
                        sel,
                        k,
                        back: r.back,
                        col,
                        first: false,
                    }),
                    None => {
                        self.vars_of(sel, k, r.back, false);
                        self.tail = self.tail.max(r.back);
                    }
                }
            }
            Base::First { var: Some(sel), n } => match col {
                Some(col) => self.cells_of(CellsOf {
                    sel,
                    k: n + 1,
                    back: r.back,
                    col,
                    first: true,
                }),
                None => {
                    self.vars_of(sel, n + 1, r.back, true);
                    self.tail = self.tail.max(r.back);
                }
            },
            // Only inside an aggregate's argument, which the aggregate accounts for.
            Base::Here => {}
        }
    }

    /// Records that a condition reads a column of some rows of a variable.
    fn cells_of(&mut self, need: CellsOf) {
        if need.k == 0 {
            return;
        }
        match self.cells_of.iter_mut().find(|c| {
            c.sel == need.sel && c.back == need.back && c.col == need.col && c.first == need.first
        }) {
            Some(had) => had.k = had.k.max(need.k),
            None => self.cells_of.push(need),
        }
    }

    /// Records that a condition reads the variables of the last (`first`: first) `k` rows
    /// of `sel`, or of the rows `back` before them.
    fn vars_of(&mut self, sel: Sel, k: usize, back: usize, first: bool) {
        if k == 0 {
            return;
        }
        let need = VarsOf {
            sel,
            k,
            back,
            first,
        };
        match self
            .vars_of
            .iter_mut()
            .find(|r| r.sel == sel && r.back == back && r.first == first)
        {
            Some(had) => had.k = had.k.max(k),
            None => self.vars_of.push(need),
        }
    }
}
