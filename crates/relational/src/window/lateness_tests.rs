//! `allowed_lateness` on one window instance: when windows fire, which rows are late, the
//! watermark forwarded, and changes while running (see `running.rs`). The naive model over
//! random input, with changes and restores, is anduin-registry's
//! `windows_agree_with_a_naive_recomputation`.

use std::sync::Arc;

use anduin_operator_api::{BuildContext, Collector, ControlError, Operator, OperatorError};
use anduin_types::Watermark;
use arrow::array::{Array, Int64Array, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;

use super::running::cutoff;

pub(super) fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        Field::new("k", DataType::Int64, true),
    ]))
}

/// A window `w` of `kind_params` over `(ts, k)` counting rows per key, with `lateness` (a
/// `param allowed_lateness = …` or nothing) and a late output.
pub(super) fn window(kind_params: &str, lateness: &str) -> Box<dyn Operator> {
    let src = format!(
        r#"operator name = "w", type = "window" {{
  input name = "s" {kind_params} {lateness} param time = "ts" param keys = "k"
  param aggregates = "COUNT(*) AS n" param late_output = "late"
  output name = "out" output name = "late" }}"#
    );
    let spec = anduin_spec::parse_flow(&src).expect("parses");
    let op = spec.operators.first().expect("one operator");
    let binding = super::bind(op, &[("s", schema())]).expect("binds");
    let anduin_operator_api::Bound::Operator(factory) = binding.bound else {
        panic!("a window is an operator with inputs")
    };
    factory(&BuildContext::default()).expect("builds")
}

fn tumbling(lateness: &str) -> Box<dyn Operator> {
    window(r#"param kind = "tumbling" param size = "10ms""#, lateness)
}

/// A result: start, end, key, count.
pub(super) type Result4 = (i64, i64, i64, i64);

/// What the window emitted: results and the times of late rows.
#[derive(Default)]
pub(super) struct Out {
    pub(super) results: Vec<Result4>,
    pub(super) late: Vec<i64>,
}

impl Collector for Out {
    fn collect(&mut self, port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        let ts = |i: usize| {
            b.column(i)
                .as_any()
                .downcast_ref::<TimestampMillisecondArray>()
                .expect("a timestamp")
                .clone()
        };
        let int = |i: usize| {
            b.column(i)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("an int")
                .clone()
        };
        if port == 1 {
            self.late.extend(ts(0).values().iter());
            return Ok(());
        }
        let (s, e, k, n) = (ts(0), ts(1), int(2), int(3));
        for i in 0..b.num_rows() {
            self.results
                .push((s.value(i), e.value(i), k.value(i), n.value(i)));
        }
        Ok(())
    }
}

impl Out {
    /// What came since the last call, sorted.
    pub(super) fn take(&mut self) -> (Vec<Result4>, Vec<i64>) {
        let (mut results, mut late) = (
            std::mem::take(&mut self.results),
            std::mem::take(&mut self.late),
        );
        results.sort_unstable();
        late.sort_unstable();
        (results, late)
    }
}

/// Rows `(ts, key)`.
pub(super) fn rows(op: &mut Box<dyn Operator>, out: &mut Out, rows: &[(i64, i64)]) {
    let batch = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(TimestampMillisecondArray::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
        ],
    )
    .expect("valid");
    op.process_batch(0, batch, out).expect("processes");
}

/// The watermark `w`; returns the one the window forwards.
pub(super) fn watermark(op: &mut Box<dyn Operator>, out: &mut Out, w: i64) -> Option<i64> {
    op.handle_watermark(Watermark(w), out)
        .expect("fires")
        .map(|w| w.0)
}

#[test]
fn the_cutoff_trails_the_watermark_by_the_lateness_and_the_end_of_input_closes_all() {
    assert_eq!(cutoff(100, 0), 100);
    assert_eq!(cutoff(100, 30), 70);
    assert_eq!(cutoff(i64::MIN + 5, 30), i64::MIN);
    assert_eq!(cutoff(i64::MAX - 1, i64::MAX), -1);
    assert_eq!(cutoff(i64::MAX, 30), i64::MAX);
    assert_eq!(cutoff(i64::MAX, i64::MAX), i64::MAX);
}

#[test]
fn a_tumbling_window_fires_when_the_watermark_passes_its_end_plus_the_lateness() {
    let mut op = tumbling(r#"param allowed_lateness = "5ms""#);
    let mut out = Out::default();
    rows(&mut op, &mut out, &[(1, 0), (12, 0)]);
    assert_eq!(
        watermark(&mut op, &mut out, 12),
        Some(7),
        "held back by 5 ms"
    );
    assert_eq!(out.take(), (vec![], vec![]), "[0, 10) waits for 15");
    // 3 ms behind the watermark: within the lateness, it counts in [0, 10).
    rows(&mut op, &mut out, &[(9, 0)]);
    assert_eq!(watermark(&mut op, &mut out, 14), Some(9));
    assert_eq!(out.take(), (vec![], vec![]));
    assert_eq!(watermark(&mut op, &mut out, 15), Some(10));
    assert_eq!(out.take(), (vec![(0, 10, 0, 2)], vec![]));
    // Behind the cutoff (10): late, also where its window is still open.
    rows(&mut op, &mut out, &[(9, 0), (10, 0), (11, 1)]);
    assert_eq!(out.take(), (vec![], vec![9]));
    assert_eq!(watermark(&mut op, &mut out, i64::MAX), Some(i64::MAX));
    assert_eq!(out.take(), (vec![(10, 20, 0, 2), (10, 20, 1, 1)], vec![]));
}

#[test]
fn without_lateness_the_window_fires_at_the_watermark_and_forwards_it() {
    let mut op = tumbling("");
    let mut out = Out::default();
    rows(&mut op, &mut out, &[(1, 0), (9, 0)]);
    assert_eq!(watermark(&mut op, &mut out, 10), Some(10));
    assert_eq!(out.take(), (vec![(0, 10, 0, 2)], vec![]));
    rows(&mut op, &mut out, &[(9, 0)]);
    assert_eq!(out.take(), (vec![], vec![9]));
    assert_eq!(
        watermark(&mut op, &mut out, 10),
        None,
        "a watermark that does not move the cutoff is not forwarded again"
    );
}

#[test]
fn a_session_closes_when_the_watermark_is_past_its_end_plus_the_lateness() {
    let mut op = window(
        r#"param kind = "session" param gap = "4ms""#,
        r#"param allowed_lateness = "10ms""#,
    );
    let mut out = Out::default();
    rows(&mut op, &mut out, &[(0, 0), (3, 0)]);
    // The session is [0, 7): open until the cutoff is past 7.
    assert_eq!(watermark(&mut op, &mut out, 17), Some(7));
    assert_eq!(out.take(), (vec![], vec![]));
    // 10 ms behind the watermark, and touching the session: it extends it to [0, 11).
    rows(&mut op, &mut out, &[(7, 0)]);
    assert_eq!(watermark(&mut op, &mut out, 21), Some(11));
    assert_eq!(out.take(), (vec![], vec![]));
    assert_eq!(watermark(&mut op, &mut out, 22), Some(12));
    assert_eq!(out.take(), (vec![(0, 11, 0, 3)], vec![]));
}

#[test]
fn a_shorter_lateness_set_while_running_fires_the_windows_it_closes_at_the_next_watermark() {
    let mut op = tumbling(r#"param allowed_lateness = "20ms""#);
    let mut out = Out::default();
    rows(&mut op, &mut out, &[(1, 0), (11, 0), (21, 0), (31, 0)]);
    assert_eq!(watermark(&mut op, &mut out, 31), Some(11));
    assert_eq!(out.take(), (vec![(0, 10, 0, 1)], vec![]));
    op.set_param("allowed_lateness", "0s").expect("a duration");
    assert_eq!(out.take(), (vec![], vec![]), "nothing fires at the change");
    // Until the next watermark rows are judged by the cutoff as it was (11).
    rows(&mut op, &mut out, &[(12, 0), (10, 0)]);
    assert_eq!(out.take(), (vec![], vec![10]));
    assert_eq!(watermark(&mut op, &mut out, 32), Some(32));
    assert_eq!(out.take(), (vec![(10, 20, 0, 2), (20, 30, 0, 1)], vec![]));
    rows(&mut op, &mut out, &[(31, 0)]);
    assert_eq!(out.take(), (vec![], vec![31]), "now late 1 ms behind");
}

#[test]
fn a_watermark_sent_again_applies_no_change_of_lateness() {
    let mut op = tumbling(r#"param allowed_lateness = "20ms""#);
    let mut out = Out::default();
    rows(&mut op, &mut out, &[(1, 0), (31, 0)]);
    assert_eq!(watermark(&mut op, &mut out, 31), Some(11));
    assert_eq!(out.take(), (vec![(0, 10, 0, 1)], vec![]));
    op.set_param("allowed_lateness", "0s").expect("a duration");
    // As a source resumed from a checkpoint sends the watermarks of its next rows again.
    assert_eq!(watermark(&mut op, &mut out, 25), None);
    assert_eq!(watermark(&mut op, &mut out, 31), None);
    rows(&mut op, &mut out, &[(12, 0)]);
    assert_eq!(out.take(), (vec![], vec![]), "the cutoff is still 11");
    assert_eq!(watermark(&mut op, &mut out, 32), Some(32));
    assert_eq!(out.take(), (vec![(10, 20, 0, 1)], vec![]));
}

#[test]
fn a_longer_lateness_set_while_running_keeps_open_windows_longer_and_reopens_none() {
    let mut op = tumbling("");
    let mut out = Out::default();
    rows(&mut op, &mut out, &[(1, 0), (11, 0)]);
    assert_eq!(watermark(&mut op, &mut out, 12), Some(12));
    assert_eq!(out.take(), (vec![(0, 10, 0, 1)], vec![]));
    op.set_param("allowed_lateness", "1m").expect("a duration");
    // The cutoff stays at 12 until the watermark less a minute passes it.
    assert_eq!(watermark(&mut op, &mut out, 25), None);
    rows(&mut op, &mut out, &[(5, 0), (12, 0), (15, 0)]);
    assert_eq!(
        out.take(),
        (vec![], vec![5]),
        "[0, 10) fired: its rows stay late"
    );
    assert_eq!(watermark(&mut op, &mut out, 60_012), None);
    assert_eq!(watermark(&mut op, &mut out, 60_019), Some(19));
    assert_eq!(out.take(), (vec![], vec![]));
    assert_eq!(watermark(&mut op, &mut out, 60_020), Some(20));
    assert_eq!(out.take(), (vec![(10, 20, 0, 3)], vec![]));
}

#[test]
fn a_bad_lateness_or_another_param_is_refused_and_changes_nothing() {
    let mut op = tumbling(r#"param allowed_lateness = "5ms""#);
    assert_eq!(op.adjustable_params(), ["allowed_lateness"]);
    for bad in ["soon", "5", "-5ms", "1.5ms", ""] {
        match op.set_param("allowed_lateness", bad) {
            Err(ControlError::Invalid { param, message, .. }) => {
                assert_eq!(param, "allowed_lateness");
                assert!(message.contains("duration"), "{bad:?}: {message}");
            }
            other => panic!("{bad:?} must be refused: {other:?}"),
        }
    }
    match op.set_param("size", "20ms") {
        Err(ControlError::NotAdjustable { adjustable, .. }) => {
            assert_eq!(adjustable, "allowed_lateness");
        }
        other => panic!("{other:?}"),
    }
    let mut out = Out::default();
    rows(&mut op, &mut out, &[(1, 0)]);
    assert_eq!(watermark(&mut op, &mut out, 14), Some(9), "still 5 ms");
    assert_eq!(watermark(&mut op, &mut out, 15), Some(10));
    assert_eq!(out.take(), (vec![(0, 10, 0, 1)], vec![]));
}

#[test]
fn a_lateness_too_long_for_a_timestamp_is_the_longest_one() {
    // 200 000 000 000 days is more milliseconds than an i64 holds (but fits a u64).
    let mut op = tumbling(r#"param allowed_lateness = "200000000000d""#);
    let mut out = Out::default();
    rows(&mut op, &mut out, &[(1, 0), (100, 0)]);
    assert_eq!(watermark(&mut op, &mut out, i64::MAX - 1), Some(-1));
    rows(&mut op, &mut out, &[(0, 0)]);
    assert_eq!(out.take(), (vec![], vec![]));
    assert_eq!(watermark(&mut op, &mut out, i64::MAX), Some(i64::MAX));
    assert_eq!(out.take(), (vec![(0, 10, 0, 2), (100, 110, 0, 1)], vec![]));
}

#[test]
fn a_query_with_a_bad_lateness_is_refused_at_the_param() {
    let src = r#"operator name = "w", type = "window" {
  input name = "s" param kind = "tumbling" param size = "10ms" param time = "ts"
  param aggregates = "COUNT(*) AS n" param allowed_lateness = "later"
  output name = "out" }"#;
    let spec = anduin_spec::parse_flow(src).expect("parses");
    let op = spec.operators.first().expect("one operator");
    let Err(e) = super::bind(op, &[("s", schema())]) else {
        panic!("a lateness that is no duration binds")
    };
    let message = e.render("q.flow");
    assert!(message.contains("q.flow:3:"), "{message}");
    assert!(message.contains("duration"), "{message}");
}

pub(super) use crate::checkpoint_tests::{restore, Memory};

#[test]
fn a_checkpoint_keeps_the_cutoff_and_the_restore_takes_the_lateness_from_the_query() {
    let lateness = r#"param allowed_lateness = "10ms""#;
    let mut op = tumbling(lateness);
    let mut out = Out::default();
    rows(&mut op, &mut out, &[(15, 0), (25, 0)]);
    assert_eq!(watermark(&mut op, &mut out, 29), Some(19));
    assert_eq!(out.take(), (vec![], vec![]));
    op.set_param("allowed_lateness", "0s").expect("a duration");
    let mut m = Memory::default();
    op.snapshot(&mut m).expect("snapshots");

    // Restored: the cutoff is 19 (a row at 18 is late), the lateness the query's 10 ms until
    // the changes recorded are applied again, as a resume does after restoring.
    let mut op = tumbling(lateness);
    restore(&mut op, m);
    rows(&mut op, &mut out, &[(18, 0), (19, 0)]);
    assert_eq!(out.take(), (vec![], vec![18]));
    assert_eq!(watermark(&mut op, &mut out, 35), Some(25));
    assert_eq!(out.take(), (vec![(10, 20, 0, 2)], vec![]));
    op.set_param("allowed_lateness", "0s").expect("a duration");
    assert_eq!(watermark(&mut op, &mut out, 36), Some(36));
    assert_eq!(out.take(), (vec![(20, 30, 0, 1)], vec![]));
}

#[test]
fn a_checkpoint_from_before_allowed_lateness_restores_the_cutoff_at_its_watermark() {
    let mut op = tumbling("");
    let mut out = Out::default();
    rows(&mut op, &mut out, &[(15, 0)]);
    assert_eq!(watermark(&mut op, &mut out, 12), Some(12));
    let mut m = Memory::default();
    op.snapshot(&mut m).expect("snapshots");
    let inline = m.inline.as_mut().and_then(|v| v.as_object_mut());
    let inline = inline.expect("the window's metadata is an object");
    assert_eq!(inline.remove("cutoff"), Some(serde_json::json!(12)));

    let mut op = tumbling("");
    restore(&mut op, m);
    rows(&mut op, &mut out, &[(11, 0), (12, 0)]);
    assert_eq!(out.take(), (vec![], vec![11]));
    assert_eq!(watermark(&mut op, &mut out, 20), Some(20));
    assert_eq!(out.take(), (vec![(10, 20, 0, 2)], vec![]));
}
