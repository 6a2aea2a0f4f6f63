//! Expressions planned over only the input columns they read, in an order that spares nested
//! `CASE`s from building in time proportional to the cube of their depth.
//!
//! DataFusion's `CASE` (55) keeps, besides its branches, a copy of them with their column
//! indices renumbered to count only the columns it reads, to evaluate them on narrower
//! batches. Building a `CASE` renumbers the columns of every `CASE` nested in it, which
//! rebuilds each of them, and each rebuild walks its own branches again: `CASE WHEN value > 0
//! THEN CASE WHEN … END ELSE 0 END` 198 levels deep took 5 s to compile (debug build), 100
//! levels 0.8 s. A `CASE` whose columns are the first ones of its input, in order, renumbers
//! nothing. So an expression is planned over the columns it reads, those read by the most
//! deeply nested `CASE` first: the columns a `CASE` reads include those of every `CASE` inside
//! it, so along a nest of them each reads the first columns of the input, and the same 198
//! levels compile in 0.1–0.2 s. (Only `CASE`s nested side by side that read different columns
//! can still renumber.) The compiled expression evaluates on its input narrowed to those
//! columns, in that order ([`input`]).

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use datafusion_common::tree_node::{TreeNode, TreeNodeRecursion, TreeNodeVisitor};
use datafusion_common::{DFSchema, DataFusionError};
use datafusion_expr::Expr;

use crate::{ExprError, Scope};

/// The input columns an expression is planned over, and their schema.
pub(crate) struct Narrowed {
    /// The indices in the scope's schema of the columns the expression reads, in the order it
    /// is planned over them; `None` when that is all of them in the scope's order, or none
    /// (then its own indices are the input's).
    pub columns: Option<Arc<[usize]>>,
    /// The schema to plan it over: the scope's, or the scope's narrowed to `columns`.
    pub df_schema: DFSchema,
}

/// The columns of `scope` that `logical` (planned over `df_schema`, the scope's) reads, those
/// of the most deeply nested `CASE` first, then in the scope's order.
pub(crate) fn narrowed(
    logical: &Expr,
    df_schema: &DFSchema,
    scope: &Scope,
) -> Result<Narrowed, DataFusionError> {
    let mut depths = CaseDepths {
        df_schema,
        depth: 0,
        deepest: BTreeMap::new(),
    };
    logical.visit(&mut depths)?;
    let mut columns: Vec<(usize, usize)> = depths.deepest.into_iter().collect();
    columns.sort_by_key(|&(index, deepest)| (Reverse(deepest), index));
    let columns: Vec<usize> = columns.into_iter().map(|(index, _)| index).collect();
    let identity = columns.iter().enumerate().all(|(i, &c)| i == c);
    if columns.is_empty() || (identity && columns.len() == scope.schema.fields().len()) {
        return Ok(Narrowed {
            columns: None,
            df_schema: df_schema.clone(),
        });
    }
    let schema = scope.schema.project(&columns)?;
    Ok(Narrowed {
        df_schema: DFSchema::try_from_qualified_schema(scope.qualifier.as_str(), &schema)?,
        columns: Some(columns.into()),
    })
}

/// Per column read, the most `CASE`s around a reference to it.
struct CaseDepths<'a> {
    df_schema: &'a DFSchema,
    /// `CASE`s around the node visited.
    depth: usize,
    /// By index in `df_schema`.
    deepest: BTreeMap<usize, usize>,
}

impl<'n> TreeNodeVisitor<'n> for CaseDepths<'_> {
    type Node = Expr;

    fn f_down(&mut self, node: &'n Expr) -> Result<TreeNodeRecursion, DataFusionError> {
        match node {
            Expr::Case(_) => self.depth += 1,
            Expr::Column(c) => {
                let deepest = self
                    .deepest
                    .entry(self.df_schema.index_of_column(c)?)
                    .or_default();
                *deepest = (*deepest).max(self.depth);
            }
            _ => {}
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn f_up(&mut self, node: &'n Expr) -> Result<TreeNodeRecursion, DataFusionError> {
        if let Expr::Case(_) = node {
            self.depth = self.depth.saturating_sub(1);
        }
        Ok(TreeNodeRecursion::Continue)
    }
}

/// `batch` narrowed to `columns`, what an expression planned over them evaluates on.
pub(crate) fn input<'b>(
    columns: Option<&[usize]>,
    batch: &'b RecordBatch,
) -> Result<Cow<'b, RecordBatch>, ExprError> {
    match columns {
        None => Ok(Cow::Borrowed(batch)),
        Some(c) => batch.project(c).map(Cow::Owned).map_err(|e| {
            ExprError::whole(format!(
                "a batch of {} columns does not have the columns {c:?} the expression reads: {e}",
                batch.num_columns()
            ))
        }),
    }
}

/// The index among `columns` (`None`: all) of input column `index`, if it is among them.
pub(crate) fn position(columns: Option<&[usize]>, index: usize) -> Option<usize> {
    match columns {
        None => Some(index),
        Some(c) => c.iter().position(|&k| k == index),
    }
}

/// The input column at `position` among `columns` (`None`: all).
pub(crate) fn original(columns: Option<&[usize]>, position: usize) -> Option<usize> {
    match columns {
        None => Some(position),
        Some(c) => c.get(position).copied(),
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, Float64Array, Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;
    use crate::{compile_aggregates, compile_expr, compile_projection};

    fn scope() -> Scope {
        Scope::new(
            "s",
            Arc::new(Schema::new(vec![
                Field::new("sensor", DataType::Int64, true),
                Field::new("value", DataType::Int64, true),
                Field::new("name", DataType::Utf8, true),
            ])),
        )
    }

    fn batch() -> RecordBatch {
        RecordBatch::try_new(
            Arc::clone(&scope().schema),
            vec![
                Arc::new(Int64Array::from(vec![1, 1, 0, 1])),
                Arc::new(Int64Array::from(vec![5, -5, 5, 3])),
                Arc::new(StringArray::from(vec!["a", "b", "c", "d"])),
            ],
        )
        .expect("a batch")
    }

    #[test]
    fn the_columns_of_the_most_deeply_nested_case_come_first_and_results_are_the_inputs() {
        let e = compile_expr(
            "CASE WHEN sensor > 0 THEN CASE WHEN value > 4 THEN name ELSE 'low' END ELSE 'off' END",
            &scope(),
        )
        .expect("compiles");
        assert_eq!(e.columns.as_deref(), Some(&[1, 2, 0][..]));
        let out = e.evaluate(&batch()).expect("evaluates");
        let out = out.as_any().downcast_ref::<StringArray>().expect("text");
        assert_eq!(out, &StringArray::from(vec!["a", "low", "off", "low"]));
        assert!(e.reads(0) && e.reads(1) && e.reads(2));
    }

    #[test]
    fn a_subset_of_the_columns_is_read_where_it_is() {
        let cols =
            compile_projection("name AS n, value * 2 AS v, s.*", &scope()).expect("compiles");
        assert_eq!(cols[0].columns.as_deref(), Some(&[2][..]));
        // A column as it is names its input column, not its place among those read.
        let named: Vec<Option<usize>> = cols.iter().map(|c| c.column()).collect();
        assert_eq!(named, vec![Some(2), None, Some(0), Some(1), Some(2)]);
        assert!(cols[1].reads(1) && !cols[1].reads(0) && !cols[1].reads(2));
        let v = cols[1].evaluate(&batch()).expect("evaluates");
        assert_eq!(
            v.as_any().downcast_ref::<Int64Array>(),
            Some(&Int64Array::from(vec![10, -10, 10, 6]))
        );
        // Reading no column, or all of them in their order: planned over the input as it is.
        let e = compile_expr("1 + 2", &scope()).expect("compiles");
        assert_eq!(e.columns, None);
        assert_eq!(e.evaluate(&batch()).expect("evaluates").len(), 4);
        let e = compile_expr("sensor + value + length(name)", &scope()).expect("compiles");
        assert_eq!(e.columns, None);
    }

    #[test]
    fn aggregates_read_their_columns_where_they_are() {
        let aggs = compile_aggregates(
            "AVG(value) AS a, SUM(sensor) FILTER (WHERE name <> 'b') AS s",
            &scope(),
        )
        .expect("compiles");
        let avg = aggs[0].clone().with_integer_argument();
        let args = avg.arguments(&batch()).expect("arguments");
        assert_eq!(args[0].data_type(), &DataType::Int64);
        assert!(avg.reads(1) && !avg.reads(0));
        let args = aggs[0].arguments(&batch()).expect("arguments");
        assert_eq!(
            args[0].as_any().downcast_ref::<Float64Array>(),
            Some(&Float64Array::from(vec![5.0, -5.0, 5.0, 3.0]))
        );
        let sum = &aggs[1];
        assert!(sum.reads(0) && sum.reads(2) && !sum.reads(1));
        let kept = sum.filter(&batch()).expect("filter").expect("a filter");
        assert_eq!(
            kept.values().iter().collect::<Vec<_>>(),
            vec![true, false, true, true]
        );
    }

    #[test]
    fn nested_cases_reading_different_columns_evaluate_as_written() {
        // 120 levels on `value` inside one on `sensor`: the order that spares the nest its
        // renumbering must not change what it computes.
        let n = 120;
        let text = format!(
            "CASE WHEN sensor > 0 THEN {}name{} ELSE 'off' END",
            "CASE WHEN value > 0 THEN ".repeat(n),
            " ELSE 'neg' END".repeat(n)
        );
        let e = compile_expr(&text, &scope()).expect("compiles");
        assert_eq!(e.columns.as_deref(), Some(&[1, 2, 0][..]));
        let out = e.evaluate(&batch()).expect("evaluates");
        let out = out.as_any().downcast_ref::<StringArray>().expect("text");
        assert_eq!(out, &StringArray::from(vec!["a", "neg", "off", "d"]));
    }
}
