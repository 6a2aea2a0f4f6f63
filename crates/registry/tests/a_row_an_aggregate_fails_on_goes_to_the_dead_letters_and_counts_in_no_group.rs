//! A GROUP BY without a window (`aggregate`) treats a row its aggregate fails on as a window
//! does: the row goes to the dead letters, naming the aggregate, and counts in no group; the
//! other rows of its batch are aggregated as usual. With `on_error = "fail"` the query stops.

use crate::common;

use std::sync::Arc;

use anduin_operator_api::{Collector, OperatorError};
use arrow::array::{Array, Int64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;

fn query(on_error: &str) -> String {
    format!(
        r#"type name = "T" {{ column name = "k", type = "int" column name = "v", type = "int" }}
operator name = "g", type = "generator" {{ output name = "s", type = "T" }}
operator name = "op", type = "aggregate" {{
  input name = "s" param keys = "k" {on_error}
  param aggregates = "COUNT(*) AS n, SUM(100 / v) AS q"
  output name = "out" }}
operator name = "d", type = "writer" {{ input name = "out" param path = "o.csv" param mode = "changelog" }}"#
    )
}

fn batch() -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(vec![1, 1, 2])),
            Arc::new(Int64Array::from(vec![10, 0, 50])),
        ],
    )
    .expect("valid")
}

/// `(k, n, q)` of every row emitted.
#[derive(Default)]
struct Rows(Vec<(i64, i64, i64)>);

impl Collector for Rows {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        let int = |i: usize| {
            b.column(i)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("ints")
                .clone()
        };
        let (k, n, q) = (int(0), int(1), int(2));
        for i in 0..b.num_rows() {
            self.0.push((k.value(i), n.value(i), q.value(i)));
        }
        Ok(())
    }
}

#[test]
fn the_failing_row_goes_to_the_dead_letters_and_the_others_count() {
    let (mut op, dead_letters) = common::operator_and_dead_letters(&query(""));
    let mut out = Rows::default();
    op.process_batch(0, batch(), &mut out).expect("processes");
    assert_eq!(out.0, [(1, 1, 10), (2, 1, 2)]);
    assert_eq!(dead_letters.rejected_rows(), 1);
}

#[test]
fn with_on_error_fail_the_query_stops() {
    let mut op = common::operator(&query(r#"param on_error = "fail""#));
    let e = op
        .process_batch(0, batch(), &mut Rows::default())
        .expect_err("stops");
    assert!(e.to_string().contains("aggregate `q`"), "{e}");
}
