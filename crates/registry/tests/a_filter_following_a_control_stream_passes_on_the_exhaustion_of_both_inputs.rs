//! A filter following a control stream by event time holds its data rows until the control
//! stream's watermark passes them. Once its data input and its control stream are both
//! exhausted no row and no change can come: the rows still waiting are filtered then, each
//! under the change in force at its time (as the control stream's +∞ would), and its output
//! is exhausted too, so that an operator after it waiting for its input's end (a lookup
//! join's side table) goes on. One input exhausted alone releases nothing.

use crate::common;

use std::sync::Arc;

use anduin_operator_api::{Collector, OperatorError};
use anduin_types::Watermark;
use arrow::array::{Array, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;

use common::operator;

const QUERY: &str = r#"
type name = "Reading" {
  column name = "ts", type = "int"
  column name = "value", type = "int"
}
type name = "Change" {
  column name = "operator", type = "string"
  column name = "param", type = "string"
  column name = "value", type = "string"
  column name = "ts", type = "int"
}
operator name = "data", type = "reader" {
  param path = "data.csv"
  output name = "readings", type = "Reading"
}
operator name = "changes", type = "reader" {
  param path = "changes.csv"
  output name = "changeRows", type = "Change"
}
operator name = "op", type = "filter" {
  input name = "readings"
  control name = "changeRows", time = "ts"
  param condition = "value < 50"
  output name = "out"
}
operator name = "sink", type = "discard" {
  input name = "out"
}
"#;

/// The rows kept, `(ts, value)`, in order.
#[derive(Default)]
struct Rows(Vec<(i64, i64)>);

impl Collector for Rows {
    fn collect(&mut self, _port: usize, batch: RecordBatch) -> Result<(), OperatorError> {
        let col = |i: usize| {
            batch
                .column(i)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("ints")
                .clone()
        };
        let (ts, v) = (col(0), col(1));
        self.0
            .extend((0..batch.num_rows()).map(|i| (ts.value(i), v.value(i))));
        Ok(())
    }
}

fn data(rows: &[(i64, i64)]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, true),
        Field::new("value", DataType::Int64, true),
    ]));
    let (ts, v): (Vec<i64>, Vec<i64>) = rows.iter().copied().unzip();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ts)),
            Arc::new(Int64Array::from(v)),
        ],
    )
    .expect("valid")
}

/// A change of the condition to `value < k` at time `at`.
fn change(at: i64, k: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("operator", DataType::Utf8, true),
        Field::new("param", DataType::Utf8, true),
        Field::new("value", DataType::Utf8, true),
        Field::new("ts", DataType::Int64, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(vec!["op"])),
            Arc::new(StringArray::from(vec!["condition"])),
            Arc::new(StringArray::from(vec![format!("value < {k}")])),
            Arc::new(Int64Array::from(vec![at])),
        ],
    )
    .expect("valid")
}

/// Rows at 10, 20, 30 of values 40, 40, 5, and a change to `value < 10` from time 20; the
/// control stream's watermark at 15 lets the first row through.
fn fed() -> (Box<dyn anduin_operator_api::Operator>, Rows) {
    let mut op = operator(QUERY);
    let mut out = Rows::default();
    op.process_batch(0, data(&[(10, 40), (20, 40), (30, 5)]), &mut out)
        .expect("data");
    op.process_batch(1, change(20, 10), &mut out)
        .expect("a change");
    op.handle_input_watermark(1, Watermark(15), &mut out)
        .expect("control watermark");
    assert_eq!(out.0, [(10, 40)], "the row before the control watermark");
    (op, out)
}

#[test]
fn a_filter_following_a_control_stream_passes_on_the_exhaustion_of_both_inputs() {
    for control_first in [false, true] {
        let (mut op, mut out) = fed();
        let (first, second) = if control_first { (1, 0) } else { (0, 1) };
        assert!(
            !op.on_input_exhausted(first, &mut out).expect("told"),
            "input {first} alone"
        );
        assert_eq!(out.0, [(10, 40)], "input {first} alone releases nothing");
        assert!(
            op.on_input_exhausted(second, &mut out).expect("told"),
            "both inputs exhausted: its output is"
        );
        // 20 is under the change (40 is not below 10), 30 too (5 is).
        assert_eq!(out.0, [(10, 40), (30, 5)]);
        op.handle_watermark(Watermark::MAX, &mut out)
            .expect("the end of event time");
        op.on_end_of_input(&mut out).expect("the end");
        assert_eq!(out.0, [(10, 40), (30, 5)], "nothing more at the end");
    }
}
