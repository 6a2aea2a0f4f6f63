//! Issue 19, probe41 H2: one SIGTERM never ended a checkpointed run whose `MATCH_RECOGNIZE`,
//! in a task of its own, gave up at the stop before an exactly-once Kafka sink. The last
//! checkpoint failed (the pattern gave up the rows still to match), the coordinator asked for
//! another last one that no source could take any more, and the sink waited for ever for the
//! commit of a last checkpoint: it took a second signal to end the run. Now the run ends on
//! the one signal as a stop does (exit 143), every checkpoint it began has an outcome, and a
//! run resumed from its checkpoints commits what an uninterrupted run commits, no row lost
//! and none twice for a `read_committed` reader.
//!
//! The file sink's variant is
//! `a_checkpointed_pattern_busy_with_what_it_read_stops_on_the_first_sigterm_and_resumes_to_the_uninterrupted_output`.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use common::kafka::Cluster;
use common::{wait_until_or_show, ChildGuard};

/// Every row starts a match that ends at the next `C`: `GAP` partial matches in flight, each
/// row costs them all. The watermark lags 12 000 rows behind, so that the end of the input
/// leaves that many rows to match (seconds of work, more than the second of grace of a stop).
const QUERY: &str = "CREATE TABLE t (p BIGINT, ts BIGINT, v BIGINT, pad VARCHAR)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts', watermark = '12 seconds');
CREATE TABLE out WITH (connector = 'kafka', topic = '${OUT}', 'properties.bootstrap.servers' = '${SERVERS}', format = 'csv');
INSERT INTO out
SELECT * FROM t MATCH_RECOGNIZE (
  PARTITION BY p ORDER BY ts
  MEASURES FIRST(ts) AS f, LAST(ts) AS l, COUNT(*) AS c
  ONE ROW PER MATCH
  AFTER MATCH SKIP TO NEXT ROW
  PATTERN (A B* C)
  DEFINE B AS v >= 0, C AS v < 0
);";

const ROWS: u64 = 21_000;
/// Every GAP-th row is a `C`.
const GAP: u64 = 300;

/// One partition, one row a millisecond.
fn input() -> String {
    let mut csv = String::from("p,ts,v,pad\n");
    for ts in 1..=ROWS {
        let v = if ts % GAP == 0 { -1 } else { 1 };
        csv.push_str(&format!("1,{ts},{v},x\n"));
    }
    csv
}

/// A checkpointed run `name` of the query into topic `topic` (checkpoints in `ckpt-TOPIC`,
/// every second: an exactly-once sink commits only when one completes), with `layout`, its
/// events in `events-NAME.jsonl` and its log in `log-NAME.txt` (a file: a pipe nobody reads
/// while it runs could fill).
fn start(dir: &Path, servers: &str, topic: &str, name: &str, layout: &[&str]) -> ChildGuard {
    let log = std::fs::File::create(dir.join(format!("log-{name}.txt"))).expect("log");
    ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["run", "q.sql", "--no-api", "--var", servers, "--var"])
            .arg(format!("OUT={topic}"))
            .arg("--checkpoint-dir")
            .arg(format!("ckpt-{topic}"))
            .args(["--checkpoint-interval", "1s"])
            .args(layout)
            .arg("--events")
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

/// The events of run `name`.
fn events(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(format!("events-{name}.jsonl"))).unwrap_or_default()
}

/// Waits for run `name` to end by itself; its exit code.
fn ended(dir: &Path, run: &mut ChildGuard, name: &str) -> Option<i32> {
    let mut exited = None;
    wait_until_or_show(
        &format!("{name} to end"),
        || {
            exited = run.0.try_wait().expect("waits");
            exited.is_some()
        },
        || format!("{}\n{}", log(dir, name), events(dir, name)),
    );
    exited.and_then(|s| s.code())
}

/// The checkpoints that run `name`'s events say began and never ended, completed or failed.
fn without_an_outcome(dir: &Path, name: &str) -> BTreeSet<u64> {
    let mut open = BTreeSet::new();
    for line in events(dir, name).lines() {
        let e: serde_json::Value = serde_json::from_str(line).expect("an event per line");
        match (e["event"].as_str(), e["epoch"].as_u64()) {
            (Some("checkpoint_started"), Some(epoch)) => {
                open.insert(epoch);
            }
            (Some("checkpoint_completed" | "checkpoint_failed"), Some(epoch)) => {
                open.remove(&epoch);
            }
            _ => {}
        }
    }
    open
}

/// The rows of `topic` a `read_committed` reader sees, sorted.
fn committed(cluster: &Cluster, topic: &str) -> Vec<String> {
    let mut rows = cluster.read_committed(topic);
    rows.sort();
    rows
}

#[test]
fn a_pattern_that_gives_up_before_an_exactly_once_kafka_sink_stops_on_one_sigterm_and_resumes_to_the_uninterrupted_rows(
) {
    let cluster = Cluster::start();
    cluster.topic("reference", 1);
    cluster.topic("out", 1);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), input()).expect("input");
    std::fs::write(dir.path().join("q.sql"), QUERY).expect("query");
    let servers = format!("SERVERS={}", cluster.servers());

    let mut reference = start(dir.path(), &servers, "reference", "reference", &[]);
    assert_eq!(
        ended(dir.path(), &mut reference, "reference"),
        Some(0),
        "{}",
        log(dir.path(), "reference")
    );
    let expected = committed(&cluster, "reference");
    assert_eq!(
        expected.len() as u64,
        ROWS - 1,
        "a match from every row but the last"
    );

    // The pattern in a task of its own, the sink in another. The last checkpoint began: the
    // source has sent every row to the pattern's task, which is matching them.
    let apart = ["--no-chaining"];
    let mut stopped = start(dir.path(), &servers, "out", "stopped", &apart);
    wait_until_or_show(
        "the last checkpoint to begin",
        || events(dir.path(), "stopped").contains(r#""last":true"#),
        || log(dir.path(), "stopped"),
    );
    let sent = Command::new("kill")
        .args(["-TERM", &stopped.pid().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    // One signal only: the run ends on it, or the failsafe of the wait fails the test.
    let code = ended(dir.path(), &mut stopped, "stopped");
    let stopped_log = log(dir.path(), "stopped");
    assert_eq!(code, Some(143), "{stopped_log}");
    // It gave up the rows still to match, for the resumed run to match them.
    assert!(
        stopped_log.contains("run again with the same checkpoints, the query matches them"),
        "{stopped_log}"
    );
    let open = without_an_outcome(dir.path(), "stopped");
    assert!(
        open.is_empty(),
        "checkpoints {open:?} began and never ended: {}",
        events(dir.path(), "stopped")
    );

    let mut resumed = start(dir.path(), &servers, "out", "resumed", &apart);
    assert_eq!(
        ended(dir.path(), &mut resumed, "resumed"),
        Some(0),
        "{}",
        log(dir.path(), "resumed")
    );
    let got = committed(&cluster, "out");
    assert_eq!(got.len(), expected.len(), "rows lost or twice");
    assert!(
        got == expected,
        "the committed rows differ from the uninterrupted run's"
    );
}
