//! Processing-time windows on one window instance with a wall clock set by hand
//! (`proctime.rs`): no test waits for real time.

use std::sync::Arc;
use std::time::Duration;

use anduin_operator_api::{BuildContext, Operator};

use super::lateness_tests::{restore, rows, watermark, Memory, Out};
use super::proctime::ManualWallClock;
use super::running::Window;

/// A processing-time window `w` of `kind_params` over `(ts, k)` counting rows per key, on
/// `clock`.
fn window(kind_params: &str, clock: &Arc<ManualWallClock>) -> Box<dyn Operator> {
    let src = format!(
        r#"operator name = "w", type = "window" {{
  input name = "s" {kind_params} param time = "ts" param time_kind = "processing"
  param keys = "k" param aggregates = "COUNT(*) AS n" output name = "out" }}"#
    );
    let spec = anduin_spec::parse_flow(&src).expect("parses");
    let op = spec.operators.first().expect("one operator");
    let checked = super::check(op, &[("s", super::lateness_tests::schema())]).expect("binds");
    let w = Window::new(checked.setup, &BuildContext::default()).expect("builds");
    Box::new(w.with_clock(Arc::clone(clock) as _))
}

fn tumbling(clock: &Arc<ManualWallClock>) -> Box<dyn Operator> {
    window(r#"param kind = "tumbling" param size = "10ms""#, clock)
}

fn ms(n: u64) -> Option<Duration> {
    Some(Duration::from_millis(n))
}

#[test]
fn rows_go_to_the_window_of_the_clock_at_arrival_whatever_their_time_column_says() {
    let clock = ManualWallClock::at(1_003);
    let mut op = tumbling(&clock);
    let mut out = Out::default();
    assert_eq!(op.timer_due_in(), None, "no window is open");
    // The time column (here 5 and 999 999) plays no part.
    rows(&mut op, &mut out, &[(5, 1), (999_999, 1), (5, 2)]);
    assert_eq!(op.timer_due_in(), ms(7), "until the end of [1000, 1010)");
    clock.set(1_009);
    rows(&mut op, &mut out, &[(0, 1)]);
    assert_eq!(op.timer_due_in(), ms(1));
    assert_eq!(out.take(), (vec![], vec![]));
    // The next batch past the end fires the window before taking its rows.
    clock.set(1_012);
    rows(&mut op, &mut out, &[(0, 1)]);
    assert_eq!(
        out.take(),
        (vec![(1_000, 1_010, 1, 3), (1_000, 1_010, 2, 1)], vec![])
    );
    assert_eq!(op.timer_due_in(), ms(8), "until the end of [1010, 1020)");
}

#[test]
fn a_window_fires_on_its_timer_when_no_row_comes() {
    let clock = ManualWallClock::at(2_000);
    let mut op = tumbling(&clock);
    let mut out = Out::default();
    rows(&mut op, &mut out, &[(0, 7), (0, 7)]);
    clock.set(2_005);
    op.on_timer(&mut out).expect("nothing due");
    assert_eq!(out.take(), (vec![], vec![]));
    clock.set(2_010);
    assert_eq!(op.timer_due_in(), ms(0), "due");
    op.on_timer(&mut out).expect("fires");
    assert_eq!(out.take(), (vec![(2_000, 2_010, 7, 2)], vec![]));
    assert_eq!(op.timer_due_in(), None, "nothing left open");
}

#[test]
fn the_watermark_passes_through_and_fires_nothing_until_the_input_finishes() {
    let clock = ManualWallClock::at(500);
    let mut op = tumbling(&clock);
    let mut out = Out::default();
    rows(&mut op, &mut out, &[(0, 1)]);
    clock.set(503);
    rows(&mut op, &mut out, &[(0, 1), (0, 2)]);
    assert_eq!(watermark(&mut op, &mut out, 10_000), Some(10_000));
    assert_eq!(watermark(&mut op, &mut out, 9_000), None, "not again");
    assert_eq!(out.take(), (vec![], vec![]));
    // A finished input closes every window, ended or not.
    assert_eq!(watermark(&mut op, &mut out, i64::MAX), Some(i64::MAX));
    assert_eq!(
        out.take(),
        (vec![(500, 510, 1, 2), (500, 510, 2, 1)], vec![])
    );
}

#[test]
fn a_sliding_window_counts_each_row_in_every_window_of_its_instant() {
    let clock = ManualWallClock::at(1_004);
    let mut op = window(
        r#"param kind = "sliding" param size = "10ms" param slide = "5ms""#,
        &clock,
    );
    let mut out = Out::default();
    rows(&mut op, &mut out, &[(0, 1)]);
    assert_eq!(op.timer_due_in(), ms(1), "until the end of [995, 1005)");
    clock.set(1_006);
    rows(&mut op, &mut out, &[(0, 1)]);
    assert_eq!(out.take(), (vec![(995, 1_005, 1, 1)], vec![]));
    clock.set(1_020);
    op.on_timer(&mut out).expect("fires");
    assert_eq!(
        out.take(),
        (vec![(1_000, 1_010, 1, 2), (1_005, 1_015, 1, 1)], vec![])
    );
    assert_eq!(op.timer_due_in(), None);
}

#[test]
fn after_a_restore_the_windows_that_ended_meanwhile_fire_at_once_with_what_they_held() {
    let clock = ManualWallClock::at(3_001);
    let mut op = tumbling(&clock);
    let mut out = Out::default();
    rows(&mut op, &mut out, &[(0, 1), (0, 1)]);
    let mut m = Memory::default();
    op.snapshot(&mut m).expect("snapshots");
    // Rows after the checkpoint are lost with the instance, read again after the restore.
    rows(&mut op, &mut out, &[(0, 1)]);

    clock.set(3_047);
    let mut op = tumbling(&clock);
    restore(&mut op, m);
    assert_eq!(op.timer_due_in(), ms(0), "[3000, 3010) ended while down");
    op.on_timer(&mut out).expect("fires");
    assert_eq!(out.take(), (vec![(3_000, 3_010, 1, 2)], vec![]));
    // The row read again goes to the window of the instant it is processed again.
    rows(&mut op, &mut out, &[(0, 1)]);
    assert_eq!(watermark(&mut op, &mut out, i64::MAX), Some(i64::MAX));
    assert_eq!(out.take(), (vec![(3_040, 3_050, 1, 1)], vec![]));
}

#[test]
fn a_session_or_count_window_over_processing_time_is_refused_at_time_kind() {
    let src = r#"operator name = "w", type = "window" {
  input name = "s" param kind = "session" param gap = "1s" param time = "ts"
  param time_kind = "processing" param aggregates = "COUNT(*) AS n" output name = "out" }"#;
    let spec = anduin_spec::parse_flow(src).expect("parses");
    let op = spec.operators.first().expect("one operator");
    let Err(d) = super::check(op, &[("s", super::lateness_tests::schema())]) else {
        panic!("refused");
    };
    let message = d.to_string();
    assert!(message.contains("time_kind"), "{message}");
    assert!(message.contains("tumbling or sliding"), "{message}");
}
