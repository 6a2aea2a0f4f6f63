//! Property test: `filter` and `map` over random batches give what a naive row-by-row
//! evaluation of the same SQL gives (three-valued logic, nulls included).

use crate::common;

use std::sync::Arc;

use anduin_operator_api::{Collector, Operator, OperatorError};
use arrow::array::{Array, Int64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use proptest::prelude::*;

struct Collect(Vec<RecordBatch>);

impl Collector for Collect {
    fn collect(&mut self, _port: usize, batch: RecordBatch) -> Result<(), OperatorError> {
        self.0.push(batch);
        Ok(())
    }
}

/// An instance of the operator `op_block` (a filter or map over stream `s` of type T(a, b)).
fn instance(op_block: &str) -> Box<dyn Operator> {
    let src = format!(
        r#"type name = "T" {{ column name = "a", type = "int" column name = "b", type = "int" }}
operator name = "g", type = "generator" {{ output name = "s", type = "T" }}
{op_block}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    );
    common::operator(&src)
}

fn batch(rows: &[(Option<i64>, Option<i64>)]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Int64, true),
    ]));
    let a: Int64Array = rows.iter().map(|r| r.0).collect();
    let b: Int64Array = rows.iter().map(|r| r.1).collect();
    RecordBatch::try_new(schema, vec![Arc::new(a), Arc::new(b)]).expect("valid")
}

fn ints(b: &RecordBatch, col: usize) -> Vec<Option<i64>> {
    let arr = b
        .column(col)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("ints");
    (0..arr.len())
        .map(|i| arr.is_valid(i).then(|| arr.value(i)))
        .collect()
}

/// SQL's three-valued AND / OR / comparison over nullable values.
fn lt(x: Option<i64>, y: Option<i64>) -> Option<bool> {
    Some(x? < y?)
}

fn and(x: Option<bool>, y: Option<bool>) -> Option<bool> {
    match (x, y) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

fn or(x: Option<bool>, y: Option<bool>) -> Option<bool> {
    match (x, y) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

fn rows() -> impl Strategy<Value = Vec<Vec<(Option<i64>, Option<i64>)>>> {
    let cell = prop_oneof![1 => Just(None), 6 => (-50i64..50).prop_map(Some)];
    prop::collection::vec(prop::collection::vec((cell.clone(), cell), 0..200), 1..5)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn filter_keeps_exactly_the_rows_where_the_condition_is_true(batches in rows(), k in -50i64..50) {
        let mut op = instance(&format!(
            r#"operator name = "op", type = "filter" {{ input name = "s"
               param condition = "(a < {k} AND b > a) OR (b % 3 = 0 AND a IS NOT NULL)"
               output name = "out", type = "T" }}"#
        ));
        let mut out = Collect(vec![]);
        let mut expected = vec![];
        for rows in &batches {
            op.process_batch(0, batch(rows), &mut out).expect("runs");
            for &(a, b) in rows {
                let keep = or(
                    and(lt(a, Some(k)), lt(a, b)),
                    and(b.map(|b| b % 3 == 0), a.map(|_| true)),
                );
                if keep == Some(true) {
                    expected.push((a, b));
                }
            }
        }
        let got: Vec<(Option<i64>, Option<i64>)> = out
            .0
            .iter()
            .flat_map(|b| ints(b, 0).into_iter().zip(ints(b, 1)))
            .collect();
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn map_computes_each_row_like_sql(batches in rows()) {
        let mut op = instance(
            r#"operator name = "op", type = "map" { input name = "s"
               param columns = "a * 2 + 1 AS x, COALESCE(b, -1) AS y, CASE WHEN a > b THEN a ELSE b END AS m"
               output name = "out" }"#,
        );
        let mut out = Collect(vec![]);
        let mut expected = vec![];
        for rows in &batches {
            op.process_batch(0, batch(rows), &mut out).expect("runs");
            for &(a, b) in rows {
                let m = match (a, b) {
                    (Some(a), Some(b)) if a > b => Some(a),
                    _ => b,
                };
                expected.push((a.map(|a| a * 2 + 1), Some(b.unwrap_or(-1)), m));
            }
        }
        let got: Vec<_> = out
            .0
            .iter()
            .flat_map(|b| {
                let (x, y, m) = (ints(b, 0), ints(b, 1), ints(b, 2));
                x.into_iter().zip(y).zip(m).map(|((x, y), m)| (x, y, m)).collect::<Vec<_>>()
            })
            .collect();
        prop_assert_eq!(got, expected);
    }
}
