//! The paper's patterns 1 and 2 on a cluster, asked for by name: a stateless filter with
//! `fault_tolerance = "standby"` (restarted elsewhere, nothing to restore) and a stateful window
//! with `fault_tolerance = "checkpoint"` (restored from its last snapshot). The worker running
//! the operator is killed with SIGKILL at a seeded checkpoint; the query is not rolled back as
//! a whole, and writes exactly what an uninterrupted embedded run of it writes. The same for
//! the filter in three instances that take batches in turn (a round-robin exchange), and in
//! three that take a range of values each (a range exchange).

use crate::common;

use common::cluster::{kill_worker_after, pick, LocalCluster};
use common::{anduin_ok, output_rows, wait_until};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 31
  param count = 60000
  param rate = 10000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "low", type = "filter" {
  input name = "events"
  param condition = "value < 70"
  param fault_tolerance = "standby"
  output name = "low", type = "Event"
}
operator name = "w", type = "window" {
  input name = "low"
  param kind = "tumbling"
  param size = "100ms"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, SUM(value) AS total"
  param fault_tolerance = "checkpoint"
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "${OUTPUT}"
}
"#;

/// Kills the worker running `operator` (an instance's name) after a seeded checkpoint;
/// asserts the output.
fn scenario(seed: u64, operator: &str) {
    scenario_of(QUERY, seed, operator);
}

fn scenario_of(query: &str, seed: u64, operator: &str) {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), query).expect("query");
    anduin_ok(
        work.path(),
        &[
            "run",
            "q.flow",
            "--var",
            "OUTPUT=reference.csv",
            "--no-api",
            // A checkpointed operator needs somewhere to checkpoint to.
            "--checkpoint-store",
            "reference-checkpoints",
        ],
    );
    let expected = output_rows(&work.path().join("reference.csv"));
    assert!(expected.len() > 1000, "{}", expected.len());
    let mut cluster = LocalCluster::start(3, 8);
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &[
            "--var",
            "OUTPUT=out",
            "--no-chaining",
            "--checkpoint-every",
            "4000",
        ],
    );
    wait_until("the query to be placed", || {
        cluster.status("q")["instances"]
            .as_object()
            .is_some_and(|i| !i.is_empty())
    });
    let instances = cluster.status("q")["instances"].clone();
    let victim: usize = instances[operator]
        .as_str()
        .and_then(|w| w.strip_prefix('w'))
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("{operator} runs on a worker wN: {instances}"));
    let after = 1 + pick(seed, 11, 3);
    let mid_run = kill_worker_after(&mut cluster, "q", victim, after);
    let out = submit.wait_output();
    assert!(
        out.status.success(),
        "{operator}, seed {seed}: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        cluster.logs()
    );
    assert_eq!(
        output_rows(&work.path().join("out")),
        expected,
        "{operator}, seed {seed}: the output differs\n{}",
        cluster.logs()
    );
    let status = cluster.status("q");
    assert!(
        !mid_run
            || status["attempt"] == 1
            || cluster.coordinator_log().contains("the query is finishing"),
        "{operator}, seed {seed}: rolled back as a whole: {status}"
    );
}

/// Two seeds from `first`, or as many as `ANDUIN_SOAK_SEEDS` says (a soak run).
fn seeds(first: u64) -> impl Iterator<Item = u64> {
    let n = std::env::var("ANDUIN_SOAK_SEEDS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(2);
    (0..n).map(move |i| first + 2 * i)
}

#[test]
fn a_standby_filter_survives_the_kill_of_its_worker() {
    for seed in seeds(1) {
        scenario(seed, "low");
    }
}

/// A standby filter in three instances that take batches in turn (round robin): the worker of
/// one of them is killed; each batch is still taken once.
#[test]
fn a_standby_filter_in_instances_that_take_rows_in_turn_survives_the_kill_of_a_worker() {
    let query = QUERY.replacen(
        "param fault_tolerance = \"standby\"",
        "param fault_tolerance = \"standby\"\n  param parallelism = 3",
        1,
    );
    assert_ne!(query, QUERY);
    for seed in seeds(5) {
        scenario_of(&query, seed, "low #1");
    }
}

/// The same filter split by ranges of `value` (a range exchange between processes): the
/// worker of the middle range's instance is killed.
#[test]
fn a_standby_filter_split_by_ranges_survives_the_kill_of_a_worker() {
    let query = QUERY.replacen(
        "param fault_tolerance = \"standby\"",
        "param fault_tolerance = \"standby\"\n  param ranges = \"value: 30, 60\"",
        1,
    );
    assert_ne!(query, QUERY);
    scenario_of(&query, 9, "low #1");
}

#[test]
fn a_checkpointed_window_survives_the_kill_of_its_worker() {
    for seed in seeds(2) {
        scenario(seed, "w");
    }
}
