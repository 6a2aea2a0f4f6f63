//! A task that fails for a reason of its own (its operator's `on_error = "fail"` on a row)
//! ends its executor at once, so that the coordinator restores its part at once — even when
//! other tasks of that executor still run on, fed by producers on other workers that never
//! end; failing again on every restore, the query fails after its last attempt. Its executor
//! once ran on until every task in it had ended: here never, while the failed task's
//! producers waited for it to come back, and the query stood still.

use crate::common;

use common::cluster::LocalCluster;

/// Row `i` of the generator has `ts = 1700000000000 + i` ms: `m` (one instance) fails on row
/// 30 000 and every row after it. The keyed window `w` runs on every worker, fed by every
/// generator, for as long as the generators run: for ever, in a test's time.
const QUERY: &str = r#"
type name = "R" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 1000000000
  param rate = 10000
  param event_time = "ts"
  output name = "raw", type = "R"
}
operator name = "m", type = "map" {
  input name = "raw"
  param parallelism = 1
  param on_error = "fail"
  param columns = "ts, CASE WHEN ts >= TIMESTAMP '2023-11-14 22:13:50' THEN value / (value - value) ELSE value END AS w"
  output name = "mapped"
}
operator name = "failing", type = "writer" {
  input name = "mapped"
  param path = "failing.csv"
}
operator name = "w", type = "window" {
  input name = "raw"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n"
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "counts.csv"
}
"#;

#[test]
fn a_task_failing_on_its_data_fails_its_executor_at_once() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), QUERY).expect("query");
    let cluster = LocalCluster::start(3, 8);
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &[
            "--parallelism",
            "3",
            "--no-chaining",
            "--checkpoint-every",
            "2000",
        ],
    );
    // The part of `m` fails and is restored alone; without the executor's end at once, its
    // part never ends (its window instance runs on) and this never comes.
    let restored = || {
        cluster
            .coordinator_log()
            .contains("restoring its instances on worker")
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !restored() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let log = cluster.coordinator_log();
    assert!(
        restored(),
        "the failed part was restored: {}",
        cluster.logs()
    );
    assert!(
        log.contains("Divide by zero"),
        "the part failed with m's error: {log}"
    );
    // It fails again on every restore: the query fails after its last attempt, naming it.
    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("Divide by zero"),
        "the submission failed with m's error: {stderr}"
    );
    assert_eq!(cluster.status("q")["state"], "failed");
}
