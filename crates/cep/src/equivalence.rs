//! Pruning equivalent partial matches, so that no pattern makes the matcher exponential.
//!
//! Every thread of an attempt has consumed every row since the attempt's first: two threads
//! differ only in their instruction and in the variable each mapped every row to. When two
//! threads wait at the same instruction and every DEFINE condition reads the same values from
//! both histories, any row extends (or ends) both the same way forever after, so the less
//! preferred one can only find matches that the preferred one finds first: it goes, as in
//! Trino's matcher. Without this, `(A+)+ B` keeps a thread for each way of splitting a run of
//! A rows into iterations of the outer loop (2^n after n rows), and `(A | B)* C` over rows that
//! are both A and B one for each of their 2^n mappings.
//!
//! What the conditions read of a history ([`Needs`]) is worked out once per pattern from the
//! DEFINEs: the last (or first) `k` rows mapped to a variable (`A.x`, `LAST(A.x, k - 1)`,
//! `FIRST(A.x, k - 1)`), the variables of the last rows (`CLASSIFIER()` of an earlier row),
//! or, for an aggregate over a variable (`SUM(A.x)`), every row mapped to it (as Trino
//! compares the aggregated positions). Columns of the current row, `PREV`,
//! `MATCH_NUMBER()` and aggregates over all rows of the match are the same in every thread of
//! an attempt. Measures do not matter: they are computed on the match that wins, whose thread
//! is the one kept.
//!
//! Threads that mapped every row alike are found in constant time: the matcher builds each
//! step of a history once per (previous step, variable) in an attempt's row, so that equal
//! histories are the same allocation ([`Steps`]). Otherwise the two histories are walked, as
//! far back as the conditions read: only when a second thread arrives at an instruction,
//! which in a pattern whose variables exclude each other is rare.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ahash::RandomState;

use super::expr::{Base, RowRef, Sel, E};
use super::matcher::{Step, Thread, NO_ROW, TRACKED};

/// What the DEFINE conditions read of a partial match's history (the rows before the one
/// being classified).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Needs {
    /// Variables a condition aggregates over: all their rows.
    pub all: Vec<usize>,
    /// (variable, k): the last `k` rows mapped to the variable.
    pub last: Vec<(usize, usize)>,
    /// (variable, k): the first `k` rows mapped to the variable.
    pub first: Vec<(usize, usize)>,
    /// The variables of the last `tail` rows.
    pub tail: usize,
    /// The variables of the first `head` rows.
    pub head: usize,
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
            E::Col(r, _) => self.reference(*r, own, false),
            E::Classifier(r) => self.reference(*r, own, true),
            E::Agg(a) => match a.var {
                Some(sel) => {
                    for v in sel.members() {
                        all(v, self);
                    }
                }
                // The rows of the whole match are the same in every thread; their variables
                // are not, which an argument reading CLASSIFIER() sees.
                None => {
                    let mut classifier = false;
                    for x in a.arg.iter().chain(&a.by) {
                        x.walk(&mut |x| classifier |= matches!(x, E::Classifier(_)));
                    }
                    if classifier {
                        for v in 0..vars {
                            all(v, self);
                        }
                    }
                }
            },
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

    /// A reference in the condition of variable `own`; with `classifier`, to the variable of
    /// the row rather than a column (`PREV` moves the row, not the variable).
    fn reference(&mut self, r: RowRef, own: usize, classifier: bool) {
        fn at_least(list: &mut Vec<(usize, usize)>, var: usize, k: usize) {
            match list.iter_mut().find(|(v, _)| *v == var) {
                Some((_, had)) => *had = (*had).max(k),
                None => list.push((var, k)),
            }
        }
        match r.base {
            // The n-th row from the last of the match: row `n` counts the one being
            // classified (mapped to `own`), so the history's last `n` rows.
            Base::Last { var: None, n } => {
                if classifier {
                    self.tail = self.tail.max(n);
                }
            }
            // Which row it is depends only on the number of rows, the same in every thread.
            Base::First { var: None, n } => {
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
    }
}

/// What a history shows the conditions: equal signatures, equivalent threads. Row indices
/// and variable numbers, each list padded to its length (the lists of all rows of a variable
/// after their length).
fn signature(needs: &Needs, hist: Option<&Arc<Step>>) -> Box<[u64]> {
    const NONE: u64 = u64::MAX;
    // The last row of the first variables is in the newest step.
    let mut last: Vec<Vec<u64>> = needs
        .last
        .iter()
        .map(|(v, k)| match hist {
            Some(s) if *k == 1 && *v < TRACKED => vec![s.last[*v]]
                .into_iter()
                .filter(|r| *r != NO_ROW)
                .collect(),
            _ => Vec::with_capacity(*k),
        })
        .collect();
    // Walking from the newest step, the first rows are the last ones met: a window of them.
    let mut first: Vec<Vec<u64>> = needs
        .first
        .iter()
        .map(|(_, k)| Vec::with_capacity(*k))
        .collect();
    let mut tail = Vec::with_capacity(needs.tail);
    let mut head: Vec<u64> = Vec::with_capacity(needs.head);
    let mut all: Vec<Vec<u64>> = vec![Vec::new(); needs.all.len()];
    let to_the_start = !needs.first.is_empty() || needs.head > 0 || !needs.all.is_empty();
    let mut cur = hist;
    while let Some(s) = cur {
        let var = s.var() as u64;
        if tail.len() < needs.tail {
            tail.push(var);
        }
        for ((v, k), rows) in needs.last.iter().zip(&mut last) {
            if s.var() == *v && rows.len() < *k && !(*k == 1 && *v < TRACKED) {
                rows.push(s.row);
            }
        }
        for ((v, k), rows) in needs.first.iter().zip(&mut first) {
            if s.var() == *v {
                if rows.len() == *k {
                    rows.remove(0);
                }
                rows.push(s.row);
            }
        }
        for (v, rows) in needs.all.iter().zip(&mut all) {
            if s.var() == *v {
                rows.push(s.row);
            }
        }
        if needs.head > 0 {
            if head.len() == needs.head {
                head.remove(0);
            }
            head.push(var);
        }
        let done = !to_the_start
            && tail.len() == needs.tail
            && needs
                .last
                .iter()
                .zip(&last)
                .all(|((v, k), rows)| rows.len() == *k || (*k == 1 && *v < TRACKED));
        if done {
            break;
        }
        cur = s.prev.as_ref();
    }
    let mut out = Vec::new();
    let mut put = |values: &[u64], len: usize| {
        out.extend_from_slice(values);
        out.extend(std::iter::repeat_n(NONE, len - values.len()));
    };
    for ((_, k), rows) in needs.last.iter().zip(&last) {
        put(rows, *k);
    }
    for ((_, k), rows) in needs.first.iter().zip(&first) {
        put(rows, *k);
    }
    put(&tail, needs.tail);
    put(&head, needs.head);
    for rows in &all {
        out.push(rows.len() as u64);
        out.extend_from_slice(rows);
    }
    out.into()
}

fn address(hist: Option<&Arc<Step>>) -> usize {
    hist.map_or(0, |s| Arc::as_ptr(s) as usize)
}

/// Scratch space of one attempt's row: which instructions have a thread, and, once a second
/// one arrives at an instruction, the keys of the threads there.
#[derive(Debug, Default)]
pub(crate) struct Pruner {
    stamps: Vec<u32>,
    /// The index of the first thread at each instruction (valid where stamped).
    first: Vec<u32>,
    /// Stamped where the first thread's key is in `keys`.
    keyed: Vec<u32>,
    now: u32,
    keys: HashSet<(usize, Box<[u64]>), RandomState>,
}

impl Pruner {
    /// Starts a new list of threads for a program of `len` instructions.
    pub(crate) fn clear(&mut self, len: usize) {
        if self.stamps.len() != len || self.now == u32::MAX {
            self.stamps = vec![0; len];
            self.first = vec![0; len];
            self.keyed = vec![0; len];
            self.now = 0;
        }
        self.now += 1;
        self.keys.clear();
    }

    /// Whether a thread at `pc` with `hist` is kept in the list `out` (the threads before it,
    /// all preferred to it): not when one of them at `pc` is equivalent.
    #[inline]
    pub(crate) fn admit(
        &mut self,
        needs: &Needs,
        pc: usize,
        hist: Option<&Arc<Step>>,
        out: &[Thread],
    ) -> bool {
        if self.stamps[pc] != self.now {
            self.stamps[pc] = self.now;
            self.first[pc] = u32::try_from(out.len()).unwrap_or(u32::MAX);
            return true;
        }
        if needs.nothing() {
            return false;
        }
        let first = out
            .get(self.first[pc] as usize)
            .expect("the first thread at an instruction is in the list");
        let first_hist = first.hist.as_ref();
        if address(first_hist) == address(hist) {
            return false;
        }
        if self.keyed[pc] != self.now {
            self.keyed[pc] = self.now;
            self.keys.insert((pc, signature(needs, first_hist)));
        }
        self.keys.insert((pc, signature(needs, hist)))
    }
}

/// The steps made in one attempt's row, so that a (previous step, variable) pair gets one.
#[derive(Debug, Default)]
pub(crate) struct Steps {
    few: Vec<(usize, usize, Arc<Step>)>,
    many: HashMap<(usize, usize), Arc<Step>, RandomState>,
    /// Steps inside an exclusion, apart: their flag differs.
    marked: Vec<(usize, usize, Arc<Step>)>,
}

/// Beyond this many steps in a row, they are looked up by hash.
const FEW: usize = 16;

impl Steps {
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.few.clear();
        self.many.clear();
        self.marked.clear();
    }

    /// The step mapping row `row` to `var` after `prev`: the one made before in this row, or
    /// a new one.
    #[inline]
    pub(crate) fn after(
        &mut self,
        row: u64,
        var: usize,
        prev: Option<&Arc<Step>>,
        excluded: bool,
    ) -> Arc<Step> {
        let at = address(prev);
        if excluded {
            if let Some((_, _, s)) = self.marked.iter().find(|(a, v, _)| *a == at && *v == var) {
                return Arc::clone(s);
            }
            let s = Step::marked(row, var, prev.cloned(), true);
            self.marked.push((at, var, Arc::clone(&s)));
            return s;
        }
        if let Some((_, _, s)) = self.few.iter().find(|(a, v, _)| *a == at && *v == var) {
            return Arc::clone(s);
        }
        if let Some(s) = self.many.get(&(at, var)) {
            return Arc::clone(s);
        }
        let s = Step::after(row, var, prev.cloned());
        if self.few.len() < FEW {
            self.few.push((at, var, Arc::clone(&s)));
        } else {
            self.many.insert((at, var), Arc::clone(&s));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::super::expr::{compile_defines, Scope};
    use super::super::syntax;
    use super::*;
    use anduin_types::ColumnType;

    fn needs(pattern: &str, defines: &str) -> Needs {
        let parsed = syntax::parse(pattern).expect("parses");
        let columns: Vec<(String, ColumnType)> = vec![
            ("ts".into(), ColumnType::Timestamp),
            ("value".into(), ColumnType::Int),
        ];
        let scope = Scope::new(&columns, &parsed.vars);
        let mut out = vec![None; parsed.vars.len()];
        for (v, t, _) in compile_defines(defines, &scope).expect("compiles") {
            out[v] = Some(t.e);
        }
        Needs::of(&out)
    }

    #[test]
    fn the_current_row_prev_and_aggregates_over_the_whole_match_read_no_history() {
        let n = needs(
            "(A | B)* C",
            "A AS value > PREV(value, 2), B AS B.value < 5 AND MATCH_NUMBER() > 0, C AS SUM(value) > 3 AND COUNT(*) > 2",
        );
        assert!(n.nothing(), "{n:?}");
    }

    #[test]
    fn navigation_reads_the_rows_it_names_and_aggregates_over_a_variable_read_all() {
        let n = needs(
            "A B+ C",
            "B AS B.value < LAST(B.value, 1) AND value > A.value, C AS value > FIRST(B.value, 2)",
        );
        assert_eq!(
            n,
            Needs {
                all: vec![],
                last: vec![(1, 1), (0, 1)],
                first: vec![(1, 3)],
                tail: 0,
                head: 0,
            }
        );
        assert_eq!(needs("A+ B", "A AS AVG(A.value) < 10").all, [0]);
        let n = needs("A B", "B AS CLASSIFIER() = 'B'");
        assert!(n.nothing(), "the row being classified: {n:?}");
    }

    fn hist(vars: &[usize]) -> Option<Arc<Step>> {
        let mut h = None;
        for (row, v) in vars.iter().enumerate() {
            h = Some(Step::after(row as u64, *v, h));
        }
        h
    }

    #[test]
    fn signatures_show_only_what_is_needed() {
        let n = Needs {
            all: vec![],
            last: vec![(0, 2)],
            first: vec![(1, 1)],
            tail: 1,
            head: 0,
        };
        // The last two A rows are 3 and 1, the first B row is 0, the last row is A.
        let a = signature(&n, hist(&[1, 0, 1, 0]).as_ref());
        let b = signature(&n, hist(&[1, 0, 2, 0]).as_ref());
        assert_eq!(a, b);
        assert_eq!(&a[..], &[3, 1, 0, 0]);
        let c = signature(&n, hist(&[2, 0, 1, 0]).as_ref());
        assert_ne!(a, c, "the first B row differs");
        let d = signature(&n, hist(&[1, 2, 1, 0]).as_ref());
        assert_ne!(a, d, "only one A row");
        assert_eq!(d[1], u64::MAX);
        let n = Needs {
            all: vec![2],
            ..Needs::default()
        };
        assert_eq!(&signature(&n, hist(&[2, 0, 2, 1]).as_ref())[..], &[2, 2, 0]);
        assert_eq!(&signature(&n, hist(&[0, 1]).as_ref())[..], &[0]);
        // The last row of a variable, kept in the newest step.
        let n = Needs {
            last: vec![(1, 1), (5, 1)],
            ..Needs::default()
        };
        assert_eq!(
            &signature(&n, hist(&[1, 0, 0]).as_ref())[..],
            &[0, u64::MAX]
        );
        assert_eq!(
            &signature(&n, hist(&[0, 0, 5]).as_ref())[..],
            &[u64::MAX, 2]
        );
        assert_eq!(&signature(&n, None)[..], &[u64::MAX, u64::MAX]);
    }
}
