//! A Kafka source started at the latest offsets (`scan.startup.mode = 'latest-offset'`) and
//! killed before any record reached a partition resumes from the offsets it started at, not
//! from the latest ones again: the records written while it was down are read, none lost,
//! and none of those written before its first start.

use crate::common;

use std::process::{Command, Stdio};

use common::kafka::Cluster;
use common::{kill_after, wait_until, ChildGuard};

const QUERY: &str = r#"
type name = "Event" {
  column name = "id", type = "int"
}
operator name = "in", type = "kafka" {
  param topic = "events"
  param properties.bootstrap.servers = "${SERVERS}"
  param scan.startup.mode = "latest-offset"
  param parallelism = 2
  output name = "events", type = "Event"
}
operator name = "out", type = "kafka" {
  input name = "events"
  param topic = "seen"
  param properties.bootstrap.servers = "${SERVERS}"
  param sink.delivery-guarantee = "at-least-once"
}
"#;

fn run(dir: &std::path::Path, servers: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_anduin"));
    c.args([
        "run",
        "q.flow",
        "--var",
        servers,
        "--checkpoint-dir",
        "ckpt",
        "--checkpoint-interval",
        "100ms",
        "--events",
        "-",
    ])
    .current_dir(dir)
    .env_remove("RUST_LOG")
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    c
}

#[test]
fn a_kafka_source_started_at_the_latest_offset_resumes_from_where_it_started() {
    let cluster = Cluster::start();
    cluster.topic("events", 2);
    cluster.topic("seen", 1);
    let before: Vec<String> = (0..10).map(|i| i.to_string()).collect();
    cluster.produce("events", 2, &before);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let servers = format!("SERVERS={}", cluster.servers());

    // Checkpoints with no record read yet, then a kill.
    let first = run(dir.path(), &servers).spawn().expect("starts");
    assert!(kill_after(first, 2, 0), "the first run ended by itself");

    let during: Vec<String> = (100..120).map(|i| i.to_string()).collect();
    cluster.produce("events", 2, &during);
    // Its stderr unread: the guard kills it once the rows are seen.
    let _resumed = ChildGuard(
        run(dir.path(), &servers)
            .stderr(Stdio::null())
            .spawn()
            .expect("starts"),
    );
    wait_until("the records written while the query was down", || {
        cluster.read_committed("seen").len() >= during.len()
    });
    let mut seen = cluster.read_committed("seen");
    seen.sort();
    let mut want = during;
    want.sort();
    assert_eq!(
        seen, want,
        "the records written while it was down, each once"
    );
}
