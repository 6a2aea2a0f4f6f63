//! The aggregates of one group under retraction: what each keeps, how a row is added to it or
//! taken out of it, its value, and its bytes in a checkpoint.
//!
//! DataFusion's accumulators with `retract_batch` were weighed first and do not fit here:
//! its retractable `SUM` wraps around on overflow (anduin stops the query, naming the
//! aggregate), its retractable `MIN`/`MAX` take rows out only in the order they came (a window
//! frame sliding by), not any row, and its retractable `COUNT(DISTINCT)` keeps each value once
//! in its state, so after a restore one retraction removes a value seen twice. So each
//! aggregate keeps what it needs itself, exactly:
//!
//! | aggregate | keeps | value |
//! |---|---|---|
//! | `COUNT(x)`, `COUNT(*)` | rows whose `x` is not null | that number |
//! | `SUM(x)` | the sum (128 bits for ints, checked into `BIGINT` when read; for doubles, a double of the finite values and how many NaN, +∞ and −∞ apart) and how many non-null `x` | null when none |
//! | `AVG(x)` | as `SUM` | sum / count, a double |
//! | `MIN(x)`, `MAX(x)` | a multiset of the values, in order (a `BIGINT` or `TIMESTAMP` as a 64-bit int, any other in Arrow's row format, which orders as SQL does, NaN above every number); over an append-only input only the least or greatest value (`extreme.rs`) | its first or last value |
//! | `COUNT(DISTINCT x)` | a multiset of the values, hashed (no order needed: a lookup costs no comparisons along a tree), kept as `MIN`'s; several over one int column (with different filters) share one (`shared.rs`); over an append-only input, ints without counts | how many distinct values |
//! | a user's aggregate (`CREATE AGGREGATE`, `--udf`) | its state's bytes | its `finish` |
//!
//! A `FILTER (WHERE …)` leaves out the rows it does not keep, added or taken out. Taking out a
//! value the aggregate does not hold (a retraction of a row it never saw) changes nothing.
//! A double `SUM` or `AVG` under retraction can differ from a sum over the rows left in its
//! last bits (floating-point addition is not associative), as in every engine; it is exact
//! again (0) when its last value is taken out. NaN and infinities are counted apart from the
//! finite values, so that taking them out gives the sum of what is left (NaN while a NaN or
//! both infinities are held, else ±∞ while one is); finite values whose sum leaves the
//! double range give ±∞ until every value is taken out. A multiset holds every NaN as the one
//! canonical NaN (the largest value, as a window's `MIN`/`MAX` order them).
//!
//! A user's aggregate is stepped a batch at a time, not a row at a time (each step is a call
//! into its sandbox): [`AggPlan::apply`] leaves its state alone, and the operator hands the
//! rows to its `accumulate` afterwards (`running.rs`), in runs of added and taken out rows,
//! in their order.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int64Array, UInt32Array};
use arrow::datatypes::{DataType, Float64Type, Int64Type};
use arrow::row::{RowConverter, Rows, SortField};

use anduin_expr::UserAggregate;

use super::shared::{Share, SharedSet};

/// Which aggregate, as far as its state goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fun {
    /// `COUNT(x)`.
    Count,
    /// `SUM(x)` of ints (`float: false`) or doubles.
    Sum { float: bool },
    /// `AVG(x)` of ints or doubles.
    Avg { float: bool },
    /// `MIN(x)`.
    Min,
    /// `MAX(x)`.
    Max,
    /// `COUNT(DISTINCT x)`.
    CountDistinct,
    /// A user's aggregate ([`AggPlan::user`]).
    User,
}

impl Fun {
    /// The aggregate DataFusion compiled (`function`, `distinct`, its argument's type), if it
    /// is one a group keeps under retraction; otherwise what is not supported `within` ("in a
    /// GROUP BY without a window").
    pub(crate) fn of(
        function: &str,
        distinct: bool,
        arg: Option<&DataType>,
        within: &str,
    ) -> Result<Fun, String> {
        let numeric = |what: &str| match arg {
            Some(DataType::Int64) => Ok(false),
            Some(DataType::Float64) => Ok(true),
            Some(t) => Err(format!(
                "{what} of a {t} is not supported yet {within} (ints and doubles are)"
            )),
            None => Err(format!("{what} needs an argument")),
        };
        match (function, distinct) {
            ("count", false) => Ok(Fun::Count),
            ("count", true) => Ok(Fun::CountDistinct),
            ("sum", false) => Ok(Fun::Sum {
                float: numeric("SUM")?,
            }),
            ("avg", false) => Ok(Fun::Avg {
                float: numeric("AVG")?,
            }),
            ("min", _) => Ok(Fun::Min),
            ("max", _) => Ok(Fun::Max),
            (f, true) => Err(format!(
                "{}(DISTINCT …) is not supported yet {within} (COUNT(DISTINCT …) is)",
                f.to_uppercase()
            )),
            (f, false) => Err(format!(
                "{}(…) is not supported yet {within}: COUNT, SUM, AVG, MIN, MAX and COUNT(DISTINCT …) are",
                f.to_uppercase()
            )),
        }
    }

    /// Whether the state is a multiset of values.
    pub(crate) fn keeps_values(self) -> bool {
        matches!(self, Fun::Min | Fun::Max | Fun::CountDistinct)
    }
}

/// What one aggregate of one group keeps.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Acc {
    /// How many rows counted.
    Count(i64),
    /// A sum (in `int` for ints, `float` for the finite doubles) of `n` values, and how
    /// many of the doubles were NaN, +∞ and −∞ (`odd`, in that order).
    Sum {
        int: i128,
        float: f64,
        odd: [i64; 3],
        n: i64,
    },
    /// A multiset of values and how many times each is held, in order (`MIN`, `MAX`).
    Values(Ordered),
    /// A multiset of values and how many times each is held, in no order
    /// (`COUNT(DISTINCT)`).
    Distinct(Distinct),
    /// A user's aggregate's state, `None` before its first row.
    User(Option<Vec<u8>>),
}

impl Acc {
    /// An empty state for the aggregate of `plan`.
    pub(crate) fn new(plan: &AggPlan) -> Self {
        match plan.fun {
            Fun::Count => Acc::Count(0),
            Fun::Sum { .. } | Fun::Avg { .. } => Acc::Sum {
                int: 0,
                float: 0.0,
                odd: [0; 3],
                n: 0,
            },
            Fun::Min | Fun::Max if plan.append_only && plan.ints.is_some() => {
                Acc::Values(Ordered::Int(None))
            }
            Fun::Min | Fun::Max if plan.append_only => Acc::Values(Ordered::Row(None)),
            Fun::Min | Fun::Max if plan.ints.is_some() => {
                Acc::Values(Ordered::Ints(BTreeMap::new()))
            }
            Fun::Min | Fun::Max => Acc::Values(Ordered::Rows(BTreeMap::new())),
            Fun::CountDistinct => match &plan.share {
                Some(Share { set, slot, .. }) => Acc::Distinct(Distinct::Shared {
                    set: *set,
                    slot: *slot,
                    len: 0,
                }),
                None if plan.append_only => Acc::Distinct(Distinct::Set(Default::default())),
                None if plan.ints.is_some() => Acc::Distinct(Distinct::Ints(Default::default())),
                None => Acc::Distinct(Distinct::Rows(Default::default())),
            },
            Fun::User => Acc::User(None),
        }
    }
}

/// One aggregate's argument over a batch, ready for row-by-row adding.
pub(crate) enum Column {
    /// Counting: whether each row counts.
    Valid(ArrayRef),
    /// An int argument.
    Ints(Int64Array),
    /// A double argument.
    Floats(Float64Array),
    /// Values for a multiset, in row format; the argument for their nulls.
    Values(Rows, ArrayRef),
    /// A user's aggregate's arguments.
    Args(Vec<ArrayRef>),
}

/// How one aggregate adds rows to its state and reads its value.
#[derive(Debug, Clone)]
pub(crate) struct AggPlan {
    pub fun: Fun,
    /// For a multiset: the converter of the argument's values.
    values: Option<Arc<RowConverter>>,
    /// For a multiset that keeps its values as 64-bit ints ([`int_kept`]): the argument's
    /// type.
    ints: Option<DataType>,
    /// For a user's aggregate: its functions.
    pub user: Option<Arc<dyn UserAggregate>>,
    /// For a `COUNT(DISTINCT …)` that shares its set of values with others of its group
    /// (`shared.rs`): where its values are.
    pub share: Option<Share>,
    /// Over an append-only input, from which no row is taken out: a `MIN` or `MAX` keeps
    /// its extreme only (`extreme.rs`), a `COUNT(DISTINCT …)` of ints its values without
    /// counts.
    pub(crate) append_only: bool,
}

impl AggPlan {
    /// The plan of aggregate `fun` over an argument of type `arg`.
    pub(crate) fn new(fun: Fun, arg: &DataType) -> Result<Self, String> {
        // A multiset of ints needs no converter: its values are their own bytes (`int_row`).
        let values = if fun.keeps_values() && !int_kept(arg) {
            Some(Arc::new(
                RowConverter::new(vec![SortField::new(arg.clone())]).map_err(|e| e.to_string())?,
            ))
        } else {
            None
        };
        Ok(Self {
            fun,
            values,
            ints: (fun.keeps_values() && int_kept(arg)).then(|| arg.clone()),
            user: None,
            share: None,
            append_only: false,
        })
    }

    /// This plan for an append-only input, from which no row is taken out: a `MIN` or `MAX`
    /// keeps its extreme only (`extreme.rs`), a `COUNT(DISTINCT …)` of ints the set of its
    /// values (no counts); others are unchanged.
    pub(crate) fn over_append_only(mut self) -> Self {
        self.append_only = matches!(self.fun, Fun::Min | Fun::Max) || self.shareable();
        self
    }

    /// Whether its set of values can be shared with others ([`super::shared::share`]): a
    /// `COUNT(DISTINCT …)` that keeps its values as ints.
    pub(crate) fn shareable(&self) -> bool {
        self.fun == Fun::CountDistinct && self.ints.is_some()
    }

    /// The plan of the user's aggregate `user`.
    pub(crate) fn user(user: Arc<dyn UserAggregate>) -> Self {
        Self {
            fun: Fun::User,
            values: None,
            ints: None,
            user: Some(user),
            share: None,
            append_only: false,
        }
    }

    /// The arguments `args` of a batch prepared for [`AggPlan::apply`] (a user's aggregate
    /// takes them all, a built-in one the first; an error without one).
    pub(crate) fn columns(&self, args: Vec<ArrayRef>) -> Result<Column, String> {
        if self.fun == Fun::User {
            return Ok(Column::Args(args));
        }
        let arg = args
            .first()
            .ok_or_else(|| "an aggregate without an argument".to_string())?;
        self.column(arg)
    }

    /// The argument `arg` of a batch prepared for [`AggPlan::apply`].
    pub(crate) fn column(&self, arg: &ArrayRef) -> Result<Column, String> {
        Ok(match self.fun {
            Fun::Count => Column::Valid(Arc::clone(arg)),
            Fun::Sum { float: false } | Fun::Avg { float: false } => Column::Ints(ints(arg)?),
            Fun::Min | Fun::Max | Fun::CountDistinct if self.ints.is_some() => {
                Column::Ints(ints(arg)?)
            }
            Fun::Sum { float: true } | Fun::Avg { float: true } => Column::Floats(
                arrow::compute::cast(arg, &DataType::Float64)
                    .map_err(|e| e.to_string())?
                    .as_primitive::<Float64Type>()
                    .clone(),
            ),
            Fun::Min | Fun::Max | Fun::CountDistinct => {
                let converter = self.values.as_ref().expect("a multiset has a converter");
                let rows = converter
                    .convert_columns(&[canonical_nans(arg)])
                    .map_err(|e| e.to_string())?;
                Column::Values(rows, Arc::clone(arg))
            }
            Fun::User => Column::Args(vec![Arc::clone(arg)]),
        })
    }

    /// Adds row `i` of `column` to `acc` (`add`), or takes it out; a row `filter` leaves out,
    /// or whose argument is null, changes nothing. A user's aggregate's state is left alone:
    /// its rows are stepped a batch at a time (see the module's doc).
    pub(crate) fn apply(
        &self,
        acc: &mut Acc,
        column: &Column,
        filter: Option<&BooleanArray>,
        i: usize,
        add: bool,
    ) {
        if filter.is_some_and(|f| !(f.is_valid(i) && f.value(i))) {
            return;
        }
        let sign: i64 = if add { 1 } else { -1 };
        match (acc, column) {
            (Acc::Count(n), Column::Valid(a)) if a.is_valid(i) => *n += sign,
            (Acc::Sum { int, n, .. }, Column::Ints(a)) if a.is_valid(i) => {
                *int += i128::from(sign) * i128::from(a.value(i));
                *n += sign;
            }
            (Acc::Sum { float, odd, n, .. }, Column::Floats(a)) if a.is_valid(i) => {
                let v = a.value(i);
                match v {
                    v if v.is_finite() => *float += sign as f64 * v,
                    v if v.is_nan() => odd[0] += sign,
                    v if v > 0.0 => odd[1] += sign,
                    _ => odd[2] += sign,
                }
                *n += sign;
                if *n == 0 {
                    *float = 0.0;
                    *odd = [0; 3];
                }
            }
            // A value held already is counted without a key allocated for it.
            (Acc::Values(Ordered::Rows(set)), Column::Values(rows, a)) if a.is_valid(i) => {
                let v = rows.row(i);
                match count(set.get_mut(v.as_ref()), add) {
                    Step::New => {
                        set.insert(v.as_ref().to_vec(), 1);
                    }
                    Step::Gone => {
                        set.remove(v.as_ref());
                    }
                    Step::Counted => {}
                }
            }
            (Acc::Distinct(Distinct::Rows(set)), Column::Values(rows, a)) if a.is_valid(i) => {
                let v = rows.row(i);
                match count(set.get_mut(v.as_ref()), add) {
                    Step::New => {
                        set.insert(v.as_ref().into(), 1);
                    }
                    Step::Gone => {
                        set.remove(v.as_ref());
                    }
                    Step::Counted => {}
                }
            }
            // Over an append-only input: never taken out.
            (Acc::Values(Ordered::Int(held)), Column::Ints(a)) if a.is_valid(i) && add => {
                super::extreme::add_int(self.fun, held, a.value(i));
            }
            (Acc::Values(Ordered::Row(held)), Column::Values(rows, a)) if a.is_valid(i) && add => {
                super::extreme::add_row(self.fun, held, rows.row(i).as_ref());
            }
            (Acc::Distinct(Distinct::Set(set)), Column::Ints(a)) if a.is_valid(i) && add => {
                set.insert(a.value(i));
            }
            (Acc::Values(Ordered::Ints(set)), Column::Ints(a)) if a.is_valid(i) => {
                let v = a.value(i);
                match count(set.get_mut(&v), add) {
                    Step::New => {
                        set.insert(v, 1);
                    }
                    Step::Gone => {
                        set.remove(&v);
                    }
                    Step::Counted => {}
                }
            }
            (Acc::Distinct(Distinct::Ints(set)), Column::Ints(a)) if a.is_valid(i) => {
                let v = a.value(i);
                match count(set.get_mut(&v), add) {
                    Step::New => {
                        set.insert(v, 1);
                    }
                    Step::Gone => {
                        set.remove(&v);
                    }
                    Step::Counted => {}
                }
            }
            _ => {}
        }
    }

    /// The value of this aggregate in each of `accs` (one per group), or for an integer sum
    /// that leaves `BIGINT`, the index of the group and its sum.
    pub(crate) fn evaluate<'a>(
        &self,
        accs: impl ExactSizeIterator<Item = &'a Acc>,
    ) -> Result<ArrayRef, Evaluation> {
        let n = accs.len();
        Ok(match self.fun {
            Fun::Count => Arc::new(Int64Array::from_iter_values(accs.map(|a| match a {
                Acc::Count(c) => *c,
                _ => 0,
            }))),
            Fun::CountDistinct => Arc::new(Int64Array::from_iter_values(accs.map(|a| match a {
                Acc::Distinct(s) => i64::try_from(s.len()).unwrap_or(i64::MAX),
                _ => 0,
            }))),
            Fun::Sum { float: false } => {
                let mut out = Vec::with_capacity(n);
                for (g, a) in accs.enumerate() {
                    out.push(match a {
                        Acc::Sum { int, n, .. } if *n > 0 => {
                            Some(i64::try_from(*int).map_err(|_| Evaluation::Overflow {
                                group: g,
                                sum: *int,
                            })?)
                        }
                        _ => None,
                    });
                }
                Arc::new(Int64Array::from(out))
            }
            Fun::Sum { float: true } => Arc::new(Float64Array::from_iter(accs.map(|a| match a {
                Acc::Sum { float, odd, n, .. } if *n > 0 => Some(float_sum(*float, *odd)),
                _ => None,
            }))),
            Fun::Avg { float } => Arc::new(Float64Array::from_iter(accs.map(|a| match a {
                Acc::Sum {
                    int,
                    float: f,
                    odd,
                    n,
                } if *n > 0 => {
                    let total = if float {
                        float_sum(*f, *odd)
                    } else {
                        *int as f64
                    };
                    Some(total / *n as f64)
                }
                _ => None,
            }))),
            Fun::Min | Fun::Max if self.ints.is_some() => {
                let picked = Int64Array::from_iter(accs.map(|a| match a {
                    Acc::Values(Ordered::Ints(s)) if self.fun == Fun::Min => {
                        s.keys().next().copied()
                    }
                    Acc::Values(Ordered::Ints(s)) => s.keys().next_back().copied(),
                    Acc::Values(Ordered::Int(v)) => *v,
                    _ => None,
                }));
                let t = self.ints.as_ref().expect("checked above");
                arrow::compute::cast(&picked, t).map_err(|e| Evaluation::Other(e.to_string()))?
            }
            Fun::Min | Fun::Max => {
                let converter = self.values.as_ref().expect("a multiset has a converter");
                let parser = converter.parser();
                let mut picked = Vec::new();
                let mut index = Vec::with_capacity(n);
                for a in accs {
                    let v = match a {
                        Acc::Values(Ordered::Rows(s)) if self.fun == Fun::Min => s.keys().next(),
                        Acc::Values(Ordered::Rows(s)) => s.keys().next_back(),
                        Acc::Values(Ordered::Row(v)) => v.as_ref(),
                        _ => None,
                    };
                    index.push(v.map(|v| {
                        picked.push(parser.parse(v));
                        u32::try_from(picked.len() - 1).unwrap_or(u32::MAX)
                    }));
                }
                let values = converter
                    .convert_rows(picked)
                    .map_err(|e| Evaluation::Other(e.to_string()))?;
                let values = values
                    .into_iter()
                    .next()
                    .ok_or_else(|| Evaluation::Other("the multiset gave no column".to_string()))?;
                arrow::compute::take(&values, &UInt32Array::from(index), None)
                    .map_err(|e| Evaluation::Other(e.to_string()))?
            }
            Fun::User => {
                let user = self.user.as_ref().expect("a user's aggregate has its plan");
                let states = accs
                    .map(|a| match a {
                        Acc::User(s) => s.clone(),
                        _ => None,
                    })
                    .collect();
                user.finish(states).map_err(Evaluation::Failed)?
            }
        })
    }
}

/// What adding a value to a multiset or taking it out leaves the multiset to do: hold a
/// value new to it, drop one gone from it, or nothing (the count changed in place).
enum Step {
    New,
    Gone,
    Counted,
}

/// Counts a value in or out of a multiset where it is held `held` times: in place, or what
/// the multiset must do ([`Step`]). Taking out a value not held changes nothing.
fn count(held: Option<&mut u64>, add: bool) -> Step {
    match held {
        Some(c) if add => *c += 1,
        None if add => return Step::New,
        Some(c) if *c > 1 => *c -= 1,
        Some(_) => return Step::Gone,
        None => {}
    }
    Step::Counted
}

/// The sum of finite doubles summing to `finite` and of `odd` NaN, +∞ and −∞.
fn float_sum(finite: f64, odd: [i64; 3]) -> f64 {
    match odd {
        [nan, pos, neg] if nan > 0 || (pos > 0 && neg > 0) => f64::NAN,
        [_, pos, _] if pos > 0 => f64::INFINITY,
        [_, _, neg] if neg > 0 => f64::NEG_INFINITY,
        _ => finite,
    }
}

/// `values` with every NaN made the one canonical NaN, so that a multiset holds them as one
/// value (the largest in Arrow's row order, as SQL orders it).
fn canonical_nans(values: &ArrayRef) -> ArrayRef {
    match values.as_primitive_opt::<Float64Type>() {
        Some(floats) => Arc::new(arrow::compute::kernels::arity::unary::<_, _, Float64Type>(
            floats,
            |v| if v.is_nan() { f64::NAN } else { v },
        )),
        None => Arc::clone(values),
    }
}

/// Why an aggregate has no value.
#[derive(Debug)]
pub(crate) enum Evaluation {
    /// An integer sum left `BIGINT`: the index of its group and the sum.
    Overflow { group: usize, sum: i128 },
    /// A user's aggregate's `finish` failed (the message names it).
    Failed(String),
    /// Anything else (a bug in anduin).
    Other(String),
}

/// What a group keeps: how many rows it holds, each aggregate's state, and the sets of
/// values aggregates share (`shared.rs`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Group {
    pub rows: i64,
    pub accs: Vec<Acc>,
    pub shared: Vec<SharedSet>,
}

impl Group {
    /// An empty group of aggregates `plans`.
    pub(crate) fn new(plans: &[AggPlan]) -> Self {
        Self {
            rows: 0,
            accs: plans.iter().map(Acc::new).collect(),
            shared: super::shared::empty_sets(plans),
        }
    }

    /// Adds row `i` of `columns` (one per aggregate of `plans`) to each aggregate (`add`),
    /// or takes it out, as [`AggPlan::apply`] does; the aggregates that share a set of
    /// values look the row's value up once for all of them.
    pub(crate) fn apply(
        &mut self,
        plans: &[AggPlan],
        columns: &[Column],
        filters: &[Option<BooleanArray>],
        i: usize,
        add: bool,
    ) {
        for (k, plan) in plans.iter().enumerate() {
            match &plan.share {
                None => plan.apply(&mut self.accs[k], &columns[k], filters[k].as_ref(), i, add),
                Some(Share {
                    set,
                    members: Some(members),
                    ..
                }) => super::shared::apply(
                    &mut self.shared[*set],
                    &mut self.accs,
                    members,
                    columns,
                    filters,
                    i,
                    add,
                ),
                // Applied with the first aggregate of its set.
                Some(_) => {}
            }
        }
    }

    /// The group's bytes in a checkpoint: the rows (8 bytes), then each aggregate's state
    /// after a tag byte: `c` a count (8), `s` a sum (16 + 8 + 8), `f` a sum that holds NaN
    /// or infinities (the same, then 3 × 8 for how many of each), `v` a multiset (4 for the
    /// number of values, then each as 4 for its length, its bytes, and 8 for its count), `u`
    /// a user's aggregate's state (4 for its length, then its bytes), `n` a user's aggregate
    /// without one. All little-endian.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + 33 * self.accs.len());
        out.extend_from_slice(&self.rows.to_le_bytes());
        for a in &self.accs {
            match a {
                Acc::Count(n) => {
                    out.push(b'c');
                    out.extend_from_slice(&n.to_le_bytes());
                }
                Acc::Sum { int, float, odd, n } => {
                    out.push(if *odd == [0; 3] { b's' } else { b'f' });
                    out.extend_from_slice(&int.to_le_bytes());
                    out.extend_from_slice(&float.to_bits().to_le_bytes());
                    out.extend_from_slice(&n.to_le_bytes());
                    if *odd != [0; 3] {
                        for o in odd {
                            out.extend_from_slice(&o.to_le_bytes());
                        }
                    }
                }
                Acc::User(None) => out.push(b'n'),
                Acc::User(Some(state)) => {
                    out.push(b'u');
                    let len = u32::try_from(state.len()).unwrap_or(u32::MAX);
                    out.extend_from_slice(&len.to_le_bytes());
                    out.extend_from_slice(state);
                }
                Acc::Values(Ordered::Rows(set)) => {
                    encode_values(&mut out, b'v', set.len(), set.iter())
                }
                Acc::Values(Ordered::Ints(set)) => encode_values(
                    &mut out,
                    b'v',
                    set.len(),
                    set.iter().map(|(v, c)| (int_row(*v), c)),
                ),
                Acc::Values(Ordered::Row(v)) => {
                    encode_values(&mut out, b'x', v.iter().len(), v.iter().map(|v| (v, &1)))
                }
                Acc::Values(Ordered::Int(v)) => encode_values(
                    &mut out,
                    b'x',
                    v.iter().len(),
                    v.iter().map(|v| (int_row(*v), &1)),
                ),
                // In the order of the values: the same bytes for the same multiset.
                Acc::Distinct(Distinct::Rows(set)) => {
                    let mut values: Vec<(&Box<[u8]>, &u64)> = set.iter().collect();
                    values.sort_unstable_by(|a, b| a.0.cmp(b.0));
                    encode_values(
                        &mut out,
                        b'v',
                        values.len(),
                        values.into_iter().map(|(v, c)| (&v[..], c)),
                    )
                }
                // As its own multiset would be.
                Acc::Distinct(Distinct::Shared { set, slot, .. }) => {
                    let set = self.shared.get(*set);
                    let values = set
                        .map(|s| super::shared::values(s, *slot))
                        .unwrap_or_default();
                    encode_values(
                        &mut out,
                        if set.is_some_and(SharedSet::counts) {
                            b'v'
                        } else {
                            b'x'
                        },
                        values.len(),
                        values.iter().map(|(v, c)| (int_row(*v), c)),
                    )
                }
                // As the same values in row format would be: the bytes do not depend on
                // how the set is kept.
                Acc::Distinct(Distinct::Ints(set)) => {
                    let mut values: Vec<(&i64, &u64)> = set.iter().collect();
                    values.sort_unstable_by_key(|(v, _)| **v);
                    encode_values(
                        &mut out,
                        b'v',
                        values.len(),
                        values.into_iter().map(|(v, c)| (int_row(*v), c)),
                    )
                }
                // Each value once, tagged as kept for an append-only input.
                Acc::Distinct(Distinct::Set(set)) => {
                    let mut values: Vec<i64> = set.iter().copied().collect();
                    values.sort_unstable();
                    encode_values(
                        &mut out,
                        b'x',
                        values.len(),
                        values.into_iter().map(|v| (int_row(v), &1)),
                    )
                }
            }
        }
        out
    }

    /// A group from [`Group::encode`]'s bytes, with `plans`' aggregates; `None` for bytes
    /// that are not one.
    pub(crate) fn decode(bytes: &[u8], plans: &[AggPlan]) -> Option<Self> {
        let mut r = Reader(bytes);
        let rows = i64::from_le_bytes(r.take()?);
        let mut accs = Vec::with_capacity(plans.len());
        let mut shared = super::shared::empty_sets(plans);
        for plan in plans {
            let [tag] = r.take::<1>()?;
            let acc = match (tag, plan.fun) {
                (b'c', Fun::Count) => Acc::Count(i64::from_le_bytes(r.take()?)),
                (b's' | b'f', Fun::Sum { .. } | Fun::Avg { .. }) => {
                    let int = i128::from_le_bytes(r.take()?);
                    let float = f64::from_bits(u64::from_le_bytes(r.take()?));
                    let n = i64::from_le_bytes(r.take()?);
                    let mut odd = [0; 3];
                    if tag == b'f' {
                        for o in &mut odd {
                            *o = i64::from_le_bytes(r.take()?);
                        }
                    }
                    Acc::Sum { int, float, odd, n }
                }
                (b'v' | b'x', f) if f.keeps_values() => {
                    let len = u32::from_le_bytes(r.take()?);
                    let mut values = Vec::with_capacity(len.min(1 << 16) as usize);
                    for _ in 0..len {
                        let vl = u32::from_le_bytes(r.take()?) as usize;
                        let v = r.bytes(vl)?;
                        let c = u64::from_le_bytes(r.take()?);
                        values.push((v, c));
                    }
                    // An extreme's or a set's bytes never stand for a multiset.
                    if tag == b'x' && !plan.append_only {
                        return None;
                    }
                    match (f, plan.ints.is_some()) {
                        (Fun::Min | Fun::Max, true) if plan.append_only => {
                            let ints = values
                                .iter()
                                .map(|(v, _)| row_int(v))
                                .collect::<Option<Vec<i64>>>()?;
                            Acc::Values(Ordered::Int(super::extreme::of(f, &ints).copied()))
                        }
                        (Fun::Min | Fun::Max, false) if plan.append_only => {
                            Acc::Values(Ordered::Row(
                                super::extreme::of(f, values.iter().map(|(v, _)| *v))
                                    .map(<[u8]>::to_vec),
                            ))
                        }
                        (Fun::CountDistinct, true) if plan.share.is_some() => {
                            let Share { set, slot, .. } = plan.share.clone()?;
                            let ints = values
                                .iter()
                                .map(|(v, c)| Some((row_int(v)?, *c)))
                                .collect::<Option<Vec<(i64, u64)>>>()?;
                            let len = super::shared::restore(shared.get_mut(set)?, slot, &ints);
                            Acc::Distinct(Distinct::Shared { set, slot, len })
                        }
                        (Fun::CountDistinct, true) if plan.append_only => {
                            Acc::Distinct(Distinct::Set(
                                values
                                    .iter()
                                    .filter(|(_, c)| *c > 0)
                                    .map(|(v, _)| row_int(v))
                                    .collect::<Option<_>>()?,
                            ))
                        }
                        (Fun::CountDistinct, true) => {
                            let mut set = hashbrown::HashMap::default();
                            set.reserve(values.len());
                            for (v, c) in values {
                                set.insert(row_int(v)?, c);
                            }
                            Acc::Distinct(Distinct::Ints(set))
                        }
                        (Fun::CountDistinct, false) => {
                            let mut set = hashbrown::HashMap::default();
                            set.reserve(values.len());
                            set.extend(values.into_iter().map(|(v, c)| (Box::from(v), c)));
                            Acc::Distinct(Distinct::Rows(set))
                        }
                        (_, true) => Acc::Values(Ordered::Ints(
                            values
                                .into_iter()
                                .map(|(v, c)| Some((row_int(v)?, c)))
                                .collect::<Option<_>>()?,
                        )),
                        (_, false) => Acc::Values(Ordered::Rows(
                            values.into_iter().map(|(v, c)| (v.to_vec(), c)).collect(),
                        )),
                    }
                }
                (b'n', Fun::User) => Acc::User(None),
                (b'u', Fun::User) => {
                    let len = u32::from_le_bytes(r.take()?) as usize;
                    Acc::User(Some(r.bytes(len)?.to_vec()))
                }
                _ => return None,
            };
            accs.push(acc);
        }
        r.0.is_empty().then_some(Self { rows, accs, shared })
    }
}

/// Writes a multiset of `len` values: `tag` (`v`; `x` for what an append-only input keeps, an
/// extreme or values without counts, each counted once), the number of values, then each as 4
/// bytes for its length, its bytes, and 8 for its count.
fn encode_values<'a, V: AsRef<[u8]> + 'a>(
    out: &mut Vec<u8>,
    tag: u8,
    len: usize,
    values: impl Iterator<Item = (V, &'a u64)>,
) {
    out.push(tag);
    out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes());
    for (v, c) in values {
        let v = v.as_ref();
        let vl = u32::try_from(v.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&vl.to_le_bytes());
        out.extend_from_slice(v);
        out.extend_from_slice(&c.to_le_bytes());
    }
}

/// A multiset of values in order: each value and how many times it is held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ordered {
    /// Values in Arrow's row format.
    Rows(BTreeMap<Vec<u8>, u64>),
    /// 64-bit values ([`int_kept`]).
    Ints(BTreeMap<i64, u64>),
    /// Over an append-only input, the least (`MIN`) or greatest (`MAX`) value only, in
    /// Arrow's row format (`extreme.rs`).
    Row(Option<Vec<u8>>),
    /// Over an append-only input, the least or greatest 64-bit value only.
    Int(Option<i64>),
}

/// A hashed multiset of values: each value and how many times it is held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Distinct {
    /// Values in Arrow's row format, one allocation each.
    Rows(hashbrown::HashMap<Box<[u8]>, u64, ahash::RandomState>),
    /// 64-bit values ([`int_kept`]), in place: no allocation per value.
    Ints(hashbrown::HashMap<i64, u64, ahash::RandomState>),
    /// Over an append-only input, 64-bit values without counts (none is taken out).
    Set(hashbrown::HashSet<i64, ahash::RandomState>),
    /// Values kept in set `set` of the group, with those of other aggregates (`shared.rs`),
    /// as count `slot` of each; `len` of them held.
    Shared { set: usize, slot: usize, len: usize },
}

impl Distinct {
    /// How many distinct values it holds.
    fn len(&self) -> usize {
        match self {
            Distinct::Rows(set) => set.len(),
            Distinct::Ints(set) => set.len(),
            Distinct::Set(set) => set.len(),
            Distinct::Shared { len, .. } => *len,
        }
    }
}

/// Whether a multiset of `arg`'s values keeps them as 64-bit ints: a `BIGINT` or a
/// `TIMESTAMP`, whose row format ([`int_row`]) is the int's, so that its checkpoint's bytes
/// are those of the values in row format.
fn int_kept(arg: &DataType) -> bool {
    matches!(arg, DataType::Int64 | DataType::Timestamp(..))
}

/// The int argument `arg` (an int or a timestamp) as `BIGINT`s.
fn ints(arg: &ArrayRef) -> Result<Int64Array, String> {
    Ok(arrow::compute::cast(arg, &DataType::Int64)
        .map_err(|e| e.to_string())?
        .as_primitive::<Int64Type>()
        .clone())
}

/// A non-null 64-bit int in Arrow's row format: a byte 1, then the int with its sign bit
/// flipped, big-endian (so that the bytes order as the ints do).
fn int_row(v: i64) -> [u8; 9] {
    let mut row = [1; 9];
    row[1..].copy_from_slice(&((v as u64) ^ (1 << 63)).to_be_bytes());
    row
}

/// The int of [`int_row`]'s bytes; `None` for bytes that are not one.
fn row_int(row: &[u8]) -> Option<i64> {
    match row.split_first()? {
        (1, rest) => Some((u64::from_be_bytes(rest.try_into().ok()?) ^ (1 << 63)) as i64),
        _ => None,
    }
}

/// Reads fixed-size pieces off the front of a byte slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, tail) = self.0.split_first_chunk::<N>()?;
        self.0 = tail;
        Some(*head)
    }

    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Some(head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(fun: Fun, arg: DataType) -> AggPlan {
        AggPlan::new(fun, &arg).expect("a plan")
    }

    #[test]
    fn min_and_max_follow_retractions_of_any_row() {
        let p = plan(Fun::Max, DataType::Int64);
        let arg: ArrayRef = Arc::new(Int64Array::from(vec![Some(5), Some(9), None, Some(9)]));
        let col = p.column(&arg).expect("column");
        let mut acc = Acc::new(&p);
        for i in 0..4 {
            p.apply(&mut acc, &col, None, i, true);
        }
        let value = |acc: &Acc| {
            p.evaluate(std::iter::once(acc))
                .expect("value")
                .as_primitive::<Int64Type>()
                .iter()
                .next()
                .flatten()
        };
        assert_eq!(value(&acc), Some(9));
        p.apply(&mut acc, &col, None, 1, false);
        assert_eq!(value(&acc), Some(9), "9 is held twice");
        p.apply(&mut acc, &col, None, 3, false);
        assert_eq!(value(&acc), Some(5));
        p.apply(&mut acc, &col, None, 0, false);
        assert_eq!(value(&acc), None);
    }

    #[test]
    fn a_group_survives_its_bytes() {
        let plans = vec![
            plan(Fun::Count, DataType::Int64),
            plan(Fun::Sum { float: true }, DataType::Float64),
            plan(Fun::CountDistinct, DataType::Utf8),
        ];
        let texts: ArrayRef = Arc::new(arrow::array::StringArray::from(vec!["a", "b", "a"]));
        let floats: ArrayRef = Arc::new(Float64Array::from(vec![1.5, -2.0, 0.25]));
        let mut g = Group::new(&plans);
        let cols = [
            plans[0].column(&floats).expect("col"),
            plans[1].column(&floats).expect("col"),
            plans[2].column(&texts).expect("col"),
        ];
        for i in 0..3 {
            g.rows += 1;
            for (k, p) in plans.iter().enumerate() {
                p.apply(&mut g.accs[k], &cols[k], None, i, true);
            }
        }
        let bytes = g.encode();
        // The same rows the other way round: the same bytes (a hashed multiset is written in
        // the order of its values).
        let mut h = Group::new(&plans);
        for i in (0..3).rev() {
            h.rows += 1;
            for (k, p) in plans.iter().enumerate() {
                p.apply(&mut h.accs[k], &cols[k], None, i, true);
            }
        }
        assert_eq!(h.encode(), bytes);
        assert_eq!(Group::decode(&bytes, &plans), Some(g));
        assert_eq!(Group::decode(&bytes[..bytes.len() - 1], &plans), None);
        assert_eq!(Group::decode(&bytes, &plans[..2]), None, "bytes left over");
    }

    #[test]
    fn a_user_aggregates_state_survives_its_bytes_with_or_without_one() {
        #[derive(Debug)]
        struct Stateful;
        impl UserAggregate for Stateful {
            fn name(&self) -> &str {
                "stateful"
            }
            fn merges(&self) -> bool {
                false
            }
            fn retracts(&self) -> bool {
                false
            }
            fn accumulate(
                &self,
                _: &mut anduin_expr::UserStates,
                _: &[usize],
                _: &[ArrayRef],
                _: Option<&BooleanArray>,
                _: bool,
            ) -> Result<(), String> {
                Ok(())
            }
            fn finish(&self, states: anduin_expr::UserStates) -> Result<ArrayRef, String> {
                Ok(Arc::new(Int64Array::from_iter(
                    states.iter().map(|s| s.as_ref().map(|s| s.len() as i64)),
                )))
            }
        }
        let plans = vec![
            AggPlan::user(Arc::new(Stateful)),
            plan(Fun::Count, DataType::Int64),
            AggPlan::user(Arc::new(Stateful)),
        ];
        let g = Group {
            rows: 2,
            accs: vec![
                Acc::User(Some(b"{\"n\":2}".to_vec())),
                Acc::Count(2),
                Acc::User(None),
            ],
            shared: Vec::new(),
        };
        let bytes = g.encode();
        assert_eq!(Group::decode(&bytes, &plans), Some(g.clone()));
        assert_eq!(Group::decode(&bytes[..bytes.len() - 2], &plans), None);
        let value = plans[0]
            .evaluate(std::iter::once(&g.accs[0]))
            .expect("finish");
        assert_eq!(value.as_primitive::<Int64Type>().value(0), 7);
    }

    #[test]
    fn an_int_sum_beyond_bigint_is_an_overflow_not_a_wrapped_total() {
        let p = plan(Fun::Sum { float: false }, DataType::Int64);
        let arg: ArrayRef = Arc::new(Int64Array::from(vec![i64::MAX, 1, 1]));
        let col = p.column(&arg).expect("column");
        let mut acc = Acc::new(&p);
        p.apply(&mut acc, &col, None, 0, true);
        p.apply(&mut acc, &col, None, 1, true);
        assert!(matches!(
            p.evaluate(std::iter::once(&acc)),
            Err(Evaluation::Overflow { group: 0, .. })
        ));
        p.apply(&mut acc, &col, None, 2, false);
        assert!(p.evaluate(std::iter::once(&acc)).is_ok(), "back in range");
    }

    fn one_float(p: &AggPlan, acc: &Acc) -> Option<f64> {
        p.evaluate(std::iter::once(acc))
            .expect("value")
            .as_primitive::<Float64Type>()
            .iter()
            .next()
            .flatten()
    }

    #[test]
    fn a_double_sum_is_that_of_the_values_left_after_nan_and_infinities_are_taken_out() {
        let p = plan(Fun::Sum { float: true }, DataType::Float64);
        let arg: ArrayRef = Arc::new(Float64Array::from(vec![
            1.5,
            f64::INFINITY,
            f64::NAN,
            f64::NEG_INFINITY,
        ]));
        let col = p.column(&arg).expect("column");
        let mut acc = Acc::new(&p);
        for i in 0..4 {
            p.apply(&mut acc, &col, None, i, true);
        }
        assert!(one_float(&p, &acc).is_some_and(f64::is_nan));
        let plans = [p.clone()];
        let g = Group {
            rows: 4,
            accs: vec![acc.clone()],
            shared: Vec::new(),
        };
        assert_eq!(
            Group::decode(&g.encode(), &plans),
            Some(g),
            "counts survive"
        );
        p.apply(&mut acc, &col, None, 2, false);
        assert!(
            one_float(&p, &acc).is_some_and(f64::is_nan),
            "+inf and -inf"
        );
        p.apply(&mut acc, &col, None, 3, false);
        assert_eq!(one_float(&p, &acc), Some(f64::INFINITY));
        p.apply(&mut acc, &col, None, 1, false);
        assert_eq!(one_float(&p, &acc), Some(1.5));
    }

    #[test]
    fn a_nan_of_either_sign_is_one_value_above_every_number() {
        let negative_nan = f64::from_bits(f64::NAN.to_bits() | (1 << 63));
        let arg: ArrayRef = Arc::new(Float64Array::from(vec![negative_nan, 1.0, f64::NAN]));
        let fill = |fun: Fun| {
            let p = plan(fun, DataType::Float64);
            let col = p.column(&arg).expect("column");
            let mut acc = Acc::new(&p);
            for i in 0..3 {
                p.apply(&mut acc, &col, None, i, true);
            }
            (p, acc)
        };
        let (p, acc) = fill(Fun::Min);
        assert_eq!(one_float(&p, &acc), Some(1.0));
        let (p, acc) = fill(Fun::Max);
        assert!(one_float(&p, &acc).is_some_and(f64::is_nan));
        let (p, acc) = fill(Fun::CountDistinct);
        let distinct = p.evaluate(std::iter::once(&acc)).expect("value");
        assert_eq!(distinct.as_primitive::<Int64Type>().value(0), 2);
    }

    #[test]
    fn an_int_in_row_format_is_arrow_s_row_of_a_bigint_or_a_timestamp() {
        let values = [i64::MIN, i64::MIN + 1, -1_000_000, -1, 0, 1, 42, i64::MAX];
        for t in [
            DataType::Int64,
            DataType::Timestamp(arrow::datatypes::TimeUnit::Millisecond, None),
        ] {
            let converter = RowConverter::new(vec![SortField::new(t.clone())]).expect("converter");
            let column = arrow::compute::cast(
                &(Arc::new(Int64Array::from(values.to_vec())) as ArrayRef),
                &t,
            )
            .expect("cast");
            let rows = converter.convert_columns(&[column]).expect("rows");
            for (i, v) in values.iter().enumerate() {
                assert_eq!(rows.row(i).as_ref(), int_row(*v), "{v} as {t}");
                assert_eq!(row_int(&int_row(*v)), Some(*v));
            }
        }
        assert_eq!(row_int(&[0; 9]), None, "a null is never held");
        assert_eq!(row_int(&[1; 8]), None, "too short");
    }

    /// A multiset of ints (`MIN`, `MAX`, `COUNT(DISTINCT)` of a `BIGINT` or `TIMESTAMP`),
    /// kept as ints, gives what the same multiset kept in row format gives after every step
    /// of a seeded run of adds and retractions (of rows held or not, nulls among them), and
    /// a checkpoint of either is the same bytes and reads as the other.
    #[test]
    fn a_multiset_of_ints_kept_as_ints_is_the_one_kept_in_row_format() {
        let mut rng = crate::test_rng::Lcg::new(0x5eed);
        let mut next = |n: u64| rng.below(n);
        let values: Vec<Option<i64>> = (0..64)
            .map(|_| match next(10) {
                0 => None,
                1 => Some(i64::MIN + next(3) as i64),
                2 => Some(i64::MAX - next(3) as i64),
                _ => Some(next(20) as i64 - 10),
            })
            .collect();
        let steps: Vec<(usize, bool)> =
            (0..400).map(|_| (next(64) as usize, next(3) > 0)).collect();
        let timestamp =
            DataType::Timestamp(arrow::datatypes::TimeUnit::Millisecond, Some("UTC".into()));
        for t in [DataType::Int64, timestamp] {
            let arg = arrow::compute::cast(
                &(Arc::new(Int64Array::from(values.clone())) as ArrayRef),
                &t,
            )
            .expect("cast");
            for fun in [Fun::Min, Fun::Max, Fun::CountDistinct] {
                let ints = plan(fun, t.clone());
                assert_eq!(ints.ints.as_ref(), Some(&t));
                // The same aggregate kept as any other type is: in row format.
                let rows = AggPlan {
                    ints: None,
                    values: Some(Arc::new(
                        RowConverter::new(vec![SortField::new(t.clone())]).expect("converter"),
                    )),
                    ..ints.clone()
                };
                let (ci, cr) = (
                    ints.column(&arg).expect("column"),
                    rows.column(&arg).expect("column"),
                );
                let mut gi = Group::new(std::slice::from_ref(&ints));
                let mut gr = Group::new(std::slice::from_ref(&rows));
                assert!(matches!(
                    gi.accs[0],
                    Acc::Values(Ordered::Ints(_)) | Acc::Distinct(Distinct::Ints(_))
                ));
                assert!(matches!(
                    gr.accs[0],
                    Acc::Values(Ordered::Rows(_)) | Acc::Distinct(Distinct::Rows(_))
                ));
                for (k, &(i, add)) in steps.iter().enumerate() {
                    ints.apply(&mut gi.accs[0], &ci, None, i, add);
                    rows.apply(&mut gr.accs[0], &cr, None, i, add);
                    let vi = ints.evaluate(std::iter::once(&gi.accs[0])).expect("value");
                    let vr = rows.evaluate(std::iter::once(&gr.accs[0])).expect("value");
                    assert_eq!(vi.data_type(), vr.data_type(), "{fun:?} of {t}");
                    assert_eq!(&vi, &vr, "{fun:?} of {t} after step {k}");
                    if k % 50 == 0 {
                        let bytes = gi.encode();
                        assert_eq!(bytes, gr.encode(), "{fun:?} of {t} after step {k}");
                        assert_eq!(
                            Group::decode(&bytes, std::slice::from_ref(&ints)),
                            Some(gi.clone())
                        );
                        assert_eq!(
                            Group::decode(&bytes, std::slice::from_ref(&rows)),
                            Some(gr.clone())
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn unsupported_aggregates_say_what_is_supported() {
        let e = Fun::of(
            "stddev",
            false,
            Some(&DataType::Float64),
            "in a GROUP BY without a window",
        )
        .expect_err("no");
        assert!(e.contains("STDDEV(…) is not supported yet"), "{e}");
        let e = Fun::of(
            "sum",
            true,
            Some(&DataType::Int64),
            "in a GROUP BY without a window",
        )
        .expect_err("no");
        assert!(e.contains("SUM(DISTINCT …)"), "{e}");
    }
}
