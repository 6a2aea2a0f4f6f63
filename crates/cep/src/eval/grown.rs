//! An aggregate grown row by row as its match grows (issue 18: no aggregate is recomputed
//! over the whole match at every row). A match only grows, one row at a time, oldest first;
//! a [`Grown`] is the state of one aggregate after a beginning of a match, and the state after
//! one row more is that state with the row added: a DEFINE's running aggregate costs a row's
//! work per row (`matcher/grown_states.rs` keeps one per partial match), a measure's in ALL
//! ROWS PER MATCH too (`output.rs`). Where partial matches part, each keeps its own copy,
//! so that one that is dropped (a condition failed, or the row was refused) leaves the
//! others' state that of their own rows.
//!
//! Which aggregates grow ([`grows`]): every one but `max_by` / `min_by` and those with
//! `WITHIN GROUP (ORDER BY …)` (a later value may go between the ones so far), or whose
//! argument reads `MATCH_NUMBER()` (a partial match's number changes as matches before it are
//! reported); those are walked as before. A standard deviation or variance grows while its
//! values are integers (exactly, see [`super::exact_spread`]); a value of another kind makes
//! its state unknown ([`Grown::value`] is `None`: the rows are walked), so that the value is
//! the one the sorted values give, as documented.

use std::collections::HashSet;
use std::sync::Arc;

use super::super::expr::{Agg, AggFn, E};
use super::summary::{word, Kinds};
use super::{arg_at, Acc, View};
use crate::value::{Eval, EvalError, Value};

/// Whether aggregate `a` can grow row by row (see the module's notes).
pub(crate) fn grows(a: &Agg) -> bool {
    let mut reads_number = false;
    for part in a.parts() {
        part.walk(&mut |e| reads_number |= matches!(e, E::MatchNumber));
    }
    a.order.is_empty() && a.by.is_none() && !reads_number
}

/// The state of a growing aggregate after the rows added so far (oldest first).
#[derive(Debug, Clone)]
pub(crate) struct Grown {
    acc: Acc,
    /// `DISTINCT`: the values seen (as words), each counted at its first row.
    seen: Option<HashSet<Vec<u64>>>,
    /// The kinds of the values added (a summary needs them of one kind).
    kinds: Kinds,
    /// The argument (or `FILTER`) failed on a row added: the aggregate's value is this error,
    /// as a walk over the rows would have found it.
    failed: Option<EvalError>,
}

impl Grown {
    /// The state over no row.
    pub(crate) fn new(a: &Agg) -> Self {
        Grown {
            acc: Acc::growing(a),
            seen: a.distinct.then(HashSet::new),
            kinds: Kinds::default(),
            failed: None,
        }
    }

    /// Adds `row` (row, variable) of `view` if `a` aggregates its variable: its argument is
    /// evaluated at it.
    pub(crate) fn add(&mut self, a: &Agg, view: &impl View, vars: &[Arc<str>], row: (u64, usize)) {
        if self.failed.is_some() || !a.var.is_none_or(|w| w.has(row.1)) {
            return;
        }
        if let Err(e) = self.try_add(a, view, vars, row) {
            self.failed = Some(e);
        }
    }

    fn try_add(
        &mut self,
        a: &Agg,
        view: &impl View,
        vars: &[Arc<str>],
        row: (u64, usize),
    ) -> Result<(), EvalError> {
        if let Some(cond) = &a.filter {
            if !matches!(arg_at(cond, view, vars, row)?, Value::Bool(true)) {
                return Ok(());
            }
        }
        let Some(arg) = &a.arg else {
            // COUNT(*), COUNT(V.*): the row counts.
            self.acc.count += 1;
            return Ok(());
        };
        let v = arg_at(arg, view, vars, row)?;
        if let Some(seen) = &mut self.seen {
            let mut key = Vec::new();
            word(&v, &mut key);
            // A NULL passes (and is skipped below), but `array_agg`'s is listed once.
            let first = (v.is_null() && a.f != AggFn::ArrayAgg) || seen.insert(key);
            if !first {
                return Ok(());
            }
        }
        self.kinds.see(&v);
        self.acc.add(&v);
        Ok(())
    }

    /// The aggregate's value over the rows added; `None` where the state does not tell it (a
    /// standard deviation of values that are not all integers): walk the rows.
    pub(crate) fn value(&self) -> Option<Eval> {
        if let Some(e) = &self.failed {
            return Some(Err(e.clone()));
        }
        if self.acc.spread_lost() {
            return None;
        }
        Some(self.acc.finish())
    }

    /// Appends the summary of the rows added (`eval/summary.rs`) where the state is it (no
    /// FILTER or DISTINCT, values of one kind, an aggregate whose state decides its value
    /// whatever is added: not a float total); false otherwise (the caller walks the rows).
    pub(crate) fn summary(&self, a: &Agg, out: &mut Vec<u64>) -> bool {
        if self.failed.is_some() || a.filter.is_some() || a.distinct || self.kinds.mixed() {
            return false;
        }
        if a.arg.is_none() {
            out.extend([super::summary::STATE, self.acc.count as u64]);
            return true;
        }
        let start = out.len();
        out.push(super::summary::STATE);
        if self.acc.state(out) {
            return true;
        }
        out.truncate(start);
        false
    }
}
