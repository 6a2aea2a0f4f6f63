//! A row whose event-time column is null when it reaches a window, a join or a pattern (a map
//! before it computed a null time) cannot be placed in time: it goes to the dead letters as a
//! rejected row, and is neither dropped silently nor counted as late. Rows behind the
//! watermark are counted as late (`late_rows`) by each of them.

use crate::common;

use std::sync::Arc;

use anduin_operator_api::{Collector, OperatorError};
use anduin_types::Watermark;
use arrow::array::Int64Array;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;

const TYPES: &str = r#"type name = "E" { column name = "ts", type = "int" column name = "k", type = "int" column name = "v", type = "int" }
operator name = "g", type = "generator" { output name = "e", type = "E" }
operator name = "g2", type = "generator" { output name = "f", type = "E" }"#;

/// A row `(ts, k, v)` of `E`.
type Row = (Option<i64>, i64, i64);

/// What the operator is fed.
enum Step<'a> {
    /// Rows on an input.
    Rows(usize, &'a [Row]),
    /// A watermark (on every input).
    Watermark(i64),
}

/// Rows in the schema of `E`.
fn batch(rows: &[Row]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, true),
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
    ]));
    let ts: Vec<Option<i64>> = rows.iter().map(|r| r.0).collect();
    let k: Vec<i64> = rows.iter().map(|r| r.1).collect();
    let v: Vec<i64> = rows.iter().map(|r| r.2).collect();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ts)),
            Arc::new(Int64Array::from(k)),
            Arc::new(Int64Array::from(v)),
        ],
    )
    .expect("batch")
}

/// Counts the rows emitted.
#[derive(Default)]
struct Count(usize);

impl Collector for Count {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        self.0 += b.num_rows();
        Ok(())
    }
}

/// Feeds `steps` to the operator `op_text`, completes event time and ends; returns the rows
/// out, the rows the dead letters got and the operator's `late_rows`.
fn run(op_text: &str, steps: &[Step<'_>]) -> (usize, u64, u64) {
    let src = format!(
        "{TYPES}\n{op_text}\noperator name = \"d\", type = \"discard\" {{ input name = \"out\" }}"
    );
    let (mut op, dead_letters) = common::operator_and_dead_letters(&src);
    let mut out = Count::default();
    for step in steps {
        match step {
            Step::Rows(input, rows) => op
                .process_batch(*input, batch(rows), &mut out)
                .expect("processes"),
            Step::Watermark(w) => {
                let _ = op
                    .handle_watermark(Watermark(*w), &mut out)
                    .expect("watermark");
            }
        }
    }
    let _ = op
        .handle_watermark(Watermark::MAX, &mut out)
        .expect("watermark");
    op.on_end_of_input(&mut out).expect("ends");
    let late = op
        .metrics()
        .iter()
        .find(|(name, _)| *name == "late_rows")
        .map(|(_, v)| *v)
        .expect("the operator reports late_rows");
    (out.0, dead_letters.rejected_rows(), late)
}

#[test]
fn a_window_sends_a_row_without_an_event_time_to_the_dead_letters() {
    let op = r#"operator name = "op", type = "window" { input name = "e" param kind = "tumbling" param size = "1s" param time = "ts" param aggregates = "COUNT(*) AS n" output name = "out" }"#;
    let rows = [(Some(1), 1, 1), (None, 1, 2), (Some(2), 1, 3)];
    assert_eq!(
        run(op, &[Step::Rows(0, &rows)]),
        (1, 1, 0),
        "one window, one reject"
    );
    let late = [(Some(1500), 1, 4), (Some(999), 1, 5)];
    let steps = [
        Step::Rows(0, &rows),
        Step::Watermark(1000),
        Step::Rows(0, &late),
    ];
    assert_eq!(
        run(op, &steps),
        (2, 1, 1),
        "two windows, one reject, one late row"
    );
}

#[test]
fn a_join_sends_a_row_without_an_event_time_to_the_dead_letters_from_either_side() {
    let op = r#"operator name = "op", type = "join" { input name = "e" input name = "f" param kind = "interval" param lower = "-1s" param upper = "1s" param on = "e.k = f.k" param left_time = "ts" param right_time = "ts" output name = "out" }"#;
    let left = [(Some(1), 1, 1), (None, 1, 2)];
    let right = [(None, 1, 3), (Some(2), 1, 4)];
    assert_eq!(
        run(op, &[Step::Rows(0, &left), Step::Rows(1, &right)]),
        (1, 2, 0),
        "one pair, two rejects"
    );
    let late = [(Some(5), 1, 5)];
    let steps = [
        Step::Rows(0, &left),
        Step::Rows(1, &right),
        Step::Watermark(10),
        Step::Rows(1, &late),
    ];
    assert_eq!(run(op, &steps), (1, 2, 1), "and one late row");
}

#[test]
fn a_pattern_sends_a_row_without_an_event_time_to_the_dead_letters() {
    let op = r#"operator name = "op", type = "pattern" { input name = "e" param order_by = "ts" param pattern = "A B" param define = "A AS A.v = 1" param define = "B AS B.v = 3" param measures = "A.ts AS a_ts" output name = "out" }"#;
    let rows = [(Some(1), 1, 1), (None, 1, 2), (Some(2), 1, 3)];
    assert_eq!(
        run(op, &[Step::Rows(0, &rows)]),
        (1, 1, 0),
        "A then B, the row between them rejected"
    );
    let late = [(Some(3), 1, 1)];
    let steps = [
        Step::Rows(0, &rows),
        Step::Watermark(10),
        Step::Rows(0, &late),
    ];
    assert_eq!(run(op, &steps), (1, 1, 1), "and one late row");
}
