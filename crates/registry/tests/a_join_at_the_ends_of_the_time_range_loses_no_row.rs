//! Issue 22, point 3: joins at the ends of the `i64` time range. A window join sends a row
//! whose window would not fit in a timestamp to the dead letters (with the reason) and pairs
//! the rows of the first and last whole windows of the range; an interval join pairs rows
//! next to `i64::MAX`, and a left outer one emits an unmatched left row at `i64::MAX - 3`
//! when the input ends (its `time + upper` is beyond `i64::MAX`, but +∞ is later still).

use crate::common;

use std::sync::Arc;

use anduin_operator_api::{Collector, DeadLetter, DeadLetterTarget, Operator, OperatorError};
use anduin_types::Watermark;
use arrow::array::{Array, Int64Array, TimestampMillisecondArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;

fn join(kind: &str, how: &str, dead_letter: &Arc<DeadLetter>) -> Box<dyn Operator> {
    let src = format!(
        r#"type name = "L" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "v", type = "int" }}
type name = "R" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "w", type = "int" }}
operator name = "gl", type = "generator" {{ output name = "l", type = "L" }}
operator name = "gr", type = "generator" {{ output name = "r", type = "R" }}
operator name = "op", type = "join" {{
  input name = "l" input name = "r" {kind} param how = "{how}"
  param on = "l.k = r.k" param left_time = "ts" param right_time = "ts"
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    );
    common::operator_rejecting_to(&src, dead_letter)
}

/// Rows of (time, value), all of key 0.
fn batch(rows: &[(i64, i64)]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
    ]));
    RecordBatch::try_new(
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
    .expect("valid")
}

/// Every output row as ints (timestamps as epoch milliseconds, nulls as `None`).
#[derive(Default)]
struct Collect(Vec<Vec<Option<i64>>>);

impl Collector for Collect {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        let cols: Vec<Int64Array> = b
            .columns()
            .iter()
            .map(|c| {
                let c = cast(c, &DataType::Int64).expect("casts");
                c.as_any()
                    .downcast_ref::<Int64Array>()
                    .expect("ints")
                    .clone()
            })
            .collect();
        for i in 0..b.num_rows() {
            self.0.push(
                cols.iter()
                    .map(|c| c.is_valid(i).then(|| c.value(i)))
                    .collect(),
            );
        }
        Ok(())
    }
}

/// Feeds the left rows, the right rows, +∞ and the end of input; returns the output rows,
/// sorted, and the dead letters' lines.
fn run(
    kind: &str,
    how: &str,
    left: &[(i64, i64)],
    right: &[(i64, i64)],
) -> (Vec<Vec<Option<i64>>>, Vec<serde_json::Value>) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("rejected");
    let dead = Arc::new(DeadLetter::new(DeadLetterTarget::File(path.clone())));
    let mut op = join(kind, how, &dead);
    let mut out = Collect::default();
    op.process_batch(0, batch(left), &mut out).expect("left");
    op.process_batch(1, batch(right), &mut out).expect("right");
    op.handle_watermark(Watermark::MAX, &mut out)
        .expect("ends event time");
    op.on_end_of_input(&mut out).expect("ends");
    dead.flush().expect("flushes");
    let lines = std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect::<Vec<serde_json::Value>>();
    assert_eq!(lines.len() as u64, dead.rejected_rows());
    out.0.sort();
    (out.0, lines)
}

#[test]
fn a_window_join_pairs_the_first_and_last_windows_and_rejects_rows_beyond_them() {
    let (lo, hi) = (i64::MIN + 808, i64::MAX - 808);
    let rows = [(i64::MIN, 1), (lo, 2), (hi, 3), (i64::MAX, 4)];
    let (out, dead) = run(
        r#"param kind = "window" param size = "1s""#,
        "inner",
        &rows,
        &rows,
    );
    // window_start, window_end, left ts, k, v, right ts, k, w
    let pair = |s: i64, t: i64, v: i64| {
        vec![s, s + 1000, t, 0, v, t, 0, v]
            .into_iter()
            .map(Some)
            .collect::<Vec<_>>()
    };
    assert_eq!(out, vec![pair(lo, lo, 2), pair(hi - 999, hi, 3)]);
    let rejected: Vec<(i64, String)> = dead
        .iter()
        .map(|d| {
            (
                d["row"]["v"].as_i64().expect("the row's value"),
                d["reason"].as_str().expect("reason").to_string(),
            )
        })
        .collect();
    assert_eq!(
        rejected.iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![1, 4, 1, 4],
        "{dead:?}"
    );
    assert!(
        rejected
            .iter()
            .all(|r| r.1.contains("does not fit in a timestamp")),
        "{rejected:?}"
    );
}

#[test]
fn interval_joins_pair_and_emit_rows_next_to_the_last_millisecond() {
    let kind = r#"param kind = "interval" param lower = "-5ms" param upper = "5ms""#;
    let (out, dead) = run(kind, "inner", &[(i64::MAX - 1, 1)], &[(i64::MAX, 2)]);
    let t = |v: i64| Some(v);
    assert_eq!(
        out,
        vec![vec![t(i64::MAX - 1), t(0), t(1), t(i64::MAX), t(0), t(2)]]
    );
    assert!(dead.is_empty());
    // Left outer: the left row at MAX - 3 has no partner; it is emitted at the end of input.
    let (out, _) = run(kind, "left", &[(i64::MAX - 3, 1)], &[(i64::MIN, 2)]);
    assert_eq!(
        out,
        vec![vec![t(i64::MAX - 3), t(0), t(1), None, None, None]]
    );
}
