//! A NATS source whose server is lost mid-run (killed, then started again on the same port
//! with the same store) stalls while it is gone and reads on once it is back: the messages
//! published after the restart reach the sink's stream, none lost, none twice, without
//! waiting out the client's missed-heartbeat detection (two idle heartbeats of 15 s, which
//! made the source stall for a minute). A server back without its JetStream at first (the
//! consumer cannot be made yet) leaves the query running, trying again, until it is.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::nats::{events, NatsServer};
use common::{wait_until, ChildGuard};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "value", type = "int"
}
operator name = "in", type = "nats" {
  param server = "${SERVER}"
  param stream = "EVENTS"
  param format = "csv"
  output name = "events", type = "Event"
}
operator name = "out", type = "nats" {
  input name = "events"
  param server = "${SERVER}"
  param stream = "OUT"
  param subject = "out"
  param format = "csv"
}
"#;

#[test]
fn a_nats_source_resumes_promptly_once_its_lost_server_is_back() {
    let mut server = NatsServer::start();
    let window = Duration::from_secs(120);
    server.stream("EVENTS", &["events"], window);
    server.stream("OUT", &["out"], window);
    server.publish("events", &events(0, 3));

    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let var = format!("SERVER={}", server.url);
    let _run = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["run", "q.flow", "--var", &var])
            .current_dir(dir.path())
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starts"),
    );
    wait_until("the rows before the outage in OUT", || {
        server.count("OUT") == 3
    });

    server.restart();
    server.publish("events", &events(3, 6));
    // The source reads on once its client is connected again (a few seconds at most on a
    // loaded machine). The bound only turns a stall into a failure: without the fix the
    // source waited for two missed idle heartbeats, 30 s each, before reading again.
    wait_for_rows(&server, 6, Duration::from_secs(25));
    assert_eq!(
        server.read("OUT"),
        events(0, 6),
        "rows lost, twice, or out of order"
    );
}

/// Waits until `count` of `server`'s OUT reaches `n`, failing after `bound` (a stall).
fn wait_for_rows(server: &NatsServer, n: u64, bound: Duration) {
    let back = Instant::now();
    while server.count("OUT") < n {
        assert!(
            back.elapsed() < bound,
            "the source did not read on within {bound:?} of its server's return ({} rows of {n} in OUT)",
            server.count("OUT")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_nats_source_whose_server_comes_back_without_jetstream_at_first_tries_again_until_it_has_it() {
    let mut server = NatsServer::start();
    let window = Duration::from_secs(120);
    server.stream("EVENTS", &["events"], window);
    server.stream("OUT", &["out"], window);
    server.publish("events", &events(0, 3));

    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let var = format!("SERVER={}", server.url);
    let mut run = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["run", "q.flow", "--var", &var])
            .current_dir(dir.path())
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts"),
    );
    // Its log, line by line, as it comes.
    let (tx, log) = mpsc::channel::<String>();
    let stderr = run.0.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    wait_until("the rows before the outage in OUT", || {
        server.count("OUT") == 3
    });

    server.restart_with(false);
    // The source found the server back and could not make its consumer: it says so, and
    // the query runs on.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let line = log
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the source says it cannot make its consumer again yet, within a minute");
        if line.contains("the NATS consumer cannot be made again yet") {
            break;
        }
    }
    assert!(
        run.0.try_wait().expect("its state").is_none(),
        "the query ended while its server had no JetStream"
    );

    server.restart_with(true);
    server.publish("events", &events(3, 6));
    // Tries come at most 5 s apart; the bound only turns a stall into a failure.
    wait_for_rows(&server, 6, Duration::from_secs(25));
    assert_eq!(
        server.read("OUT"),
        events(0, 6),
        "rows lost, twice, or out of order"
    );
}
