//! What an aggregate of a DEFINE condition has gathered from the rows of a partial match, as
//! words of a key: two partial matches whose rows give an aggregate the same summary give it
//! the same value at every later row, whatever rows come, so the pruner
//! (`equivalence`) compares summaries rather than the rows aggregated. `(A | B)* C` with
//! `C AS COUNT(A.*) > 3` has a partial match for each way of mapping a run of rows to A or
//! B (2^n), but only n + 1 counts.
//!
//! An aggregate is computed from the rows newest first ([`super::aggregate`]): the rows that
//! come later are added before the rows summarized here. The summary is therefore what
//! decides the result whatever is added first:
//!
//! - `COUNT`: the count;
//! - `SUM` of integers: whether there is a value, and the exact total (in 128 bits); `AVG`
//!   of integers: the count and the exact total;
//! - `MIN` / `MAX`: the extreme value, the newest of equal ones (a later row's equal value is
//!   met first and kept, a smaller one replaced by the extreme here);
//! - `BOOL_AND` / `BOOL_OR`: the result so far;
//! - `ANY_VALUE`: the oldest non-null value (the result, once there is one);
//! - `MAX_BY` / `MIN_BY`: the extreme key, the oldest of equal ones, and the value there;
//! - `STRING_AGG`: the strings joined, or NULL for none (later strings are joined after
//!   them with the same separator); with `WITHIN GROUP (ORDER BY …)` none (a later string
//!   may go between them: the rows tell, as with `FILTER` and `DISTINCT`);
//! - `APPROX_DISTINCT`: the distinct values (a later value counts if it is none of them);
//! - `SUM` and `AVG` of floats: every value, in order (a float total rounds after every
//!   addition, so two sets of rows with the same total can give another total once a later
//!   row's value is added before them).
//!
//! The values of one expression are of one kind (its type's) or NULL, so later values compare
//! with these as these compare among themselves; where the values summarized are of several
//! kinds all the same, the summary is every value in order (MIN / MAX) or there is none
//! (MAX_BY / MIN_BY: the caller tells partial matches apart by their rows).

use std::sync::Arc;

use super::super::expr::{Agg, AggFn};
use super::super::value::{EvalError, Value};
use super::{arg_at, chosen_by, Acc, View};

/// The summary is the state of the accumulator.
pub(super) const STATE: u64 = 1;
/// The summary is every value, newest first (after their number of words).
const VALUES: u64 = 2;

/// Appends to `out` the summary of aggregate `a` over the rows of `view` (the rows of a
/// partial match, the newest first). `Ok(false)`: no summary (the rows tell); `Err`: the
/// argument fails on a row (the rows tell too).
pub(crate) fn summarize(
    a: &Agg,
    view: &impl View,
    vars: &[Arc<str>],
    out: &mut Vec<u64>,
) -> Result<bool, EvalError> {
    // The rows a FILTER keeps, DISTINCT values, or values in the order of keys (a later
    // value goes between them): the rows tell.
    // `array_agg` (a measure's, never a DEFINE's): the rows tell too.
    if a.filter.is_some() || a.distinct || !a.order.is_empty() || a.f == AggFn::ArrayAgg {
        return Ok(false);
    }
    // The state grown with the partial match, where it is the summary: no walk.
    if view.grown(a).is_some_and(|g| g.summary(a, out)) {
        return Ok(true);
    }
    let rows = || {
        view.steps()
            .filter(|(_, v)| a.var.is_none_or(|w| w.has(*v)))
    };
    let Some(arg) = &a.arg else {
        out.extend([STATE, rows().count() as u64]);
        return Ok(true);
    };
    if let Some(by) = &a.by {
        let mut kinds = Kinds::default();
        for row in rows() {
            kinds.see(&arg_at(by, view, vars, row)?);
        }
        if kinds.mixed {
            return Ok(false);
        }
        out.push(STATE);
        match chosen_by(a, by, view, vars)? {
            Some((key, row)) => {
                out.push(1);
                word(&key, out);
                word(&arg_at(arg, view, vars, row)?, out);
            }
            None => out.push(0),
        }
        return Ok(true);
    }
    let mut acc = Acc::new(a);
    let mut kinds = Kinds::default();
    // The aggregates whose state is not always the summary: their values are kept.
    let keep = matches!(
        a.f,
        AggFn::Sum | AggFn::Avg | AggFn::Min | AggFn::Max | AggFn::Spread(_)
    );
    let mut values = Vec::new();
    for row in rows() {
        let v = arg_at(arg, view, vars, row)?;
        if v.is_null() {
            // Skipped by every aggregate.
            continue;
        }
        kinds.see(&v);
        if keep {
            word(&v, &mut values);
        }
        acc.add(&v);
    }
    let start = out.len();
    out.push(STATE);
    if !(keep && kinds.mixed) && acc.state(out) {
        return Ok(true);
    }
    out.truncate(start);
    out.extend([VALUES, values.len() as u64]);
    out.extend(values);
    Ok(true)
}

impl Acc {
    /// Appends the state that decides the result whatever values are added before the ones
    /// added so far (see the module's notes); false where only the values themselves do (a
    /// float total).
    pub(super) fn state(&self, out: &mut Vec<u64>) -> bool {
        match self.f {
            AggFn::Count => out.push(self.count as u64),
            // A SUM is NULL without values, else the total, whatever their number.
            AggFn::Sum if !self.floats => out.extend([
                u64::from(self.count > 0),
                self.int_total as u64,
                (self.int_total >> 64) as u64,
            ]),
            AggFn::Avg if !self.floats => out.extend([
                self.count as u64,
                self.int_total as u64,
                (self.int_total >> 64) as u64,
            ]),
            // (`array_agg` is a measure, never in a DEFINE: its values are the summary.)
            AggFn::Sum
            | AggFn::Avg
            | AggFn::MaxBy
            | AggFn::MinBy
            | AggFn::Spread(_)
            | AggFn::ArrayAgg => return false,
            AggFn::CountIf => out.push(self.int_total as u64),
            AggFn::StringAgg => word(&self.joined(), out),
            AggFn::ApproxDistinct => {
                out.push(self.distinct.len() as u64);
                for key in &self.distinct {
                    out.extend(key);
                }
            }
            AggFn::Min | AggFn::Max | AggFn::AnyValue => word(&self.best, out),
            AggFn::BoolAnd | AggFn::BoolOr => out.push(match self.logic {
                None => 0,
                Some(false) => 1,
                Some(true) => 2,
            }),
        }
        true
    }
}

/// Which kinds of non-null values were seen.
#[derive(Debug, Clone, Default)]
pub(super) struct Kinds {
    first: Option<std::mem::Discriminant<Value>>,
    mixed: bool,
}

impl Kinds {
    pub(super) fn mixed(&self) -> bool {
        self.mixed
    }

    pub(super) fn see(&mut self, v: &Value) {
        if v.is_null() {
            return;
        }
        let d = std::mem::discriminant(v);
        match self.first {
            None => self.first = Some(d),
            Some(f) => self.mixed |= f != d,
        }
    }
}

/// Appends `v` exactly (a float by its bits, a string whole), so that equal words are equal
/// values of one kind; each value's words are self-delimiting.
pub(crate) fn word(v: &Value, out: &mut Vec<u64>) {
    match v {
        Value::Null => out.push(0),
        Value::Bool(b) => out.extend([1, u64::from(*b)]),
        Value::Int(i) => out.extend([2, *i as u64]),
        Value::Float(f) => out.extend([3, f.to_bits()]),
        Value::Str(s) => {
            out.extend([4, s.len() as u64]);
            for chunk in s.as_bytes().chunks(8) {
                let mut w = [0u8; 8];
                for (d, b) in w.iter_mut().zip(chunk) {
                    *d = *b;
                }
                out.push(u64::from_le_bytes(w));
            }
        }
        Value::List(values) => {
            out.extend([5, values.len() as u64]);
            for v in values.iter() {
                word(v, out);
            }
        }
    }
}

#[cfg(test)]
mod tests;
