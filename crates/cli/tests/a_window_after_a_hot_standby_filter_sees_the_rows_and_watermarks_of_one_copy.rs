//! Hot standby of a filter followed by a window (the paper's own rule is a hot-standby
//! filter): the stream selector forwards the active copy's watermarks at the rows they stand
//! between, not the least watermark of the copies, so the window sees the rows and watermarks
//! of one copy of the filter, whichever copy fails and when. Its input is out of order, so
//! where the watermarks fall decides which rows are late: a run that loses a copy at seeded
//! points (test-only fault injection, seeded batch sizes) writes exactly what the query
//! without hot standby writes, late rows included.

use crate::common;

use std::path::Path;

use common::run_sorted;

const QUERY: &str = r#"
type name = "Reading" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "source", type = "reader" {
  param path = "${INPUT}"
  param event_time = "ts"
  output name = "readings", type = "Reading"
}
operator name = "low", type = "filter" {
  input name = "readings"
  param condition = "readings.value < 70"
  param fault_tolerance = "hot-standby"
  param replicas = 2
  output name = "lowReadings", type = "Reading"
}
operator name = "per_sensor", type = "window" {
  input name = "lowReadings"
  param kind = "tumbling"
  param size = "100ms"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, SUM(value) AS total"
  output name = "counts"
}
operator name = "sink", type = "writer" {
  input name = "counts"
  param path = "${OUTPUT}"
}
"#;

/// A tiny seeded generator (xorshift).
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Readings whose event times wander up to 300 ms behind and ahead of their place.
fn out_of_order_input(path: &Path) {
    let mut state = 0xFACE_u64;
    let mut csv = String::from("ts,sensor,value\n");
    for i in 0..4000u64 {
        let jitter = next(&mut state) % 600;
        let ts = 1_700_000_000_000 + i * 10 + jitter;
        csv.push_str(&format!(
            "{ts},{},{}\n",
            next(&mut state) % 5,
            next(&mut state) % 100
        ));
    }
    std::fs::write(path, csv).expect("input");
}

/// Runs `query` on `input`; its exit, stderr and output rows (sorted: windows closed by one
/// watermark come out in no fixed order).
fn run(dir: &Path, query: &str, input: &Path, extra: &[&str]) -> (bool, String, Vec<String>) {
    let q = dir.join("q.flow");
    std::fs::write(&q, query).expect("query");
    let input = input.display().to_string();
    let (output, rows) = run_sorted(&q, &input, &dir.join("out.csv"), extra);
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        rows,
    )
}

#[test]
fn a_window_after_a_hot_standby_filter_sees_the_rows_and_watermarks_of_one_copy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("readings.csv");
    out_of_order_input(&input);
    let plain = QUERY.replace(
        "  param fault_tolerance = \"hot-standby\"\n  param replicas = 2\n",
        "",
    );
    let mut state = 0x5EED_u64;
    for seed in 0..8 {
        let batch = ["1", "7", "64", "500"][(next(&mut state) % 4) as usize];
        // The reference: the query without hot standby, cut into the same batches (where the
        // reader's watermarks fall among the rows depends on them).
        let (ok, stderr, expected) = run(dir.path(), &plain, &input, &["--batch-size", batch]);
        assert!(ok, "{stderr}");
        assert!(expected.len() > 100, "{expected:?}");
        assert!(
            !stderr.contains("late_rows 0"),
            "the input has late rows, so that watermarks matter: {stderr}"
        );
        let copy = ["low", "low_replica_1"][(next(&mut state) % 2) as usize];
        let rows = next(&mut state) % 3000;
        let fail = format!("{copy}:{rows}");
        let extra = ["--batch-size", batch, "--fail-after", &fail];
        // Seed 0 loses no copy.
        let extra = if seed == 0 { &extra[..2] } else { &extra[..] };
        let (ok, stderr, lines) = run(dir.path(), QUERY, &input, extra);
        assert!(ok, "seed {seed} ({fail}, batch {batch}): {stderr}");
        assert_eq!(lines, expected, "seed {seed}: {fail}, batch {batch}");
    }
}
