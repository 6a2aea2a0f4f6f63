//! Issue 19, probe41 H3: a SIGTERM with a Kafka source at parallelism 2 before a tumbling
//! window made the window fire partial windows after the stop's last barrier. One source
//! instance stopped and ended its stream (no watermark of +∞: it had not read its input to the
//! end), and the window took that end as +∞: the other instance's watermarks then carried its
//! event time past the rows the stopped one had yet to read. An at-least-once sink wrote those
//! windows with partial counts, and the resumed run wrote them again, whole. Now the end of a
//! stopped input holds the task's event time at that input's last watermark.
//!
//! The run is stopped at seeded moments (after the Nth completed checkpoint) and resumed;
//! every row in the at-least-once topic is a row of the uninterrupted run's (a row written
//! twice is allowed, a partial window is not), and every row of it is there.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use common::kafka::Cluster;
use common::{anduin_ok, wait_until_or_show, ChildGuard};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "in", type = "kafka" {
  param topic = "events"
  param properties.bootstrap.servers = "${SERVERS}"
  param format = "csv"
  param bounded = true
  param event_time = "ts"
  param watermark = "1s"
  output name = "events", type = "Event"
}
operator name = "w", type = "window" {
  input name = "events"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS cnt, SUM(value) AS total"
  output name = "perSecond"
}
operator name = "out", type = "kafka" {
  input name = "perSecond"
  param topic = "${OUT}"
  param format = "csv"
  param sink.delivery-guarantee = "at-least-once"
  param properties.bootstrap.servers = "${SERVERS}"
}
"#;

/// Rows of 3 partitions, 10 rows a second of event time, partition by partition in time
/// order: the two source instances (one reads two partitions) go through time at their
/// own pace.
const ROWS: u64 = 30_000;

/// `anduin run` of the query into `topic` at parallelism 2, with `flags`.
fn command(dir: &Path, servers: &str, topic: &str, flags: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_anduin"));
    c.args(["run", "q.flow", "--no-api", "-q", "--var", servers, "--var"])
        .arg(format!("OUT={topic}"))
        .args(["--parallelism", "2", "--batch-size", "100"])
        .args(flags)
        .current_dir(dir)
        .env_remove("RUST_LOG");
    c
}

#[test]
fn a_windowed_kafka_query_of_two_source_instances_stopped_by_sigterm_resumes_without_a_partial_window(
) {
    let cluster = Cluster::start();
    cluster.topic("events", 3);
    let input: Vec<String> = (0..ROWS)
        .map(|i| format!("{},{},{}", 1_700_000_000_000 + i * 100, i % 5, i % 97))
        .collect();
    cluster.produce("events", 3, &input);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let servers = format!("SERVERS={}", cluster.servers());

    cluster.topic("reference", 1);
    let out = command(dir.path(), &servers, "reference", &[])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected: BTreeSet<String> = cluster.read_committed("reference").into_iter().collect();
    assert!(expected.len() > 1_000, "{} windows", expected.len());

    for after in [1usize, 3, 6] {
        let topic = format!("out-{after}");
        cluster.topic(&topic, 1);
        let ckpt = format!("ckpt-{after}");
        let events = dir.path().join(format!("events-{after}.jsonl"));
        let log_path = dir.path().join(format!("log-{after}.txt"));
        let flags = [
            "--checkpoint-dir",
            &ckpt,
            "--checkpoint-every",
            "1000",
            "--events",
            events.to_str().expect("utf-8"),
        ];
        let log = std::fs::File::create(&log_path).expect("log");
        let mut run = ChildGuard(
            command(dir.path(), &servers, &topic, &flags)
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("starts"),
        );
        let completed = || {
            std::fs::read_to_string(&events)
                .unwrap_or_default()
                .matches("\"checkpoint_completed\"")
                .count()
        };
        let mut exited = None;
        wait_until_or_show(
            &format!("checkpoint {after} or the end"),
            || {
                exited = run.0.try_wait().expect("waits");
                exited.is_some() || completed() >= after
            },
            || std::fs::read_to_string(&log_path).unwrap_or_default(),
        );
        if exited.is_none() {
            let sent = Command::new("kill")
                .args(["-TERM", &run.pid().to_string()])
                .status()
                .expect("kill runs");
            assert!(sent.success());
            wait_until_or_show(
                "the run to stop",
                || {
                    exited = run.0.try_wait().expect("waits");
                    exited.is_some()
                },
                || std::fs::read_to_string(&log_path).unwrap_or_default(),
            );
        }
        let resumed = anduin_ok(
            dir.path(),
            &[
                "run",
                "q.flow",
                "--no-api",
                "-q",
                "--var",
                &servers,
                "--var",
                &format!("OUT={topic}"),
                "--parallelism",
                "2",
                "--batch-size",
                "100",
                "--checkpoint-dir",
                &ckpt,
                "--checkpoint-every",
                "1000",
            ],
        );
        drop(resumed);
        let got: BTreeSet<String> = cluster.read_committed(&topic).into_iter().collect();
        let wrong: Vec<&String> = got.difference(&expected).take(5).collect();
        assert!(
            wrong.is_empty(),
            "stopped after checkpoint {after}: windows the uninterrupted run does not write (partial counts?): {wrong:?}\n{}",
            std::fs::read_to_string(&log_path).unwrap_or_default()
        );
        let missing: Vec<&String> = expected.difference(&got).take(5).collect();
        assert!(
            missing.is_empty(),
            "stopped after checkpoint {after}: windows lost: {missing:?}"
        );
    }
}
