//! A window restored from a checkpoint emits its rows in the order an uninterrupted run
//! does, row for row: a sink that names rows by their place (NATS exactly once) writes
//! each row once only if every run emits the same rows in the same order.

use super::lateness_tests::{restore, rows, watermark, window, Memory, Out, Result4};

/// Rows `(ts, key)` in time order with keys in no order, from a seeded generator.
fn input(seed: u64, n: usize) -> Vec<(i64, i64)> {
    let mut rng = crate::test_rng::Lcg::new(seed);
    let mut next = || rng.bits();
    let mut ts = 0;
    (0..n)
        .map(|_| {
            ts += next() % 3;
            (ts, next() % 40 - 20)
        })
        .collect()
}

/// What the window of `kind` emits, in order, for `input` in batches of `batch` rows with a
/// watermark at each batch's latest time; with `restart_at`, the operator is checkpointed
/// before that batch and a new one restored from it goes on.
fn run(kind: &str, input: &[(i64, i64)], batch: usize, restart_at: Option<usize>) -> Vec<Result4> {
    let mut op = window(kind, "");
    let mut out = Out::default();
    for (i, chunk) in input.chunks(batch).enumerate() {
        if restart_at == Some(i) {
            let mut m = Memory::default();
            op.snapshot(&mut m).expect("snapshots");
            op = window(kind, "");
            restore(&mut op, m);
        }
        rows(&mut op, &mut out, chunk);
        let latest = chunk.iter().map(|r| r.0).max().expect("a chunk has rows");
        watermark(&mut op, &mut out, latest);
    }
    watermark(&mut op, &mut out, i64::MAX);
    out.results
}

fn assert_same_order_after_any_restore(kind: &str) {
    for seed in 1..=6 {
        let rows = input(seed, 600);
        let uninterrupted = run(kind, &rows, 25, None);
        assert!(uninterrupted.len() > 20, "{kind}: the input fires windows");
        for restart_at in [1, 5, 11, 17] {
            let restored = run(kind, &rows, 25, Some(restart_at));
            assert_eq!(
                restored, uninterrupted,
                "{kind}, seed {seed}: restored before batch {restart_at}"
            );
        }
        // Another batching (other watermarks) fires the same rows in the same order.
        assert_eq!(
            run(kind, &rows, 7, Some(30)),
            uninterrupted,
            "{kind}, seed {seed}"
        );
    }
}

#[test]
fn a_restored_tumbling_window_emits_its_keys_in_the_uninterrupted_order() {
    assert_same_order_after_any_restore(r#"param kind = "tumbling" param size = "50ms""#);
}

#[test]
fn a_restored_sliding_window_emits_its_keys_in_the_uninterrupted_order() {
    assert_same_order_after_any_restore(
        r#"param kind = "sliding" param size = "60ms" param slide = "20ms""#,
    );
}

#[test]
fn a_restored_session_window_emits_its_sessions_in_the_uninterrupted_order() {
    assert_same_order_after_any_restore(r#"param kind = "session" param gap = "4ms""#);
}

#[test]
fn a_restored_cumulating_window_emits_its_keys_in_the_uninterrupted_order() {
    assert_same_order_after_any_restore(
        r#"param kind = "cumulate" param size = "60ms" param step = "20ms""#,
    );
}
