//! A NATS source whose stream goes away while the query runs (deleted, or its server back
//! without its store) fails the query once the stream has stayed missing for its grace
//! (`connect.timeout`), naming the stream, the server and what to do, instead of trying to
//! read it again for ever (issue 19: "a broker lost mid-run: retries with backoff …; a topic
//! that does not exist: a clear error"). A server that is gone, or back without its
//! JetStream yet, is still waited for (`a_nats_source_resumes_promptly_once_its_lost_server_is_back`).
//! A sink, which does not wait for its stream, fails once it awaits the acknowledgement of a
//! row published since (at the next checkpoint), saying the same.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::nats::{events, NatsServer, EVENTS_TO_OUT as QUERY};
use common::{wait_until, ChildGuard};

/// Runs the query until its 3 rows are in OUT, takes the stream away with `lose`, and
/// checks that the run ends, failing, naming the stream.
fn the_run_fails_naming_the_stream_once(lose: impl FnOnce(&mut NatsServer)) {
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
    wait_until("the rows before the stream is lost in OUT", || {
        server.count("OUT") == 3
    });

    lose(&mut server);
    let lost = Instant::now();
    // A few seconds (a stream check, the 2 s grace); the bound only turns the stall of a
    // source retrying for ever into a failure.
    wait_until("the run to end once its stream is gone", || {
        run.0.try_wait().expect("its state").is_some()
    });
    let took = lost.elapsed();
    let out = run.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "stream `EVENTS` no longer exists on the NATS server at {}",
            server.url
        )),
        "{stderr}"
    );
    assert!(stderr.contains("had read it up to sequence 3"), "{stderr}");
    assert!(
        stderr.contains("recreate it (`nats stream add EVENTS --subjects …`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("run the query again with --from-scratch"),
        "{stderr}"
    );
    assert!(took >= Duration::from_secs(2), "no grace: took {took:?}");
}

#[test]
fn a_nats_source_whose_stream_is_deleted_while_it_reads_fails_the_query_naming_it() {
    the_run_fails_naming_the_stream_once(|server| server.delete_stream("EVENTS"));
}

#[test]
fn a_nats_source_whose_server_comes_back_without_its_store_fails_the_query_naming_its_stream() {
    the_run_fails_naming_the_stream_once(NatsServer::restart_empty);
}

#[test]
fn a_nats_sink_whose_stream_is_deleted_fails_the_query_at_its_next_checkpoint_naming_it() {
    let server = NatsServer::start();
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
            // The sink awaits its publishes' acknowledgements at each checkpoint.
            .args(["--checkpoint-dir", "ckpt", "--checkpoint-interval", "200ms"])
            .current_dir(dir.path())
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts"),
    );
    wait_until("the rows before the stream is lost in OUT", || {
        server.count("OUT") == 3
    });

    server.delete_stream("OUT");
    server.publish("events", &events(3, 4));
    wait_until("the run to end once its sink's stream is gone", || {
        run.0.try_wait().expect("its state").is_some()
    });
    let out = run.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "publishing to subject `out` of stream `OUT` on the NATS server at {}",
            server.url
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("recreate the stream if it is gone (`nats stream add OUT --subjects out`)"),
        "{stderr}"
    );
}
