//! A NATS stream deleted and made again numbers its messages from 1 again. A source that read
//! on from the sequence it had reached would skip as many of the new stream's messages without
//! a word (issue 19's probe: a resumed source waited for the old sequence). A run resumed from
//! a checkpoint of the old stream is refused, naming the stream and saying to start with
//! `--from-scratch`, which then reads the new stream from its start. A running source cannot
//! tell at once (its consumer reads on from its sequence in the new stream, the messages
//! after it): it finds out at its next checkpoint, which then fails (what it read of the new
//! stream is in none), or after 5 s without a message, and fails the query, saying the same.

use crate::common;

use std::time::Duration;

use common::nats::{
    ended, events, newest_checkpoint as newest, start_run as start, NatsServer,
    EVENTS_TO_OUT as QUERY,
};
use common::wait_until;

const CHECKPOINTS: [&str; 4] = ["--checkpoint-dir", "ckpt", "--checkpoint-interval", "200ms"];

#[test]
fn a_run_resumed_after_its_stream_was_made_again_is_refused_and_from_scratch_reads_the_new_stream()
{
    let server = NatsServer::start();
    let window = Duration::from_secs(120);
    server.stream("EVENTS", &["events"], window);
    server.stream("OUT", &["out"], window);
    server.publish("events", &events(0, 5));

    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let run = start(dir.path(), &server, &CHECKPOINTS);
    wait_until("the old stream's rows in OUT", || server.count("OUT") == 5);
    let ckpt = dir.path().join("ckpt");
    // A checkpoint whose barrier left the source after it had read the 5 rows.
    let seen = newest(&ckpt);
    wait_until("a checkpoint after the rows", || newest(&ckpt) >= seen + 3);
    drop(run);

    server.delete_stream("EVENTS");
    server.stream("EVENTS", &["events"], window);
    server.publish("events", &events(100, 103));

    let out = ended(start(dir.path(), &server, &CHECKPOINTS));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "stream `EVENTS` on the NATS server at {} was made again (",
            server.url
        )),
        "{stderr}"
    );
    assert!(stderr.contains("now) since the checkpoint"), "{stderr}");
    assert!(
        stderr.contains("reading on from sequence 6 would skip the new stream's first messages"),
        "{stderr}"
    );
    assert!(stderr.contains("--from-scratch"), "{stderr}");
    assert_eq!(server.count("OUT"), 5, "the refused run wrote nothing");

    let mut again = CHECKPOINTS.to_vec();
    again.push("--from-scratch");
    let _run = start(dir.path(), &server, &again);
    wait_until("the new stream's 3 rows in OUT", || {
        server.count("OUT") == 8
    });
    let written = server.read("OUT");
    for row in events(100, 103) {
        assert!(written.contains(&row), "{row} missing from {written:?}");
    }
}

#[test]
fn a_running_source_whose_stream_is_made_again_fails_the_query_naming_it() {
    let server = NatsServer::start();
    let window = Duration::from_secs(120);
    server.stream("EVENTS", &["events"], window);
    server.stream("OUT", &["out"], window);
    server.publish("events", &events(0, 3));

    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let mut run = start(dir.path(), &server, &CHECKPOINTS);
    wait_until("the old stream's rows in OUT", || server.count("OUT") == 3);
    // A checkpoint of the old stream to resume from.
    let ckpt = dir.path().join("ckpt");
    wait_until("a checkpoint", || newest(&ckpt) >= 2);

    server.delete_stream("EVENTS");
    server.stream("EVENTS", &["events"], window);
    server.publish("events", &events(100, 105));
    wait_until("the run to end once its stream is made again", || {
        run.0.try_wait().expect("its state").is_some()
    });
    let out = run.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("stream `EVENTS` on the NATS server at"),
        "{stderr}"
    );
    assert!(stderr.contains("now) while the source read it"), "{stderr}");
    assert!(
        stderr.contains("went past the new stream's first messages"),
        "{stderr}"
    );
    // No checkpoint holds a position in the new stream: a resumed run is refused.
    let out = ended(start(dir.path(), &server, &CHECKPOINTS));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("now) since the checkpoint"), "{stderr}");
}
