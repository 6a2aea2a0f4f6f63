//! probe40: a bounded NATS source (`bounded = true`: to the stream's last message as of the
//! start) whose stream was purged while it read, with messages published after the purge,
//! ended "finished" having read part of the stream and counted nothing lost: it took the
//! first sequence past its end for the end. Without anything published after, it never
//! ended (its end could not come). Now, either way, it ends, and the messages it could not
//! read count in the run's summary (`messages_removed_unread`): the rows out and the
//! messages removed add up to the stream as of the start.
//!
//! The run is paused (SIGSTOP) once its first rows are out, so that the purge comes while it
//! reads; what holds is the sum, wherever the purge finds it.

use crate::common;

use std::time::Duration;

use common::cluster::signal;
use common::nats::{ended, events, start_run, NatsServer, EVENTS_TO_OUT};
use common::wait_until;

/// [`EVENTS_TO_OUT`], its source bounded.
fn query() -> String {
    EVENTS_TO_OUT.replace(r#"param connect.timeout = "2s""#, "param bounded = true")
}

const N: u64 = 20_000;

/// Runs the query over a stream of [`N`] messages, purges the stream once the first rows
/// are out (the run paused meanwhile), publishes `after` more; returns the rows out and the
/// summary's `messages_removed_unread`.
fn purged_while_read(after: u64) -> (u64, u64) {
    let server = NatsServer::start();
    server.stream("EVENTS", &["events"], Duration::from_secs(120));
    server.stream("OUT", &["out"], Duration::from_secs(120));
    server.publish("events", &events(0, N));
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), query()).expect("query");
    let run = start_run(dir.path(), &server, &["--batch-size", "100"]);
    wait_until("the first rows out", || server.count("OUT") > 0);
    signal(run.pid(), libc::SIGSTOP);
    server.purge("EVENTS");
    server.publish("events", &events(N, N + after));
    signal(run.pid(), libc::SIGCONT);
    let done = ended(run);
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(0), "{stderr}");
    let rows = server.count("OUT");
    let removed = stderr
        .split("messages_removed_unread ")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .map_or(0, |n| n.parse().expect("a count"));
    (rows, removed)
}

#[test]
fn a_bounded_nats_source_whose_stream_is_purged_while_it_reads_ends_counting_what_it_lost() {
    let (rows, removed) = purged_while_read(500);
    assert_eq!(
        rows + removed,
        N,
        "{rows} rows out, {removed} counted removed"
    );
}

#[test]
fn a_bounded_nats_source_whose_stream_is_purged_with_nothing_after_ends_counting_what_it_lost() {
    let (rows, removed) = purged_while_read(0);
    assert_eq!(
        rows + removed,
        N,
        "{rows} rows out, {removed} counted removed"
    );
}
