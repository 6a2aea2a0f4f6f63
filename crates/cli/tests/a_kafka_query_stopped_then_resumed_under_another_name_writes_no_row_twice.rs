//! probe41 H4: an exactly-once Kafka sink resumed under another query name (`--name`, or the
//! file renamed) read the topic back under the new name's `transactional.id`, found none of
//! the records the stopped run had committed, and wrote them again. Now a restored sink keeps
//! its checkpoint's `transactional.id`: the read-back finds what was committed, and the
//! resumed run writes each row once.
//!
//! The stop is a SIGTERM, whose last checkpoint is committed before the run ends: the
//! resumed run restores that checkpoint, whose journal holds the rows its commit wrote.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::kafka::{filter_query, filter_rows, Cluster};
use common::{wait_until_or_show, ChildGuard};

/// A checkpointed run of the unbounded query as `name`, its events in `events-NAME.jsonl`
/// and its log in `log-NAME.txt` (a file: a pipe nobody reads while it runs could fill).
fn start(dir: &Path, servers: &str, name: &str) -> ChildGuard {
    let log = std::fs::File::create(dir.join(format!("log-{name}.txt"))).expect("log");
    ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args([
                "run", "q.flow", "--no-api", "--var", servers, "--name", name,
            ])
            // A checkpoint every 400 rows, and every 200 ms for the rows after the last one:
            // an exactly-once sink writes what it holds only when a checkpoint commits.
            .args(["--checkpoint-dir", "ckpt", "--checkpoint-every", "400"])
            .args(["--checkpoint-interval", "200ms"])
            .args(["--batch-size", "100", "--events"])
            .arg(format!("events-{name}.jsonl"))
            .current_dir(dir)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starts"),
    )
}

/// The log of run `name`.
fn log(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(format!("log-{name}.txt"))).unwrap_or_default()
}

/// Stops run `name` with one SIGTERM and requires it to end as a stop does (exit 143).
fn stop(dir: &Path, run: &mut ChildGuard, name: &str) {
    let sent = Command::new("kill")
        .args(["-TERM", &run.pid().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let mut exited = None;
    wait_until_or_show(
        &format!("{name} to stop on SIGTERM"),
        || {
            exited = run.0.try_wait().expect("waits");
            exited.is_some()
        },
        || log(dir, name),
    );
    assert_eq!(
        exited.and_then(|s| s.code()),
        Some(143),
        "{name}: {}",
        log(dir, name)
    );
}

#[test]
fn a_kafka_query_stopped_then_resumed_under_another_name_writes_no_row_twice() {
    let cluster = Cluster::start();
    cluster.topic("events", 2);
    cluster.topic("out", 1);
    let (input, expected) = filter_rows(6_000);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), filter_query("", "out", "")).expect("query");
    let servers = format!("SERVERS={}", cluster.servers());

    // The first half, read and committed by a run stopped after it.
    cluster.produce("events", 2, &input[..3_000]);
    let mut first = start(dir.path(), &servers, "alpha");
    wait_until_or_show(
        "the first run to commit rows",
        || !cluster.read_committed("out").is_empty(),
        || log(dir.path(), "alpha"),
    );
    stop(dir.path(), &mut first, "alpha");
    let committed = cluster.read_committed("out").len();
    assert!(
        committed > 0,
        "the stop committed its last checkpoint's rows"
    );

    // The rest, read by the run resumed under another name.
    cluster.produce("events", 2, &input[3_000..]);
    let mut second = start(dir.path(), &servers, "beta");
    wait_until_or_show(
        "the resumed run to write every row",
        || cluster.read_committed("out").len() >= expected.len(),
        || {
            let mut got = cluster.read_committed("out");
            got.sort();
            let missing: Vec<&String> = expected
                .iter()
                .filter(|e| got.binary_search(e).is_err())
                .collect();
            let mut dup = got.clone();
            dup.dedup();
            format!(
                "{} of {} rows (alpha had committed {committed}); {} missing, first {:?}, last {:?}; {} twice\n--alpha--\n{}\n--beta--\n{}",
                got.len(),
                expected.len(),
                missing.len(),
                missing.first(),
                missing.last(),
                got.len() - dup.len(),
                log(dir.path(), "alpha"),
                log(dir.path(), "beta")
            ) + &std::fs::read_to_string(dir.path().join("events-beta.jsonl"))
                .unwrap_or_default()
        },
    );
    stop(dir.path(), &mut second, "beta");
    let mut got = cluster.read_committed("out");
    got.sort();
    assert_eq!(
        got.len(),
        expected.len(),
        "rows written twice or lost (the stopped run had committed {committed})"
    );
    assert!(got == expected, "the rows differ from the filtered input");
}
