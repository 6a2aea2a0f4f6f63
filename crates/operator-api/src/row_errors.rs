//! A row on which an expression fails (a division by zero, an integer overflow, a cast that
//! does not fit): the row goes to the dead letters with the expression, its place in the
//! query and the input line it was read from, and the query goes on. With
//! `on_error = "fail"` (the operator's param, or `anduin run --on-error fail` for every
//! operator) the query stops instead, with the same facts in its error.
//!
//! A function that runs out of its resources (a user-defined function's fuel: a runaway
//! loop) is different: no row's fault, and as slow on every row. The row is found, and the
//! query stops naming it whatever `on_error` says ([`Evaluated::Exhausted`],
//! [`RowErrors::exhausted`]).
//!
//! Expressions are evaluated on whole batches. Only when a batch fails is it evaluated again
//! in halves, down to the single rows that fail: a batch without a failing row costs nothing
//! more, and one failing row among `n` costs about `2 log2 n` more evaluations.

use std::sync::Arc;

use anduin_expr::{ExprError, ExprSite};
use anduin_graph::{ParamKind, ParamSpec};
use anduin_spec::Text;
use anduin_types::Pos;
use arrow::record_batch::RecordBatch;

use crate::dead_letter::{row_as_json, DeadLetter, RejectedRow};
use crate::origins::RowOrigins;
use crate::OperatorError;

/// The `on_error` param of operators that evaluate expressions.
pub const ON_ERROR: ParamSpec = ParamSpec {
    name: "on_error",
    required: false,
    kind: ParamKind::OneOf(&["dead_letter", "fail"]),
    default: None,
    doc: "what a row does when an expression fails on it (division by zero, overflow, a cast that does not fit): `dead_letter` sends it to the dead-letter file with the expression and its input line, and goes on; `fail` stops the query (default: `anduin run --on-error`, whose default is `dead_letter`)",
};

/// What a row on which an expression fails does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnError {
    /// It goes to the dead letters and the query goes on.
    #[default]
    DeadLetter,
    /// The query stops with an error that names the row.
    Fail,
}

impl OnError {
    /// The value of param `on_error`, if it is set.
    pub fn param(p: &crate::Params<'_>) -> Option<OnError> {
        p.text("on_error").map(|t| match t.as_str() {
            "fail" => OnError::Fail,
            _ => OnError::DeadLetter,
        })
    }
}

/// An expression of an operator, as a rejected row names it.
#[derive(Debug, Clone)]
pub struct ExprAt {
    /// What the expression is to the operator: "column `q`", "condition", "aggregate `s`".
    pub role: String,
    /// The expression's text.
    pub text: String,
    /// Where it starts in the query file.
    pub pos: Pos,
}

impl ExprAt {
    /// The expression `site`, compiled from param text `text`.
    pub fn new(role: impl Into<String>, text: &Text, site: &ExprSite) -> Self {
        let pos = if site.line == 0 {
            text.pos()
        } else {
            text.pos_at_line_col(site.line, site.col)
        };
        Self {
            role: role.into(),
            text: site.text.clone(),
            pos,
        }
    }

    /// `FILE:LINE:COL` (or `LINE:COL` without a file name), if the place is known.
    pub fn at(&self, query_file: Option<&str>) -> Option<String> {
        if !self.pos.is_known() {
            return None;
        }
        Some(match query_file {
            Some(f) => format!("{f}:{}:{}", self.pos.line, self.pos.col),
            None => format!("{}:{}", self.pos.line, self.pos.col),
        })
    }
}

/// One row on which expression `expr` failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowFailure {
    /// The row in the batch.
    pub row: usize,
    /// Which of the operator's expressions failed (an index into its [`ExprAt`]s).
    pub expr: usize,
    /// The error.
    pub message: String,
}

/// The result of an evaluation over part of a batch.
#[derive(Debug)]
pub enum Piece<T> {
    /// Rows `offset..offset + len` evaluated to `value`.
    Good {
        /// The first row.
        offset: usize,
        /// How many rows.
        len: usize,
        /// The result on those rows.
        value: T,
    },
    /// A row on which an expression failed.
    Bad(RowFailure),
}

/// What [`evaluate_rows`] found.
#[derive(Debug)]
pub enum Evaluated<T> {
    /// It held on every row: the result on the whole batch (the one evaluation).
    Whole(T),
    /// It failed on some row: the pieces cover every row once, in order.
    Split(Vec<Piece<T>>),
    /// A function ran out of resources on this row ([`anduin_expr::ExprErrorKind::Exhausted`]):
    /// the query stops ([`RowErrors::exhausted`]). The rows after it were not evaluated.
    Exhausted(RowFailure),
}

/// Evaluates `eval` on `batch` and, where it fails, on halves, down to the single rows that
/// fail. `eval` reports a failure as the index of the expression that failed and its error.
/// The first row on which a function runs out of resources ends the search.
pub fn evaluate_rows<T>(
    batch: &RecordBatch,
    eval: &mut impl FnMut(&RecordBatch) -> Result<T, (usize, ExprError)>,
) -> Evaluated<T> {
    match eval(batch) {
        Ok(value) => Evaluated::Whole(value),
        Err(failure) => {
            let mut pieces = Vec::new();
            match split(batch, 0, failure, eval, &mut pieces) {
                Some(exhausted) => Evaluated::Exhausted(exhausted),
                None => Evaluated::Split(pieces),
            }
        }
    }
}

/// `batch` (rows from `offset` on), on which `eval` failed with `failure`, in halves; the
/// row on which a function ran out of resources, if one did (the search stops there).
fn split<T>(
    batch: &RecordBatch,
    offset: usize,
    (expr, error): (usize, ExprError),
    eval: &mut impl FnMut(&RecordBatch) -> Result<T, (usize, ExprError)>,
    out: &mut Vec<Piece<T>>,
) -> Option<RowFailure> {
    let len = batch.num_rows();
    if len <= 1 {
        if len == 1 {
            let failure = RowFailure {
                row: offset,
                expr,
                message: error.message,
            };
            if error.kind == anduin_expr::ExprErrorKind::Exhausted {
                return Some(failure);
            }
            out.push(Piece::Bad(failure));
        }
        return None;
    }
    let half = len / 2;
    for (start, n) in [(0, half), (half, len - half)] {
        let part = batch.slice(start, n);
        match eval(&part) {
            Ok(value) => out.push(Piece::Good {
                offset: offset + start,
                len: n,
                value,
            }),
            Err(failure) => {
                if let Some(exhausted) = split(&part, offset + start, failure, eval, out) {
                    return Some(exhausted);
                }
            }
        }
    }
    None
}

/// The failures among `pieces`.
pub fn failures<T>(pieces: &[Piece<T>]) -> Vec<RowFailure> {
    pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Bad(f) => Some(f.clone()),
            Piece::Good { .. } => None,
        })
        .collect()
}

/// Which rows of a batch of `rows` rows no expression failed on.
pub fn kept_rows(rows: usize, failed: &[RowFailure]) -> arrow::array::BooleanArray {
    let mut keep = vec![true; rows];
    for f in failed {
        if let Some(k) = keep.get_mut(f.row) {
            *k = false;
        }
    }
    arrow::array::BooleanArray::from(keep)
}

/// What one operator instance does with rows its expressions fail on.
#[derive(Debug, Clone)]
pub struct RowErrors {
    operator: String,
    on_error: OnError,
    dead_letter: Arc<DeadLetter>,
    exprs: Vec<ExprAt>,
    query_file: Option<Arc<str>>,
}

impl RowErrors {
    /// For operator `operator` with expressions `exprs` and `on_error` param `param` (unset:
    /// dead letters).
    pub fn new(
        operator: &str,
        exprs: Vec<ExprAt>,
        param: Option<OnError>,
        ctx: &crate::BuildContext,
    ) -> Self {
        Self {
            operator: operator.to_string(),
            on_error: param.unwrap_or_default(),
            dead_letter: Arc::clone(&ctx.dead_letter),
            exprs,
            query_file: ctx.query_file.clone(),
        }
    }

    /// The operator's expressions changed while running (a meta query): rejected rows name
    /// these from now on.
    pub fn set_exprs(&mut self, exprs: Vec<ExprAt>) {
        self.exprs = exprs;
    }

    /// Reports rows `failed` of `batch` (whose rows came from `origins`, if known): each goes
    /// to the dead letters, or, with `on_error = "fail"`, the first stops the query.
    pub fn reject(
        &self,
        batch: &RecordBatch,
        failed: &[RowFailure],
        origins: Option<&RowOrigins>,
    ) -> Result<(), OperatorError> {
        for f in failed {
            let origin = origins
                .and_then(|o| o.get(f.row))
                .map(|(input, line)| (input.to_string(), line));
            self.reject_row(|| row_as_json(batch, f.row), f.expr, &f.message, origin)?;
        }
        Ok(())
    }

    /// The error that stops the query because a function ran out of resources on row
    /// `failure` of `batch` (whose rows came from `origins`, if known), whatever `on_error`
    /// says.
    pub fn exhausted(&self, failure: &RowFailure, origins: Option<&RowOrigins>) -> OperatorError {
        let origin = origins
            .and_then(|o| o.get(failure.row))
            .map(|(input, line)| (input.to_string(), line));
        self.exhausted_row(failure.expr, &failure.message, origin)
    }

    /// The error that stops the query because expression `expr` ran out of resources
    /// (`message`) on a row read at `origin`, if known.
    pub fn exhausted_row(
        &self,
        expr: usize,
        message: &str,
        origin: Option<(String, u64)>,
    ) -> OperatorError {
        let expr = self.exprs.get(expr);
        OperatorError::Exhausted(Box::new(crate::error::BadRow {
            operator: self.operator.clone(),
            expression: expr.map(|e| format!("{} `{}`", e.role, e.text)),
            at: expr.and_then(|e| e.at(self.query_file.as_deref())),
            origin,
            reason: message.to_string(),
        }))
    }

    /// Reports one row, given as a JSON object by `row` (called only when it is written), on
    /// which expression `expr` failed with `message`; `origin` is where it was read, if known.
    pub fn reject_row(
        &self,
        row: impl FnOnce() -> serde_json::Value,
        expr: usize,
        message: &str,
        origin: Option<(String, u64)>,
    ) -> Result<(), OperatorError> {
        let expr = self.exprs.get(expr);
        let at = expr.and_then(|e| e.at(self.query_file.as_deref()));
        if self.on_error == OnError::Fail {
            return Err(OperatorError::BadRow(Box::new(crate::error::BadRow {
                operator: self.operator.clone(),
                expression: expr.map(|e| format!("{} `{}`", e.role, e.text)),
                at,
                origin,
                reason: message.to_string(),
            })));
        }
        let rejected = RejectedRow {
            reason: message.to_string(),
            expression: expr.map(|e| e.text.clone()),
            at,
            row: row(),
            origin,
        };
        self.dead_letter
            .reject_row(&self.operator, &rejected)
            .map_err(|e| self.dead_letter.write_error(&self.operator, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int64Array};
    use arrow::datatypes::{DataType, Field, Schema};

    fn batch(values: &[i64]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("b", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(values.to_vec()))])
            .expect("one column")
    }

    /// 100 / b, failing where b is 0.
    fn divide(b: &RecordBatch) -> Result<Vec<i64>, (usize, ExprError)> {
        let col = b
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ints");
        col.values()
            .iter()
            .map(|v| {
                100i64
                    .checked_div(*v)
                    .ok_or_else(|| (0, ExprError::whole("Divide by zero")))
            })
            .collect()
    }

    #[test]
    fn a_batch_without_failures_is_evaluated_once() {
        let mut calls = 0;
        let pieces = evaluate_rows(&batch(&[1, 2, 4]), &mut |b: &RecordBatch| {
            calls += 1;
            divide(b)
        });
        assert_eq!(calls, 1);
        assert!(matches!(&pieces, Evaluated::Whole(value) if value == &[100, 50, 25]));
    }

    #[test]
    fn a_batch_of_one_failing_row_is_that_row() {
        let Evaluated::Split(pieces) = evaluate_rows(&batch(&[0]), &mut divide) else {
            panic!("the row fails");
        };
        assert_eq!(pieces.len(), 1);
        assert_eq!(failures(&pieces).len(), 1);
    }

    /// 100 / b, failing where b is 0, and running out of resources on a batch holding a 7;
    /// counts its calls.
    fn divide_or_run_away(
        calls: &mut usize,
    ) -> impl FnMut(&RecordBatch) -> Result<Vec<i64>, (usize, ExprError)> + '_ {
        move |b: &RecordBatch| {
            *calls += 1;
            let col = b
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("ints");
            if col.values().contains(&7) {
                let mut e = ExprError::whole("function `spin` ran out of fuel");
                e.kind = anduin_expr::ExprErrorKind::Exhausted;
                return Err((0, e));
            }
            divide(b)
        }
    }

    #[test]
    fn a_row_a_function_runs_out_of_resources_on_ends_the_search_naming_it() {
        for seed in 0..100u64 {
            let n = 2 + (seed * 53 % 400) as usize;
            let values: Vec<i64> = (0..n as u64)
                .map(|i| ((i * 7919 + seed * 104_729) % 31) as i64)
                .collect();
            // With zeros (a row's fault) and without: the first 7 is found either way.
            for values in [values.clone(), values.iter().map(|v| (*v).max(1)).collect()] {
                let mut calls = 0;
                let evaluated = evaluate_rows(&batch(&values), &mut divide_or_run_away(&mut calls));
                match (values.iter().position(|v| *v == 7), evaluated) {
                    (Some(first), Evaluated::Exhausted(f)) => {
                        assert_eq!(f.row, first, "seed {seed}");
                        assert_eq!(f.message, "function `spin` ran out of fuel");
                        // Without rows at fault, the search only halves towards it.
                        let halvings = (usize::BITS - n.leading_zeros()) as usize;
                        assert!(
                            values.contains(&0) || calls <= 2 * halvings + 1,
                            "seed {seed}: {calls} calls for {n} rows"
                        );
                    }
                    (None, Evaluated::Whole(_) | Evaluated::Split(_)) => {}
                    (first, e) => panic!("seed {seed}: the first 7 at {first:?}, evaluated {e:?}"),
                }
            }
        }
    }

    #[test]
    fn the_failing_rows_are_found_and_every_other_row_evaluated_in_order() {
        for seed in 0..200u64 {
            let n = 1 + (seed * 37 % 300) as usize;
            let values: Vec<i64> = (0..n as u64)
                .map(|i| ((i * 7919 + seed * 104_729) % 23) as i64)
                .collect();
            let pieces = match evaluate_rows(&batch(&values), &mut divide) {
                Evaluated::Whole(value) => vec![Piece::Good {
                    offset: 0,
                    len: n,
                    value,
                }],
                Evaluated::Split(pieces) => pieces,
                Evaluated::Exhausted(f) => panic!("nothing runs out here: {f:?}"),
            };
            let mut row = 0;
            let mut results = Vec::new();
            for p in &pieces {
                match p {
                    Piece::Good { offset, len, value } => {
                        assert_eq!(*offset, row);
                        assert_eq!(value.len(), *len);
                        results.extend(value.iter().map(|v| Some(*v)));
                        row += len;
                    }
                    Piece::Bad(f) => {
                        assert_eq!(f.row, row);
                        results.push(None);
                        row += 1;
                    }
                }
            }
            let naive: Vec<Option<i64>> = values.iter().map(|v| 100i64.checked_div(*v)).collect();
            assert_eq!(results, naive, "seed {seed}");
            let keep = kept_rows(n, &failures(&pieces));
            assert_eq!(keep.true_count(), naive.iter().flatten().count());
            assert_eq!(keep.len(), n);
        }
    }
}
