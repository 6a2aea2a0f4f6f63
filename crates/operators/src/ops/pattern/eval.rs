//! Evaluating compiled DEFINE conditions and MEASURES over a match in progress.

use std::sync::Arc;

use super::expr::{AggFn, Base, RowRef, E};
use super::value::Value;

/// A match in progress, as expressions see it.
pub(crate) trait View {
    /// The rows of the match, newest first: (row index in the partition, variable).
    fn steps(&self) -> impl Iterator<Item = (u64, usize)> + '_;
    /// A cell of a row of the partition, or `None` outside the rows kept.
    fn cell(&self, row: u64, col: usize) -> Option<&Value>;
    /// The number of this match in its partition (1 for the first).
    fn match_number(&self) -> i64;
    /// The last row mapped to `var` when the view knows it without walking the rows
    /// (`Some(None)`: no row is), else `None`.
    fn last_of(&self, _var: usize) -> Option<Option<u64>> {
        None
    }
}

/// The value of `e` for the match `view`; `vars` are the variable names (for CLASSIFIER).
pub(crate) fn eval(e: &E, view: &impl View, vars: &[Arc<str>]) -> Value {
    match e {
        E::Lit(v) => v.clone(),
        E::Col(r, col) => match resolve(*r, view) {
            Some((row, _)) => view.cell(row, *col).cloned().unwrap_or(Value::Null),
            None => Value::Null,
        },
        E::Classifier(r) => match resolve(*r, view) {
            Some((_, var)) => Value::Str(Arc::clone(&vars[var])),
            None => Value::Null,
        },
        E::MatchNumber => Value::Int(view.match_number()),
        E::Agg { f, var, col } => aggregate(*f, *var, *col, view),
        E::Bin(op, l, r) => eval(l, view, vars).binary(*op, &eval(r, view, vars)),
        E::And(l, r) => match eval(l, view, vars) {
            Value::Bool(false) => Value::Bool(false),
            a => match (a, eval(r, view, vars)) {
                (_, Value::Bool(false)) => Value::Bool(false),
                (Value::Bool(true), Value::Bool(true)) => Value::Bool(true),
                _ => Value::Null,
            },
        },
        E::Or(l, r) => match eval(l, view, vars) {
            Value::Bool(true) => Value::Bool(true),
            a => match (a, eval(r, view, vars)) {
                (_, Value::Bool(true)) => Value::Bool(true),
                (Value::Bool(false), Value::Bool(false)) => Value::Bool(false),
                _ => Value::Null,
            },
        },
        E::Not(x) => match eval(x, view, vars) {
            Value::Bool(b) => Value::Bool(!b),
            _ => Value::Null,
        },
        E::Neg(x) => match eval(x, view, vars) {
            Value::Int(i) => Value::Int(i.wrapping_neg()),
            Value::Float(f) => Value::Float(-f),
            _ => Value::Null,
        },
        E::IsNull(x, negated) => Value::Bool(eval(x, view, vars).is_null() != *negated),
        E::Cast(x, to) => cast(eval(x, view, vars), *to),
    }
}

/// The row (and its variable) a reference names.
fn resolve(r: RowRef, view: &impl View) -> Option<(u64, usize)> {
    let of = |v: Option<usize>, var: usize| v.is_none_or(|v| v == var);
    let known = match r.base {
        Base::Last { var: Some(v), n: 0 } => view.last_of(v).map(|row| row.map(|row| (row, v))),
        _ => None,
    };
    let (row, var) = match (known, r.base) {
        (Some(found), _) => found?,
        (None, base) => match base {
            Base::Last { var, n } => view.steps().filter(|(_, v)| of(var, *v)).nth(n)?,
            Base::First { var, n } => {
                let count = view.steps().filter(|(_, v)| of(var, *v)).count();
                let from_newest = count.checked_sub(n + 1)?;
                view.steps().filter(|(_, v)| of(var, *v)).nth(from_newest)?
            }
        },
    };
    Some((row.checked_sub(r.back as u64)?, var))
}

fn aggregate(f: AggFn, var: Option<usize>, col: Option<usize>, view: &impl View) -> Value {
    let rows = view
        .steps()
        .filter(|(_, v)| var.is_none_or(|w| w == *v))
        .map(|(row, _)| row);
    let Some(col) = col else {
        return Value::Int(rows.count() as i64);
    };
    let values = rows.filter_map(|row| view.cell(row, col).filter(|v| !v.is_null()));
    match f {
        AggFn::Count => Value::Int(values.count() as i64),
        AggFn::Sum => values.fold(Value::Null, |acc, v| match acc {
            Value::Null => v.clone(),
            acc => acc.binary(super::value::BinOp::Add, v),
        }),
        AggFn::Avg => {
            let (n, sum) = values.fold((0u64, 0.0), |(n, s), v| {
                (n + 1, s + v.as_f64().unwrap_or(0.0))
            });
            if n == 0 {
                Value::Null
            } else {
                Value::Float(sum / n as f64)
            }
        }
        AggFn::Min | AggFn::Max => {
            let best = values.fold(Value::Null, |acc, v| {
                let better = match acc.order(v) {
                    None => true,
                    Some(o) => {
                        (o == std::cmp::Ordering::Greater) == (f == AggFn::Min)
                            && o != std::cmp::Ordering::Equal
                    }
                };
                if better {
                    v.clone()
                } else {
                    acc
                }
            });
            // Every NaN is the same value: the result is the canonical one.
            match best {
                Value::Float(x) => Value::Float(anduin_expr::SqlFloat::canonical(x)),
                other => other,
            }
        }
    }
}

fn cast(v: Value, to: anduin_types::ColumnType) -> Value {
    use anduin_types::ColumnType as T;
    match (v, to) {
        (Value::Null, _) => Value::Null,
        (Value::Int(i), T::Int | T::Timestamp) => Value::Int(i),
        (Value::Int(i), T::Double) => Value::Float(i as f64),
        (Value::Float(f), T::Int | T::Timestamp) => {
            if f.is_finite() && f.abs() < 9.2e18 {
                Value::Int(f.trunc() as i64)
            } else {
                Value::Null
            }
        }
        (Value::Float(f), T::Double) => Value::Float(f),
        (Value::Bool(b), T::Int) => Value::Int(i64::from(b)),
        (Value::Bool(b), T::Bool) => Value::Bool(b),
        (Value::Int(i), T::Bool) => Value::Bool(i != 0),
        (Value::Str(s), T::String) => Value::Str(s),
        (Value::Str(s), T::Int) => s.trim().parse().map_or(Value::Null, Value::Int),
        (Value::Str(s), T::Double) => s.trim().parse().map_or(Value::Null, Value::Float),
        (Value::Str(s), T::Bool) => match s.trim().to_ascii_lowercase().as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::Null,
        },
        (v, T::String) => Value::Str(match v {
            Value::Int(i) => i.to_string().into(),
            Value::Float(f) => f.to_string().into(),
            Value::Bool(b) => b.to_string().into(),
            _ => return Value::Null,
        }),
        _ => Value::Null,
    }
}
