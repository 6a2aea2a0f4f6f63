//! probe41 H1: a run whose last checkpoint said the query finished, but that ended before its
//! exactly-once Kafka sink committed that checkpoint (killed, or its commit failed), left
//! its rows in the checkpoint's journal only; the next run said "this query already
//! finished … nothing to do" and never wrote them. Now the next run restores the finished
//! checkpoint's operators (the sink's restore commits its journal) and runs nothing.
//!
//! The first run's one commit is failed by the mock broker (every `AddPartitionsToTxn` refused while
//! the run runs): it fails after its finished checkpoint. Run again with the broker well, the
//! query writes every row once, and a third run has nothing left to do.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::anduin;
use common::kafka::{filter_query, filter_rows, Cluster};
use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};

/// The filter query, its source bounded.
fn query() -> String {
    filter_query("param bounded = true", "out", "")
}

/// A mock cluster with the query's input, a directory with the query, the `--var` of the
/// servers, and the rows an uninterrupted run commits, sorted.
fn prepared() -> (Cluster, tempfile::TempDir, String, Vec<String>) {
    let cluster = Cluster::start();
    cluster.topic("events", 2);
    cluster.topic("out", 1);
    let (input, expected) = filter_rows(2_000);
    cluster.produce("events", 2, &input);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), query()).expect("query");
    let servers = format!("SERVERS={}", cluster.servers());
    (cluster, dir, servers, expected)
}

/// `anduin run q.flow` in `dir` with `flags`, checkpointed into `ckpt` with one checkpoint:
/// the last, which says the query finished.
fn run(dir: &Path, servers: &str, flags: &[&str]) -> Output {
    let mut args = vec![
        "run",
        "q.flow",
        "--no-api",
        "-q",
        "--var",
        servers,
        "--checkpoint-dir",
        "ckpt",
        "--checkpoint-interval",
        "1h",
    ];
    args.extend_from_slice(flags);
    anduin(dir, &args)
}

#[test]
fn a_finished_kafka_query_whose_last_commit_failed_commits_it_when_run_again() {
    let (cluster, dir, servers, expected) = prepared();
    // Logs at info: the Kafka sink says when its `transactional.id` is not its checkpoint's.
    let run = || run(dir.path(), &servers, &["-v"]);

    // A fatal answer to every commit: the sink cannot commit its one transaction.
    let refused = [RDKafkaRespErr::RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED; 64];
    cluster.refuse(RDKafkaApiKey::AddPartitionsToTxn, &refused);
    let first = run();
    let said = String::from_utf8_lossy(&first.stderr).to_string();
    assert_ne!(first.status.code(), Some(0), "the commit failed: {said}");
    // The run's error names the broker's reason, not only librdkafka's "Fatal error"
    // (probe48 L1).
    let error = said
        .lines()
        .filter(|l| l.starts_with("error:"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        error.contains("Transactional Id authorization failed"),
        "{error}\n{said}"
    );
    assert!(
        cluster.read_committed("out").is_empty(),
        "nothing committed: {said}"
    );
    let manifest_says_finished = std::fs::read_dir(dir.path().join("ckpt"))
        .expect("checkpoints")
        .flatten()
        .any(|e| {
            std::fs::read_to_string(e.path().join("MANIFEST.json"))
                .is_ok_and(|m| m.contains("\"finished\": true"))
        });
    assert!(
        manifest_says_finished,
        "the failed commit came after the checkpoint that says the query finished: {said}"
    );

    cluster.accept(RDKafkaApiKey::AddPartitionsToTxn);
    // Run again with a sink that is not the checkpoint's (another topic): it cannot restore
    // the checkpoint, and says that what it holds stays uncommitted, not only "finished".
    let edited = query().replace("param topic = \"out\"", "param topic = \"elsewhere\"");
    std::fs::write(dir.path().join("q.flow"), edited).expect("query");
    let elsewhere = run();
    let said = String::from_utf8_lossy(&elsewhere.stderr).to_string();
    assert_eq!(elsewhere.status.code(), Some(0), "{said}");
    assert!(
        said.contains("cannot restore checkpoint") && said.contains("still uncommitted"),
        "{said}"
    );
    assert!(cluster.read_committed("out").is_empty(), "{said}");
    std::fs::write(dir.path().join("q.flow"), query()).expect("query");
    let second = run();
    let said = String::from_utf8_lossy(&second.stderr).to_string();
    assert_eq!(second.status.code(), Some(0), "{said}");
    assert!(said.contains("already finished"), "{said}");
    // Restored under the query's own name (probe42: as `query`, whose producer would have
    // fenced a live query of that name on a real broker).
    assert!(!said.contains("transactional.id changed"), "{said}");
    let mut got = cluster.read_committed("out");
    got.sort();
    assert_eq!(
        got.len(),
        expected.len(),
        "rows lost or written twice: {said}"
    );
    assert!(got == expected, "the rows differ from the filtered input");

    // Committed once: run again, nothing more.
    let third = run();
    assert_eq!(third.status.code(), Some(0));
    assert_eq!(cluster.read_committed("out").len(), expected.len());
}

/// probe42: a last checkpoint that failed (here injected) in a run that was not stopped left
/// the exactly-once sink's rows uncommitted, and the run still ended as finished, exit 0.
/// Now the sink fails the run saying how many rows it could not commit and what to do; run
/// again, the query commits every row once.
#[test]
fn a_kafka_query_whose_last_checkpoint_failed_fails_and_commits_its_rows_when_run_again() {
    let (cluster, dir, servers, expected) = prepared();
    let run = |flags: &[&str]| run(dir.path(), &servers, flags);
    // Its one checkpoint, the last, fails.
    let first = run(&["--inject-checkpoint-failure", "1"]);
    let said = String::from_utf8_lossy(&first.stderr).to_string();
    assert_ne!(first.status.code(), Some(0), "{said}");
    assert!(
        said.contains("not committed to topic `out`") && said.contains("run the query again"),
        "{said}"
    );
    assert!(cluster.read_committed("out").is_empty(), "{said}");

    let second = run(&[]);
    let said = String::from_utf8_lossy(&second.stderr).to_string();
    assert_eq!(second.status.code(), Some(0), "{said}");
    let mut got = cluster.read_committed("out");
    got.sort();
    assert!(
        got == expected,
        "{} rows of {}: {said}",
        got.len(),
        expected.len()
    );
}

/// probe42: a finished query run again needed its Kafka broker even when its last
/// checkpoint held nothing to commit (it failed after `connect.timeout`). Now a sink that
/// only commits connects when the checkpoint holds rows for it.
#[test]
fn a_finished_kafka_query_with_nothing_to_commit_is_finished_with_its_broker_down() {
    let (cluster, dir, servers, _) = prepared();
    let nothing = query().replace("value < 50", "value < 0");
    std::fs::write(dir.path().join("q.flow"), nothing).expect("query");
    let first = run(dir.path(), &servers, &[]);
    let said = String::from_utf8_lossy(&first.stderr).to_string();
    assert_eq!(first.status.code(), Some(0), "{said}");

    cluster.down();
    let again = run(dir.path(), &servers, &[]);
    let said = String::from_utf8_lossy(&again.stderr).to_string();
    assert_eq!(again.status.code(), Some(0), "{said}");
    assert!(said.contains("already finished"), "{said}");
}

/// probe48 M1: once the output topic's retention had deleted the records from where the
/// finished checkpoint's read-back starts, running the query again waited 60 s and then
/// blamed the servers' reach, every time. It now says at once what happened.
#[test]
fn a_finished_kafka_query_whose_output_retention_deleted_says_so_when_run_again() {
    let (cluster, dir, servers, _) = prepared();
    let first = run(dir.path(), &servers, &[]);
    let said = String::from_utf8_lossy(&first.stderr).to_string();
    assert_eq!(first.status.code(), Some(0), "{said}");

    // The mock broker keeps a few megabytes a partition: the oldest records go.
    let filler = vec!["x".repeat(500_000); 24];
    cluster.produce("out", 1, &filler);
    assert!(
        cluster.low_watermark("out", 0) > 0,
        "the broker deleted the first records"
    );
    let again = run(dir.path(), &servers, &[]);
    let said = String::from_utf8_lossy(&again.stderr).to_string();
    assert_ne!(again.status.code(), Some(0), "{said}");
    assert!(said.contains("retention deleted them"), "{said}");
    assert!(!said.contains("not reached in time"), "{said}");
}
