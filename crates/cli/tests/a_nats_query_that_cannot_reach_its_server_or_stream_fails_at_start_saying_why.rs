//! A NATS source or sink that cannot start says why, in bounded time: a server that refuses
//! the connection (at once), a server that does not answer (within `connect.timeout`, which
//! may be too short when under a second), a
//! server without JetStream, a stream that does not exist, a source's or a sink's subject the
//! stream does not keep, and (with checkpoints) a stream whose duplicate window is shorter
//! than the sink's `min_duplicate_window` or than the checkpoint interval.

use crate::common;

use std::time::{Duration, Instant};

use common::anduin;
use common::nats::NatsServer;

fn query(server: &str, input: &str, output: &str, subject: &str) -> String {
    format!(
        r#"
type name = "Event" {{
  column name = "ts", type = "timestamp"
  column name = "value", type = "int"
}}
operator name = "in", type = "nats" {{
  param server = "{server}"
  param stream = "{input}"
  param connect.timeout = "2s"
  param bounded = true
  output name = "events", type = "Event"
}}
operator name = "out", type = "nats" {{
  input name = "events"
  param server = "{server}"
  param stream = "{output}"
  param subject = "{subject}"
  param connect.timeout = "2s"
}}
"#
    )
}

/// Runs `q` with `extra` args; its exit code and stderr, and how long it took.
fn run(q: &str, extra: &[&str]) -> (Option<i32>, String, Duration) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), q).expect("query");
    let started = Instant::now();
    let mut args = vec!["run", "q.flow"];
    args.extend_from_slice(extra);
    let out = anduin(dir.path(), &args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed(),
    )
}

#[test]
fn a_server_that_refuses_the_connection_fails_the_start_saying_so() {
    // Nothing listens on a port just bound and released: the OS refuses at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let server = format!("nats://127.0.0.1:{port}");
    let (code, stderr, took) = run(&query(&server, "EVENTS", "OUT", "out"), &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the connection to the NATS server at {server} was refused"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("answered within"), "{stderr}");
    assert!(stderr.contains("check `server`"), "{stderr}");
    assert!(took < Duration::from_secs(30), "took {took:?}: {stderr}");
}

#[test]
fn a_server_that_does_not_answer_fails_the_start_within_the_connect_timeout() {
    // A listener that accepts connections but never says a word (a NATS server greets its
    // clients first): the client waits for the greeting until the timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
    let server = format!(
        "nats://127.0.0.1:{}",
        silent.local_addr().expect("its address").port()
    );
    let (code, stderr, took) = run(&query(&server, "EVENTS", "OUT", "out"), &[]);
    drop(silent);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "no NATS server at {server} answered within 2000 ms"
        )),
        "{stderr}"
    );
    assert!(took >= Duration::from_secs(2), "took {took:?}: {stderr}");
    assert!(took < Duration::from_secs(30), "took {took:?}: {stderr}");
}

#[test]
fn a_start_that_times_out_under_a_second_says_the_timeout_may_be_too_short() {
    // Issue 19 (L2): `connect.timeout = "1ms"` against a live server said only that no server
    // answered. A silent listener times every start out, whatever the timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
    let server = format!(
        "nats://127.0.0.1:{}",
        silent.local_addr().expect("its address").port()
    );
    let q = query(&server, "EVENTS", "OUT", "out").replace(
        r#"param connect.timeout = "2s""#,
        r#"param connect.timeout = "5ms""#,
    );
    let (code, stderr, _) = run(&q, &[]);
    drop(silent);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "no NATS server at {server} answered within 5 ms (timed out): `connect.timeout` (5 ms) may be too short for a server to answer, even one that runs: raise it"
        )),
        "{stderr}"
    );
}

#[test]
fn a_server_without_jetstream_fails_the_start_saying_to_enable_it() {
    let server = NatsServer::start_with(false);
    let (code, stderr, _) = run(&query(&server.url, "EVENTS", "OUT", "out"), &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the NATS server at {} has no JetStream",
            server.url
        )),
        "{stderr}"
    );
    assert!(stderr.contains("`nats-server -js`"), "{stderr}");
}

#[test]
fn a_stream_that_does_not_exist_fails_the_start_naming_it() {
    let server = NatsServer::start();
    let window = Duration::from_secs(120);
    server.stream("EVENTS", &["events"], window);
    server.stream("OUT", &["out"], window);

    let (code, stderr, _) = run(&query(&server.url, "EVNETS", "OUT", "out"), &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "stream `EVNETS` does not exist on the NATS server at {}: create it first",
            server.url
        )),
        "{stderr}"
    );

    let (code, stderr, _) = run(&query(&server.url, "EVENTS", "MISSING", "out"), &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("stream `MISSING` does not exist"),
        "{stderr}"
    );
}

#[test]
fn a_sink_subject_outside_its_stream_fails_the_start_naming_both() {
    let server = NatsServer::start();
    let window = Duration::from_secs(120);
    server.stream("EVENTS", &["events"], window);
    server.stream("OUT", &["out.>"], window);
    let (code, stderr, _) = run(&query(&server.url, "EVENTS", "OUT", "elsewhere"), &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("subject `elsewhere` is not one of stream `OUT`'s subjects (out.>)"),
        "{stderr}"
    );
}

#[test]
fn a_source_subject_outside_its_stream_fails_the_start_naming_the_source() {
    let server = NatsServer::start();
    let window = Duration::from_secs(120);
    server.stream("EVENTS", &["events.>"], window);
    server.stream("OUT", &["out"], window);
    let q = query(&server.url, "EVENTS", "OUT", "out").replace(
        "param bounded = true",
        "param bounded = true\n  param subject = \"evnets.a\"",
    );
    let (code, stderr, _) = run(&q, &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("subject `evnets.a` is not one of stream `EVENTS`'s subjects (events.>): the source would read none of the stream's messages"),
        "{stderr}"
    );
    assert!(!stderr.contains("sink"), "{stderr}");
}

#[test]
fn a_duplicate_window_shorter_than_asked_is_refused_with_checkpoints_only() {
    let server = NatsServer::start();
    server.stream("EVENTS", &["events"], Duration::from_secs(120));
    server.stream("OUT", &["out"], Duration::from_secs(5));
    server.publish("events", &["1700000000000,1".to_string()]);
    let q = query(&server.url, "EVENTS", "OUT", "out");
    let (code, stderr, _) = run(&q, &["--checkpoint-dir", "ckpt"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "stream `OUT` keeps message ids for 5000 ms, less than `min_duplicate_window` (60000 ms)"
        ),
        "{stderr}"
    );
    // Without checkpoints no run resumes: the window does not matter.
    let (code, stderr, _) = run(&q, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(server.read("OUT"), ["1700000000000,1"]);
}

#[test]
fn a_checkpoint_interval_longer_than_the_duplicate_window_is_refused_naming_both() {
    // Issue 19 (M1): accepted silently, and a resumed run stored its last interval's rows
    // twice, the stream having forgotten their ids.
    let server = NatsServer::start();
    server.stream("EVENTS", &["events"], Duration::from_secs(120));
    server.stream("OUT", &["out"], Duration::from_secs(120));
    server.publish("events", &["1700000000000,1".to_string()]);
    let q = query(&server.url, "EVENTS", "OUT", "out");
    let (code, stderr, _) = run(
        &q,
        &["--checkpoint-dir", "ckpt", "--checkpoint-interval", "3m"],
    );
    assert_eq!(code, Some(1), "{stderr}");
    for part in [
        r#"operator "out": the NATS sink "out" writes exactly once"#,
        "`OUT` keeps message ids for 120000 ms and the run takes a checkpoint only every 180000 ms",
        "`--checkpoint-interval` below 120000 ms",
        "nats stream edit OUT --dupe-window 360s",
        r#"delivery = "at-least-once""#,
    ] {
        assert!(stderr.contains(part), "{part} not in {stderr}");
    }
    assert_eq!(server.count("OUT"), 0, "nothing written");
    let (code, stderr, _) = run(
        &q,
        &["--checkpoint-dir", "ckpt", "--checkpoint-interval", "1m"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(server.read("OUT"), ["1700000000000,1"]);
}
