//! A Kafka source or sink that cannot start says why, in bounded time: a broker that does
//! not answer (within `connect.timeout`), a topic that does not exist on the cluster.

use crate::common;

use std::time::{Duration, Instant};

use common::anduin;
use common::kafka::Cluster;

fn query(servers: &str, input: &str, output: &str) -> String {
    format!(
        r#"
type name = "Event" {{
  column name = "ts", type = "timestamp"
  column name = "value", type = "int"
}}
operator name = "in", type = "kafka" {{
  param topic = "{input}"
  param properties.bootstrap.servers = "{servers}"
  param connect.timeout = "2s"
  param bounded = true
  output name = "events", type = "Event"
}}
operator name = "out", type = "kafka" {{
  input name = "events"
  param topic = "{output}"
  param properties.bootstrap.servers = "{servers}"
  param connect.timeout = "2s"
}}
"#
    )
}

/// Runs `q`; its exit code and stderr, and how long it took.
fn run(q: &str) -> (Option<i32>, String, Duration) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), q).expect("query");
    let started = Instant::now();
    let out = anduin(dir.path(), &["run", "q.flow"]);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed(),
    )
}

#[test]
fn a_broker_that_does_not_answer_fails_the_start_within_the_connect_timeout() {
    // Nothing listens on a port just bound and released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let (code, stderr, took) = run(&query(&format!("127.0.0.1:{port}"), "events", "out"));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "no Kafka broker at 127.0.0.1:{port} answered within 2000 ms"
        )),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(30), "took {took:?}: {stderr}");
}

#[test]
fn a_topic_that_does_not_exist_fails_the_start_naming_it() {
    let cluster = Cluster::start();
    cluster.topic("events", 1);
    let (code, stderr, _) = run(&query(&cluster.servers(), "evnets", "events"));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("topic `evnets` does not exist"), "{stderr}");

    let (code, stderr, _) = run(&query(&cluster.servers(), "events", "missing"));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("topic `missing` does not exist"),
        "{stderr}"
    );
}

/// probe41: a host name that does not resolve was waited for the whole `connect.timeout`,
/// then called a broker that did not answer.
#[test]
fn a_broker_host_that_does_not_resolve_is_said_so() {
    let (code, stderr, _) = run(&query("no-such-host.invalid:9092", "events", "out"));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "no host of `properties.bootstrap.servers` (no-such-host.invalid:9092) resolves"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("answered within"), "{stderr}");
}
