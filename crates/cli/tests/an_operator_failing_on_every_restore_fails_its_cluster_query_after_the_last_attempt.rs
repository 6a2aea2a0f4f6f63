//! An operator that fails on a row of its input (`on_error = "fail"`) fails again on every
//! restore: per-task recovery restores its part elsewhere a few times, then the whole query
//! rolls back, attempt after attempt, and after the last one the query is failed — its
//! status says `failed` with the operator's error, and `anduin submit --wait` exits with it.
//! It never stays `running` (its life once refused the failure of a part restored on another
//! worker than its first, and the submission waited for ever), and no attempt numbers a
//! checkpoint as an earlier one did (each once started again after the checkpoint it
//! restored, reusing the epochs of the checkpoints given up before).

use crate::common;

use common::cluster::LocalCluster;

/// Row `i` of the uniform generator has `ts = 1700000000000 + i` ms: the map fails on row
/// 30 000 and every row after it, after checkpoints have completed.
const QUERY: &str = r#"
type name = "R" {
  column name = "ts", type = "timestamp"
  column name = "v", type = "int"
}
operator name = "gen", type = "generator" {
  param count = 60000
  param rate = 20000
  output name = "raw", type = "R"
}
operator name = "m", type = "map" {
  input name = "raw"
  param on_error = "fail"
  param columns = "ts, CASE WHEN ts >= TIMESTAMP '2023-11-14 22:13:50' THEN v / (v - v) ELSE v END AS w"
  output name = "mapped"
}
operator name = "out", type = "writer" {
  input name = "mapped"
  param path = "${OUTPUT}"
}
"#;

#[test]
fn an_operator_failing_on_every_restore_fails_its_cluster_query_after_the_last_attempt() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), QUERY).expect("query");
    let cluster = LocalCluster::start(3, 8);
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &[
            "--var",
            "OUTPUT=out",
            "--parallelism",
            "3",
            "--no-chaining",
            "--checkpoint-every",
            "4000",
        ],
    );
    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let logs = cluster.logs();
    assert!(!out.status.success(), "the submission failed: {stderr}");
    assert!(
        stderr.contains("operator \"m\"") && stderr.contains("Divide by zero"),
        "the submission names the operator's error: {stderr}\n{logs}"
    );
    let log = cluster.coordinator_log();
    assert!(
        log.contains("restoring its instances on worker"),
        "per-task recovery was tried first: {log}"
    );
    assert!(
        log.contains("query q failed after")
            && log.contains("the last 10 in a row with no checkpoint completed"),
        "the query failed after its last attempt: {log}"
    );
    // Each attempt after a failure waited twice as long as the one before (from the tests'
    // 20 ms: `common::cluster::quick_restarts`).
    assert!(
        log.contains("recovering from the last checkpoint in 20ms")
            && log.contains("recovering from the last checkpoint in 40ms"),
        "the attempts backed off: {log}"
    );
    let status = cluster.status("q");
    assert_eq!(status["state"], "failed", "{status}\n{logs}");
    assert!(
        status["error"]
            .as_str()
            .is_some_and(|e| e.contains("Divide by zero")),
        "{status}"
    );
    // Every failure and every checkpoint of every attempt was taken: no epoch numbered twice
    // (a new attempt once numbered its checkpoints after the one it restored, again).
    assert!(
        !log.contains("the query's life refused"),
        "the query's life took every input: {log}"
    );
    let started: Vec<u64> = cluster
        .life_events()
        .iter()
        .filter(|e| e["event"] == "transition" && e["to"]["state"] == "checkpointing")
        .filter_map(|e| e["to"]["epoch"].as_u64())
        .collect();
    assert!(
        started.len() >= 7 && started.windows(2).all(|w| w[0] < w[1]),
        "checkpoints numbered in order across attempts: {started:?}"
    );
}
