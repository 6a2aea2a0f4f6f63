//! Evaluating compiled DEFINE conditions and MEASURES over a match in progress.

use std::sync::Arc;

use super::expr::{Agg, AggFn, Base, RowRef, Sel, Spread, E};
use super::matcher::MatchView;
use super::order;
use super::value::{Eval, EvalError, Value};

mod grown;
mod summary;

pub(crate) use grown::{grows, Grown};
pub(crate) use summary::{summarize, word as value_words};

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
    /// The whole match, for `FINAL` (a finished match output row by row); `None` where the
    /// view is all there is.
    fn whole(&self) -> Option<MatchView<'_>> {
        None
    }
    /// The state of aggregate `a` over the rows of the view, grown row by row as the match
    /// grew (see `eval/grown.rs`), where the view keeps one: its value and summary need no
    /// walk over the rows.
    fn grown(&self, _a: &Agg) -> Option<&Grown> {
        None
    }
    /// The value of aggregate `a` over the view's rows where the view knows it without a
    /// walk (a [`View::grown`] state, or a `FINAL` one computed once per match); `None`:
    /// walk the rows.
    fn known(&self, a: &Agg) -> Option<Eval> {
        self.grown(a).and_then(Grown::value)
    }
}

/// The value of `e` for the match `view`; `vars` are the variable names (for CLASSIFIER). An
/// operation without a value on its operands (integer division by zero, integer overflow, a
/// CAST that does not fit) is an error, as in a `map` (see [`super::value`]).
pub(crate) fn eval(e: &E, view: &impl View, vars: &[Arc<str>]) -> Eval {
    eval_in(
        e,
        &Ctx {
            view,
            vars,
            here: None,
        },
    )
}

/// What an expression is evaluated in, passed down by reference: DEFINE conditions are
/// evaluated per thread and row, and a recursion with one pointer to this costs less than
/// one with its fields (cep_q3 spent 4% more instructions in evaluation with them).
struct Ctx<'a, V> {
    view: &'a V,
    /// The variable names (for CLASSIFIER).
    vars: &'a [Arc<str>],
    /// Inside an aggregate's argument: the row it is evaluated at (row, variable).
    here: Option<(u64, usize)>,
}

/// [`eval`] in `c`.
fn eval_in<V: View>(e: &E, c: &Ctx<'_, V>) -> Eval {
    let (view, vars) = (c.view, c.vars);
    Ok(match e {
        E::Lit(v) => v.clone(),
        E::Col(r, col) => match resolve(r, c) {
            Some((row, _)) => view.cell(row, *col).cloned().unwrap_or(Value::Null),
            None => Value::Null,
        },
        E::Classifier(r) => match resolve(r, c) {
            Some((_, var)) if r.back == 0 => Value::Str(Arc::clone(&vars[var])),
            // `PREV(CLASSIFIER(), n)`: the variable of the row `n` rows before, if that row
            // is in the match (as in Trino); a row before the match has none.
            Some((row, _)) => match view.steps().find(|(s, _)| *s == row) {
                Some((_, var)) => Value::Str(Arc::clone(&vars[var])),
                None => Value::Null,
            },
            None => Value::Null,
        },
        E::MatchNumber => Value::Int(view.match_number()),
        E::Next { r, col, n } => {
            let whole = view.whole();
            let target = resolve(r, c).and_then(|(row, _)| row.checked_add(*n as u64));
            let found = match (&whole, target) {
                (Some(w), Some(t)) => w.all.iter().find(|(row, _)| *row == t).copied(),
                _ => None,
            };
            match (found, col) {
                (None, _) => Value::Null,
                (Some((row, _)), Some(c)) => view.cell(row, *c).cloned().unwrap_or(Value::Null),
                (Some((_, var)), None) => Value::Str(Arc::clone(&vars[var])),
            }
        }
        E::Agg(a) => aggregate(a, view, vars)?,
        E::Final(x) => match view.whole() {
            Some(whole) => eval_in(
                x,
                &Ctx {
                    view: &whole,
                    vars,
                    here: c.here,
                },
            )?,
            None => eval_in(x, c)?,
        },
        E::Df(df, args) => {
            let values = args
                .iter()
                .map(|a| eval_in(a, c))
                .collect::<Result<Vec<_>, _>>()?;
            df.eval(&values)?
        }
        E::Bin(op, l, r) => eval_in(l, c)?.binary(*op, &eval_in(r, c)?)?,
        E::And(l, r) => match eval_in(l, c)? {
            Value::Bool(false) => Value::Bool(false),
            a => match (a, eval_in(r, c)?) {
                (_, Value::Bool(false)) => Value::Bool(false),
                (Value::Bool(true), Value::Bool(true)) => Value::Bool(true),
                _ => Value::Null,
            },
        },
        E::Or(l, r) => match eval_in(l, c)? {
            Value::Bool(true) => Value::Bool(true),
            a => match (a, eval_in(r, c)?) {
                (_, Value::Bool(true)) => Value::Bool(true),
                (Value::Bool(false), Value::Bool(false)) => Value::Bool(false),
                _ => Value::Null,
            },
        },
        E::Not(x) => match eval_in(x, c)? {
            Value::Bool(b) => Value::Bool(!b),
            _ => Value::Null,
        },
        // As the `map` computes `-x` of an integer: `0 - x`, which fails for the smallest.
        E::Neg(x) => match eval_in(x, c)? {
            Value::Int(i) => Value::Int(
                0i64.checked_sub(i)
                    .ok_or_else(|| EvalError::overflow(0, "-", i))?,
            ),
            Value::Float(f) => Value::Float(-f),
            _ => Value::Null,
        },
        E::IsNull(x, negated) => Value::Bool(eval_in(x, c)?.is_null() != *negated),
        E::Cast(x, to) => cast(eval_in(x, c)?, *to)?,
    })
}

/// The row (and its variable) a reference names in `c`.
fn resolve<V: View>(r: &RowRef, c: &Ctx<'_, V>) -> Option<(u64, usize)> {
    let view = c.view;
    let of = |v: Option<Sel>, var: usize| v.is_none_or(|v| v.has(var));
    let known = match r.base {
        Base::Last {
            var: Some(Sel::One(v)),
            n: 0,
        } => view.last_of(v).map(|row| row.map(|row| (row, v))),
        _ => None,
    };
    let (row, var) = match (known, r.base) {
        (Some(found), _) => found?,
        (None, base) => match base {
            Base::Here => c.here?,
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

/// A running aggregate over the rows of the match so far (walked newest first, without
/// allocating); a `SUM` of integers that overflows is an error.
fn aggregate(a: &Agg, view: &impl View, vars: &[Arc<str>]) -> Eval {
    if let Some(known) = view.known(a) {
        return known;
    }
    walked_aggregate(a, view, vars)
}

#[cfg(test)]
thread_local! {
    /// Rows the aggregates walked over on this thread (tests assert on the work done).
    static WALKED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Rows the aggregates have walked over on this thread (tests).
#[cfg(test)]
pub(crate) fn rows_walked() -> u64 {
    WALKED.with(std::cell::Cell::get)
}

/// Counts the rows of `view` a walk goes over (tests).
fn walking(view: &impl View) {
    #[cfg(test)]
    WALKED.with(|w| w.set(w.get() + view.steps().count() as u64));
    #[cfg(not(test))]
    let _ = view;
}

/// [`aggregate`] by a walk over the rows of `view`.
pub(crate) fn walked_aggregate(a: &Agg, view: &impl View, vars: &[Arc<str>]) -> Eval {
    walking(view);
    if a.filter.is_some() || a.distinct || !a.order.is_empty() {
        return modified_aggregate(a, view, vars);
    }
    let rows = view
        .steps()
        .filter(|(_, v)| a.var.is_none_or(|w| w.has(*v)));
    let Some(arg) = &a.arg else {
        return Ok(Value::Int(rows.count() as i64));
    };
    if let Some(by) = &a.by {
        return match chosen_by(a, by, view, vars)? {
            Some((_, row)) => arg_at(arg, view, vars, row),
            None => Ok(Value::Null),
        };
    }
    let mut acc = Acc::new(a);
    match here_column(arg) {
        // The common `AVG(A.price)`: the cells are read where they are, not copied.
        Some(col) => {
            for (row, _) in rows {
                if let Some(v) = view.cell(row, col) {
                    acc.add(v);
                }
            }
        }
        None => {
            for row in rows {
                acc.add(&arg_at(arg, view, vars, row)?);
            }
        }
    }
    acc.finish()
}

/// An aggregate with `FILTER (WHERE …)` (only the rows where the condition is true),
/// `DISTINCT` (each non-null value once, at its first row in the match — `string_agg`'s
/// order —, told apart as the summaries tell values apart; `array_agg` lists one NULL too)
/// or `WITHIN GROUP (ORDER BY …)`
/// (the values kept, in the order of their keys, then of their rows in the match).
fn modified_aggregate(a: &Agg, view: &impl View, vars: &[Arc<str>]) -> Eval {
    let mut acc = Acc::new(a);
    let mut count = 0i64;
    // The values kept, newest first, and their keys.
    let mut values = Vec::new();
    let mut keys: Vec<Vec<Value>> = Vec::new();
    for row in view
        .steps()
        .filter(|(_, v)| a.var.is_none_or(|w| w.has(*v)))
    {
        if let Some(cond) = &a.filter {
            if !matches!(arg_at(cond, view, vars, row)?, Value::Bool(true)) {
                continue;
            }
        }
        let Some(arg) = &a.arg else {
            count += 1;
            continue;
        };
        values.push(arg_at(arg, view, vars, row)?);
        if !a.order.is_empty() {
            keys.push(
                a.order
                    .iter()
                    .map(|k| arg_at(&k.e, view, vars, row))
                    .collect::<Result<_, _>>()?,
            );
        }
    }
    if a.arg.is_none() {
        return Ok(Value::Int(count));
    }
    // Oldest first from here on.
    let mut kept: Vec<(Value, Vec<Value>)> = values
        .into_iter()
        .rev()
        .zip(
            keys.into_iter()
                .rev()
                .chain(std::iter::repeat_with(Vec::new)),
        )
        .collect();
    if a.distinct {
        // The row a value is kept at is its first.
        let mut seen: std::collections::HashSet<Vec<u64>> = std::collections::HashSet::new();
        kept.retain(|(v, _)| {
            let mut key = Vec::new();
            summary::word(v, &mut key);
            (v.is_null() && a.f != AggFn::ArrayAgg) || seen.insert(key)
        });
    }
    if !a.order.is_empty() {
        let ties: Vec<order::Tie> = (a.order.iter().enumerate())
            .map(|(col, k)| order::Tie {
                col,
                desc: k.desc,
                nulls_first: k.nulls_first,
            })
            .collect();
        // A stable sort: values of equal keys keep their order in the match.
        kept.sort_by(|(_, x), (_, y)| order::tie_order(&ties, x, y));
    }
    for (v, _) in kept.iter().rev() {
        acc.add(v);
    }
    acc.finish()
}

/// An aggregate's argument (or `max_by`'s key) `e` at `row` (row, variable) of `view`: a
/// column of the row is read in place.
fn arg_at<V: View>(e: &E, view: &V, vars: &[Arc<str>], row: (u64, usize)) -> Eval {
    match here_column(e) {
        Some(col) => Ok(view.cell(row.0, col).cloned().unwrap_or(Value::Null)),
        None => eval_in(
            e,
            &Ctx {
                view,
                vars,
                here: Some(row),
            },
        ),
    }
}

/// The key max_by / min_by chose and its row (row, variable).
type Chosen = Option<(Value, (u64, usize))>;

/// max_by / min_by of `a` with key `by`: the key and the row whose value is taken, the first
/// row whose key is the largest / smallest (walking newest first, an equal key moves the
/// choice to the older row); `None` where every key is NULL.
fn chosen_by<V: View>(a: &Agg, by: &E, view: &V, vars: &[Arc<str>]) -> Result<Chosen, EvalError> {
    use std::cmp::Ordering;
    let want = if a.f == AggFn::MaxBy {
        Ordering::Greater
    } else {
        Ordering::Less
    };
    let mut best: Option<(Value, (u64, usize))> = None;
    for row in view
        .steps()
        .filter(|(_, v)| a.var.is_none_or(|w| w.has(*v)))
    {
        let key = arg_at(by, view, vars, row)?;
        if key.is_null() {
            continue;
        }
        let better = match &best {
            None => true,
            Some((k, _)) => key
                .order(k)
                .is_some_and(|o| o == want || o == Ordering::Equal),
        };
        if better {
            best = Some((key, row));
        }
    }
    Ok(best)
}

/// The column `e` reads if it is a column of the row an aggregate's argument is at.
fn here_column(e: &E) -> Option<usize> {
    match e {
        E::Col(
            RowRef {
                base: Base::Here,
                back: 0,
            },
            col,
        ) => Some(*col),
        _ => None,
    }
}

/// The running state of an aggregate other than `max_by` / `min_by`, fed the rows newest
/// first (a walk back over a match) or oldest first ([`Acc::growing`]: a match as it grows,
/// `grown.rs`); either gives the same value.
#[derive(Debug, Clone)]
struct Acc {
    f: AggFn,
    /// Fed oldest first.
    oldest_first: bool,
    /// The non-null values added.
    count: i64,
    /// SUM (and AVG) of integers in 128 bits: it fails only when its total does not fit in
    /// an `int`, whatever the order of the rows (a running sum of 64 bits could overflow
    /// midway in one order and not in another), and the total is exact, so that two sets of
    /// rows with the same count and total give every later row the same value
    /// (`summary.rs`).
    int_total: i128,
    float_total: f64,
    floats: bool,
    /// MIN / MAX so far; `any_value`: the oldest value added.
    best: Value,
    logic: Option<bool>,
    /// A standard deviation's or variance's values, as numbers (not kept oldest first, see
    /// [`Acc::spread_lost`]).
    numbers: Vec<f64>,
    /// A standard deviation's or variance's integers: their squares, added exactly (their
    /// total is `int_total`); `None` once a value is not an integer or the squares overflow
    /// 128 bits (then the values in `numbers` decide).
    squares: Option<i128>,
    /// `string_agg`: the strings added (in the order fed) and the separator.
    strings: Vec<Arc<str>>,
    sep: Option<Arc<str>>,
    /// `approx_distinct`: the values, as words ([`summary::word`]; a NaN canonical).
    distinct: std::collections::BTreeSet<Vec<u64>>,
    /// `array_agg`: the values added (in the order fed), NULLs too.
    values: Vec<Value>,
}

impl Acc {
    #[inline]
    fn new(a: &Agg) -> Self {
        Acc {
            f: a.f,
            oldest_first: false,
            count: 0,
            int_total: 0,
            float_total: 0.0,
            floats: false,
            best: Value::Null,
            logic: None,
            numbers: Vec::new(),
            squares: Some(0),
            strings: Vec::new(),
            sep: a.sep.as_ref().map(Arc::clone),
            distinct: std::collections::BTreeSet::new(),
            values: Vec::new(),
        }
    }

    /// An accumulator fed oldest first.
    fn growing(a: &Agg) -> Self {
        Acc {
            oldest_first: true,
            ..Acc::new(a)
        }
    }

    /// Whether a standard deviation or variance fed oldest first met a value that is not an
    /// integer (or integers whose squares overflow): it keeps no values, so its value is
    /// unknown and the rows are walked (the values sorted decide, whatever their order).
    fn spread_lost(&self) -> bool {
        self.oldest_first && matches!(self.f, AggFn::Spread(_)) && self.squares.is_none()
    }

    /// Adds a value (a NULL is skipped, as SQL's aggregates skip it, except by `array_agg`,
    /// which lists it).
    #[inline]
    fn add(&mut self, v: &Value) {
        use std::cmp::Ordering;
        if self.f == AggFn::ArrayAgg {
            self.values.push(v.clone());
            return;
        }
        if v.is_null() {
            return;
        }
        self.count += 1;
        match self.f {
            // Integers are added exactly (AVG too), so that the total does not depend on
            // the order of the rows (a float total rounds after every addition).
            AggFn::Sum | AggFn::Avg => match v {
                Value::Int(i) if !self.floats => self.int_total += i128::from(*i),
                other => {
                    self.floats = true;
                    self.float_total += other.as_f64().unwrap_or(0.0);
                }
            },
            AggFn::Min | AggFn::Max => {
                // Of equal values the newest is kept (as the summary has it).
                let better = match self.best.order(v) {
                    None => true,
                    Some(Ordering::Equal) => self.oldest_first,
                    Some(o) => (o == Ordering::Greater) == (self.f == AggFn::Min),
                };
                if better {
                    self.best = v.clone();
                }
            }
            AggFn::BoolAnd | AggFn::BoolOr => {
                if let Value::Bool(b) = v {
                    self.logic = Some(if self.f == AggFn::BoolAnd {
                        self.logic.unwrap_or(true) && *b
                    } else {
                        self.logic.unwrap_or(false) || *b
                    });
                }
            }
            // The oldest non-null value: the last one added walking newest first, the first
            // growing.
            AggFn::AnyValue => {
                if !self.oldest_first || self.best.is_null() {
                    self.best = v.clone();
                }
            }
            // The trues, in `int_total`.
            AggFn::CountIf => self.int_total += i128::from(matches!(v, Value::Bool(true))),
            AggFn::Spread(_) => {
                self.squares = match (v, self.squares) {
                    (Value::Int(i), Some(q)) => {
                        self.int_total += i128::from(*i);
                        q.checked_add(i128::from(*i) * i128::from(*i))
                    }
                    _ => None,
                };
                if !self.oldest_first {
                    self.numbers.push(v.as_f64().unwrap_or(f64::NAN));
                }
            }
            AggFn::StringAgg => {
                if let Value::Str(s) = v {
                    self.strings.push(Arc::clone(s));
                }
            }
            AggFn::ApproxDistinct => {
                let mut key = Vec::new();
                match v {
                    Value::Float(x) => summary::word(
                        &Value::Float(anduin_expr::SqlFloat::canonical(*x)),
                        &mut key,
                    ),
                    other => summary::word(other, &mut key),
                }
                self.distinct.insert(key);
            }
            AggFn::Count | AggFn::MaxBy | AggFn::MinBy | AggFn::ArrayAgg => {}
        }
    }

    #[inline]
    fn finish(&self) -> Eval {
        Ok(match self.f {
            AggFn::Count => Value::Int(self.count),
            AggFn::Sum if self.count == 0 => Value::Null,
            AggFn::Sum if !self.floats => {
                Value::Int(i64::try_from(self.int_total).map_err(|_| {
                    EvalError::row(
                        format!(
                            "Arithmetic overflow: the SUM is {}, beyond the range of Int64",
                            self.int_total
                        )
                        .into(),
                    )
                })?)
            }
            AggFn::Sum => Value::Float(self.float_total + self.int_total as f64),
            AggFn::Avg if self.count == 0 => Value::Null,
            AggFn::Avg => {
                Value::Float((self.float_total + self.int_total as f64) / self.count as f64)
            }
            // Every NaN is the same value: the result is the canonical one.
            AggFn::Min | AggFn::Max => match &self.best {
                Value::Float(x) => Value::Float(anduin_expr::SqlFloat::canonical(*x)),
                other => other.clone(),
            },
            AggFn::BoolAnd | AggFn::BoolOr => self.logic.map_or(Value::Null, Value::Bool),
            AggFn::AnyValue => self.best.clone(),
            AggFn::CountIf => Value::Int(i64::try_from(self.int_total).unwrap_or(i64::MAX)),
            AggFn::Spread(s) => match exact_spread(s, self.count, self.int_total, self.squares) {
                Some(v) => v,
                None => spread(s, &self.numbers),
            },
            AggFn::StringAgg => self.joined(),
            AggFn::ApproxDistinct => {
                Value::Int(i64::try_from(self.distinct.len()).unwrap_or(i64::MAX))
            }
            AggFn::MaxBy | AggFn::MinBy => Value::Null,
            // In the order of their rows in the match.
            AggFn::ArrayAgg if self.values.is_empty() => Value::Null,
            AggFn::ArrayAgg if self.oldest_first => Value::List(self.values.clone().into()),
            AggFn::ArrayAgg => Value::List(self.values.iter().rev().cloned().collect()),
        })
    }

    /// `string_agg`'s strings joined with its separator, in the order of their rows in the
    /// match (they were added newest first); NULL for none.
    fn joined(&self) -> Value {
        if self.strings.is_empty() {
            return Value::Null;
        }
        let sep = self.sep.as_deref().unwrap_or("");
        let mut joined = String::new();
        let mut push = |i: usize, s: &str| {
            if i > 0 {
                joined.push_str(sep);
            }
            joined.push_str(s);
        };
        if self.oldest_first {
            self.strings
                .iter()
                .enumerate()
                .for_each(|(i, s)| push(i, s));
        } else {
            (self.strings.iter().rev().enumerate()).for_each(|(i, s)| push(i, s));
        }
        Value::Str(joined.into())
    }
}

/// The standard deviation or variance `s` of `n` integers whose total is `total` and whose
/// squares add up to `squares`, computed exactly (n·Σx² − (Σx)² in 128 bits, then one
/// division): whatever the order of the rows, as [`spread`]. `None` where the squares are
/// unknown (a value is not an integer) or the numerator overflows.
fn exact_spread(s: Spread, n: i64, total: i128, squares: Option<i128>) -> Option<Value> {
    let sample = matches!(s, Spread::StddevSample | Spread::VarianceSample);
    if n == 0 || (sample && n < 2) {
        return Some(Value::Null);
    }
    let n128 = i128::from(n);
    let numerator = n128
        .checked_mul(squares?)?
        .checked_sub(total.checked_mul(total)?)?;
    let divisor = n128.checked_mul(if sample { n128 - 1 } else { n128 })?;
    let variance = numerator as f64 / divisor as f64;
    Some(Value::Float(match s {
        Spread::StddevSample | Spread::StddevPopulation => variance.sqrt(),
        Spread::VarianceSample | Spread::VariancePopulation => variance,
    }))
}

/// The standard deviation or variance `s` of `values`: the mean first, then the squared
/// distances from it (two passes, as exact as one pass is not), added in ascending order so
/// that the result does not depend on the order of the rows. NULL for fewer values than the
/// measure needs (two for a sample's, one for a population's).
fn spread(s: Spread, values: &[f64]) -> Value {
    let sample = matches!(s, Spread::StddevSample | Spread::VarianceSample);
    let n = values.len();
    if n == 0 || (sample && n < 2) {
        return Value::Null;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mean = sorted.iter().sum::<f64>() / n as f64;
    let mut squares: Vec<f64> = sorted.iter().map(|x| (x - mean) * (x - mean)).collect();
    squares.sort_by(f64::total_cmp);
    let divisor = if sample { n - 1 } else { n } as f64;
    let variance = squares.iter().sum::<f64>() / divisor;
    Value::Float(match s {
        Spread::StddevSample | Spread::StddevPopulation => variance.sqrt(),
        Spread::VarianceSample | Spread::VariancePopulation => variance,
    })
}

/// `CAST(v AS to)`, as DataFusion casts (arrow's cast, not "safe"): a float that is not finite
/// or out of range of an `int`, or a string that does not parse, is an error with arrow's
/// message.
fn cast(v: Value, to: anduin_types::ColumnType) -> Eval {
    use anduin_types::ColumnType as T;
    let cannot_parse = |s: &str, ty: &str| {
        EvalError::row(format!("Cast error: Cannot cast string '{s}' to value of {ty} type").into())
    };
    Ok(match (v, to) {
        (Value::Null, _) => Value::Null,
        (Value::Int(i), T::Int | T::Timestamp) => Value::Int(i),
        (Value::Int(i), T::Double) => Value::Float(i as f64),
        (Value::Float(f), T::Int | T::Timestamp) => {
            // The range arrow (num-traits) accepts: [-2^63, 2^63), truncated toward zero.
            if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
                Value::Int(f.trunc() as i64)
            } else {
                let ty = if to == T::Int {
                    "Int64"
                } else {
                    "Timestamp(ms)"
                };
                return Err(EvalError::row(
                    format!("Cast error: Can't cast value {f:?} to type {ty}").into(),
                ));
            }
        }
        (Value::Float(f), T::Double) => Value::Float(f),
        (Value::Bool(b), T::Int) => Value::Int(i64::from(b)),
        (Value::Bool(b), T::Bool) => Value::Bool(b),
        (Value::Int(i), T::Bool) => Value::Bool(i != 0),
        (Value::Str(s), T::String) => Value::Str(s),
        (Value::Str(s), T::Int) => Value::Int(
            s.trim_ascii()
                .parse()
                .map_err(|_| cannot_parse(&s, "Int64"))?,
        ),
        (Value::Str(s), T::Double) => Value::Float(
            s.trim_ascii()
                .parse()
                .map_err(|_| cannot_parse(&s, "Float64"))?,
        ),
        (Value::Str(s), T::Bool) => match s.trim().to_ascii_lowercase().as_str() {
            "t" | "tr" | "tru" | "true" | "y" | "ye" | "yes" | "on" | "1" => Value::Bool(true),
            "f" | "fa" | "fal" | "fals" | "false" | "n" | "no" | "of" | "off" | "0" => {
                Value::Bool(false)
            }
            other => {
                return Err(EvalError::row(
                    format!("Cast error: Cannot cast value '{other}' to value of Boolean type")
                        .into(),
                ))
            }
        },
        (v, T::String) => Value::Str(match v {
            Value::Int(i) => i.to_string().into(),
            Value::Float(f) => f.to_string().into(),
            Value::Bool(b) => b.to_string().into(),
            _ => return Ok(Value::Null),
        }),
        _ => Value::Null,
    })
}

#[cfg(test)]
mod array_agg_tests;
#[cfg(test)]
mod ordered_tests;

#[cfg(test)]
mod tests {
    use super::super::expr::{compile_measures, Scope};
    use super::*;
    use anduin_types::ColumnType;

    /// A match over rows of (`x` int, `f` float, `s` string), every row mapped to `A`.
    struct Rows(Vec<[Value; 3]>);

    impl View for Rows {
        fn steps(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
            (0..self.0.len() as u64).rev().map(|r| (r, 0))
        }
        fn cell(&self, row: u64, col: usize) -> Option<&Value> {
            self.0.get(row as usize)?.get(col)
        }
        fn match_number(&self) -> i64 {
            1
        }
    }

    fn measure(text: &str, rows: &Rows) -> Eval {
        let columns: Vec<(String, ColumnType)> = vec![
            ("x".into(), ColumnType::Int),
            ("f".into(), ColumnType::Double),
            ("s".into(), ColumnType::String),
        ];
        let vars = vec!["A".to_string()];
        let scope = Scope::new(&columns, &vars);
        let m = compile_measures(&format!("{text} AS m"), &scope).expect("compiles");
        eval(&m[0].1.e, rows, &[Arc::from("A")])
    }

    fn row(x: i64, f: f64, s: &str) -> [Value; 3] {
        [Value::Int(x), Value::Float(f), Value::Str(s.into())]
    }

    fn message(r: Eval) -> String {
        r.expect_err("fails").message().to_string()
    }

    #[test]
    fn casts_that_do_not_fit_are_errors_with_arrows_messages() {
        let rows = |f: f64, s: &str| Rows(vec![row(1, f, s)]);
        assert_eq!(
            measure("CAST(f AS BIGINT)", &rows(-2.9, "")),
            Ok(Value::Int(-2))
        );
        assert_eq!(
            measure("CAST(f AS BIGINT)", &rows(-9_223_372_036_854_775_808.0, "")),
            Ok(Value::Int(i64::MIN))
        );
        for (f, shown) in [
            (f64::NAN, "NaN"),
            (f64::INFINITY, "inf"),
            (9_223_372_036_854_775_808.0, "9.223372036854776e18"),
            (1e30, "1e30"),
        ] {
            assert_eq!(
                message(measure("CAST(f AS BIGINT)", &rows(f, ""))),
                format!("Cast error: Can't cast value {shown} to type Int64")
            );
        }
        assert_eq!(
            measure("CAST(s AS BIGINT)", &rows(0.0, " 7 ")),
            Ok(Value::Int(7))
        );
        assert_eq!(
            message(measure("CAST(s AS BIGINT)", &rows(0.0, "1.5"))),
            "Cast error: Cannot cast string '1.5' to value of Int64 type"
        );
        assert_eq!(
            message(measure("CAST(s AS DOUBLE)", &rows(0.0, "x"))),
            "Cast error: Cannot cast string 'x' to value of Float64 type"
        );
        assert_eq!(
            measure("CAST(s AS BOOLEAN)", &rows(0.0, "Yes")),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            message(measure("CAST(s AS BOOLEAN)", &rows(0.0, "maybe"))),
            "Cast error: Cannot cast value 'maybe' to value of Boolean type"
        );
    }

    #[test]
    fn negation_and_a_running_sum_fail_on_overflow_only() {
        let min = Rows(vec![row(i64::MIN, 0.0, "")]);
        assert_eq!(
            message(measure("-x", &min)),
            "Arithmetic overflow: Overflow happened on: 0 - -9223372036854775808"
        );
        assert_eq!(measure("-f", &min), Ok(Value::Float(-0.0)));
        // MAX + 1 - 1 fits whatever the order of the rows; MAX + 1 does not.
        let rows = Rows(vec![
            row(i64::MAX, 0.0, ""),
            row(1, 0.0, ""),
            row(-1, 0.0, ""),
        ]);
        assert_eq!(measure("SUM(x)", &rows), Ok(Value::Int(i64::MAX)));
        let rows = Rows(vec![row(i64::MAX, 0.0, ""), row(1, 0.0, "")]);
        assert_eq!(
            message(measure("SUM(A.x)", &rows)),
            "Arithmetic overflow: the SUM is 9223372036854775808, beyond the range of Int64"
        );
        // An error inside a short-circuited side is not computed.
        let zero = Rows(vec![row(0, 0.0, "")]);
        assert_eq!(
            measure("x <> 0 AND 10 / x > 1", &zero),
            Ok(Value::Bool(false))
        );
        assert_eq!(
            message(measure("10 / x > 1 AND x <> 0", &zero)),
            "Divide by zero error"
        );
    }
}
