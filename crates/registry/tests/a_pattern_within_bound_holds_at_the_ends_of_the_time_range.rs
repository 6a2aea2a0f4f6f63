//! Issue 22, point 3: a pattern's `within` bound at the ends of the `i64` time range. Rows
//! `i64::MAX` apart are not within 10 ms of each other (the difference does not wrap), and a
//! row at `i64::MAX` still extends a match that started 5 ms before it when the input ends
//! (the end of input, +∞, releases every row before the time bound ends the match).

use crate::common;

use std::sync::Arc;

use anduin_operator_api::{Collector, Operator, OperatorError};
use anduin_types::Watermark;
use arrow::array::{Array, Int64Array, StringArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;

/// `A B` within 10 ms, every row of a match with its match number and variable.
fn pattern() -> Box<dyn Operator> {
    common::operator(
        r#"type name = "T" { column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "value", type = "int" }
operator name = "g", type = "generator" { output name = "in", type = "T" }
operator name = "op", type = "pattern" {
  input name = "in"
  param partition_by = "k" param order_by = "ts" param pattern = "A B"
  param define = "A AS value = 1"
  param define = "B AS value = 2"
  param within = "10ms"
  param rows_per_match = "all"
  param measures = "MATCH_NUMBER() AS m, CLASSIFIER() AS cls"
  output name = "out" }
operator name = "d", type = "discard" { input name = "out" }"#,
    )
}

/// (time, variable) of every row matched.
#[derive(Default)]
struct Collect(Vec<(i64, String)>);

impl Collector for Collect {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        let ts = b
            .column(0)
            .as_any()
            .downcast_ref::<TimestampMillisecondArray>()
            .expect("ts");
        let cls = b
            .column(4)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("classifier");
        for i in 0..b.num_rows() {
            self.0.push((ts.value(i), cls.value(i).to_string()));
        }
        Ok(())
    }
}

/// Rows of (time, value) of one key, then `watermarks`, then +∞ and the end of input.
fn run(rows: &[(i64, i64)], watermarks: &[i64]) -> Vec<(i64, String)> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        Field::new("k", DataType::Int64, true),
        Field::new("value", DataType::Int64, true),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(TimestampMillisecondArray::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(vec![0; rows.len()])),
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
        ],
    )
    .expect("valid");
    let mut op = pattern();
    let mut out = Collect::default();
    op.process_batch(0, batch, &mut out).expect("processes");
    for wm in watermarks.iter().copied().chain([i64::MAX]) {
        op.handle_watermark(Watermark(wm), &mut out)
            .expect("advances");
    }
    op.on_end_of_input(&mut out).expect("ends");
    out.0
}

#[test]
fn a_row_at_the_last_millisecond_completes_a_match_within_the_bound() {
    let (a, b) = (i64::MAX - 5, i64::MAX);
    // The watermarks of a source without delay: below +∞ (i64::MAX - 1 after the row at
    // i64::MAX), then +∞.
    assert_eq!(
        run(&[(a, 1), (b, 2)], &[a - 1, i64::MAX - 1]),
        vec![(a, "A".to_string()), (b, "B".to_string())]
    );
}

#[test]
fn rows_at_both_ends_of_the_range_are_not_within_the_bound() {
    // Both rows are released at +∞, the second one's time compared with the first's.
    assert_eq!(run(&[(i64::MIN, 1), (i64::MAX - 1, 2)], &[]), vec![]);
    assert_eq!(run(&[(i64::MIN, 1), (i64::MIN + 9, 2)], &[]).len(), 2);
}
