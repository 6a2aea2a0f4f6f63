//! Hot standby, embedded: `examples/fault_tolerance.flow` asks for two copies of its window
//! behind a stream selector. A run in which one copy fails (test-only fault injection, at
//! seeded points and batch sizes) writes exactly what a run without failures writes — no row
//! missing, none twice — and what the query without hot standby writes. When every copy
//! fails, the run fails with a copy's error and the stream selector's. (With checkpoints: the
//! scenario of the copy lost and then the run killed; a window after the copies: the scenario
//! of a hot-standby filter.)

use crate::common;

use common::{repo, run_sorted};

fn run(query: &std::path::Path, extra: &[&str]) -> (std::process::Output, Vec<String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    run_sorted(
        query,
        "data/readings.csv",
        &dir.path().join("out.csv"),
        extra,
    )
}

fn example() -> std::path::PathBuf {
    repo().join("examples/fault_tolerance.flow")
}

/// A tiny seeded generator (xorshift).
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn a_run_that_loses_a_copy_writes_what_a_run_without_failures_writes() {
    loses_a_copy_at_seeded_points(&[], 8);
}

/// The copies' channels cross loopback TCP: the multicast's to each copy and each copy's to
/// the selector are network edges without resumption; a lost copy's edges end as its
/// in-process channels do (its producer goes on feeding the live copy, the selector switches).
#[test]
fn a_run_over_two_loopback_workers_that_loses_a_copy_writes_what_a_run_without_failures_writes() {
    loses_a_copy_at_seeded_points(&["--loopback-workers", "2"], 12);
}

#[test]
fn a_run_over_three_loopback_workers_that_loses_a_copy_writes_what_a_run_without_failures_writes() {
    loses_a_copy_at_seeded_points(&["--loopback-workers", "3"], 12);
}

/// Runs the example with `placement` (`--loopback-workers N`, or nothing: in process) without
/// a failure, then losing one copy at each of `seeds` seeded points and batch sizes: each run
/// exits 0 and writes what the fault-free in-process run writes, which is what the query
/// without hot standby writes.
fn loses_a_copy_at_seeded_points(placement: &[&str], seeds: u64) {
    let (ok, expected) = run(&example(), &[]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(expected.len() > 10, "{expected:?}");
    // The same query without hot standby.
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = dir.path().join("plain.flow");
    let text = std::fs::read_to_string(example()).expect("example");
    std::fs::write(
        &plain,
        text.replace(
            "  param fault_tolerance = \"hot-standby\"\n  param replicas = 2\n",
            "",
        ),
    )
    .expect("query");
    let (_, without) = run(&plain, &[]);
    assert_eq!(
        without, expected,
        "hot standby changes nothing when nothing fails"
    );
    if !placement.is_empty() {
        let (out, lines) = run(&example(), placement);
        assert!(
            out.status.success(),
            "{placement:?}, no failure: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(lines, expected, "{placement:?}, no failure");
    }

    let mut state = 0x5EED_u64;
    for seed in 0..seeds {
        let copy = if next(&mut state).is_multiple_of(2) {
            "per_sensor"
        } else {
            "per_sensor_replica_1"
        };
        let rows = next(&mut state) % 460;
        let batch = ["1", "7", "100", "8192"][(next(&mut state) % 4) as usize];
        let fail = format!("{copy}:{rows}");
        let mut args = vec![
            "--batch-size",
            batch,
            "--fail-after",
            &fail,
            "--events",
            "-",
        ];
        args.extend_from_slice(placement);
        let (out, lines) = run(&example(), &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "seed {seed} ({fail}, batch {batch}, {placement:?}): {stderr}"
        );
        assert_eq!(
            lines, expected,
            "seed {seed}: {fail}, batch {batch}, {placement:?}"
        );
        assert!(
            stderr.contains("\"event\":\"task_failed\",\"task\":") || rows >= 460,
            "seed {seed} ({placement:?}): the copy failed: {stderr}"
        );
    }
}

#[test]
fn a_run_that_loses_every_copy_fails_naming_a_copy_s_failure_and_the_selector_s() {
    let (out, _) = run(
        &example(),
        &[
            "--batch-size",
            "100",
            "--fail-after",
            "per_sensor:300",
            "--fail-after",
            "per_sensor_replica_1:200",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        // Either copy may fail first: they run on threads of their own.
        stderr.contains("a copy of a hot standby failed: operator \"per_sensor")
            && stderr
                .contains("failed on purpose (test-only fault injection); and the query failed: ")
            && stderr.contains("every replica was lost"),
        "{stderr}"
    );
}

#[test]
fn copies_fed_by_several_instances_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let q = dir.path().join("fed.flow");
    let text = std::fs::read_to_string(example()).expect("example");
    // The window in two instances, then a hot-standby filter over its rows.
    let fed = text
        .replace(
            "  param fault_tolerance = \"hot-standby\"\n  param replicas = 2\n",
            "  param parallelism = 2\n",
        )
        .replace(
            "operator name = \"sink\", type = \"writer\" {\n  input name = \"counts\"",
            "operator name = \"busy\", type = \"filter\" {\n  input name = \"counts\"\n  param condition = \"n > 1\"\n  param fault_tolerance = \"hot-standby\"\n  output name = \"busy_counts\"\n}\noperator name = \"sink\", type = \"writer\" {\n  input name = \"busy_counts\"",
        );
    std::fs::write(&q, fed).expect("query");
    let (out, _) = run(&q, &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("a copy of a hot standby is fed by 2 instances on input 0"),
        "{stderr}"
    );
}

#[test]
fn hot_standby_of_an_operator_that_emits_changes_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let q = dir.path().join("agg.flow");
    std::fs::write(
        &q,
        r#"
type name = "Reading" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "source", type = "reader" {
  param path = "${INPUT}"
  output name = "readings", type = "Reading"
}
operator name = "totals", type = "aggregate" {
  input name = "readings"
  param keys = "sensor"
  param aggregates = "SUM(value) AS total"
  param fault_tolerance = "hot-standby"
  output name = "sums"
}
operator name = "sink", type = "writer" {
  input name = "sums"
  param path = "${OUTPUT}"
  param mode = "changelog"
}
"#,
    )
    .expect("query");
    let (out, _) = run(&q, &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("operator \"totals\": fault_tolerance = \"hot-standby\" is not supported for an operator that emits an updating stream"),
        "{stderr}"
    );
}
