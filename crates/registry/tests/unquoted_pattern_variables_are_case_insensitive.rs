//! Issue 18: pattern variables are identifiers as in SQL. Unquoted, they are case-insensitive
//! and named in upper case: `pattern = "a b+"` with `B AS b.value > A.value`, `COUNT(b.*)`
//! and `skip to last b` is the pattern `A B+`, and `CLASSIFIER()` says `'A'` and `'B'`.
//! (Double-quoted variables keep their case: the matcher's and the SQL lowering's unit tests.)

use crate::common;

use std::sync::Arc;

use anduin_operator_api::{Collector, OperatorError};
use anduin_types::Watermark;
use arrow::array::{Array, Int64Array, StringArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;

/// (value, match number, variable, B rows so far) of every row matched.
#[derive(Default)]
struct Collect(Vec<(i64, i64, String, i64)>);

impl Collector for Collect {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        let int = |i: usize| {
            b.column(i)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("int")
                .clone()
        };
        let (value, m, n) = (int(2), int(3), int(5));
        let cls = b
            .column(4)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("classifier");
        for i in 0..b.num_rows() {
            self.0.push((
                value.value(i),
                m.value(i),
                cls.value(i).to_string(),
                n.value(i),
            ));
        }
        Ok(())
    }
}

#[test]
fn a_lower_case_variable_is_the_upper_case_one_and_is_classified_in_upper_case() {
    let mut op = common::operator(
        r#"type name = "T" { column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "value", type = "int" }
operator name = "g", type = "generator" { output name = "in", type = "T" }
operator name = "op", type = "pattern" {
  input name = "in"
  param partition_by = "k" param order_by = "ts" param pattern = "a b+"
  param define = "B AS b.value > A.value"
  param rows_per_match = "all"
  param after_match = "skip to last b"
  param measures = "MATCH_NUMBER() AS m, CLASSIFIER() AS cls, COUNT(b.*) AS n"
  output name = "out" }
operator name = "d", type = "discard" { input name = "out" }"#,
    );
    let values = [0, 1, 2, 0, 5];
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        Field::new("k", DataType::Int64, true),
        Field::new("value", DataType::Int64, true),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(TimestampMillisecondArray::from(
                (0..values.len() as i64).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(vec![0; values.len()])),
            Arc::new(Int64Array::from(values.to_vec())),
        ],
    )
    .expect("valid");
    let mut out = Collect::default();
    op.process_batch(0, batch, &mut out).expect("processes");
    op.handle_watermark(Watermark::MAX, &mut out)
        .expect("advances");
    op.on_end_of_input(&mut out).expect("ends");
    let row = |v: i64, m: i64, c: &str, n: i64| (v, m, c.to_string(), n);
    // 0 then the rises 1, 2; skip to the last B (2), which starts nothing (0 is no rise
    // above 2); 0 then 5.
    assert_eq!(
        out.0,
        vec![
            row(0, 1, "A", 0),
            row(1, 1, "B", 1),
            row(2, 1, "B", 2),
            row(0, 2, "A", 0),
            row(5, 2, "B", 1),
        ]
    );
}
