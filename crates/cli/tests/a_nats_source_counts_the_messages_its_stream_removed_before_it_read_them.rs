//! Issue 19 (L3): a stream that keeps only its last messages (`max_msgs`, the discard policy)
//! removes those a stopped query had not read yet; the resumed run cannot read them. That was
//! only a WARN in the log. The source counts them, and the run's summary says how many
//! (`messages_removed_unread`), beside the rows it read (a resumed run is stopped by SIGTERM
//! once it has read what the stream still holds, and prints its summary).

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::nats::{ended, events, newest_checkpoint, start_run, NatsServer, EVENTS_TO_OUT};
use common::wait_until;

const CHECKPOINTS: [&str; 4] = ["--checkpoint-dir", "ckpt", "--checkpoint-interval", "200ms"];

#[test]
fn a_nats_source_counts_the_messages_its_stream_removed_before_it_read_them() {
    let server = NatsServer::start();
    let window = Duration::from_secs(120);
    server.stream_keeping("EVENTS", &["events"], window, 10);
    server.stream("OUT", &["out"], window);
    server.publish("events", &events(0, 5));

    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), EVENTS_TO_OUT).expect("query");
    let run = start_run(dir.path(), &server, &CHECKPOINTS);
    wait_until("the first rows in OUT", || server.count("OUT") == 5);
    // A checkpoint whose barrier left the source after it had read the 5 rows.
    let ckpt = dir.path().join("ckpt");
    let seen = newest_checkpoint(&ckpt);
    wait_until("a checkpoint after the rows", || {
        newest_checkpoint(&ckpt) >= seen + 3
    });
    drop(run);

    // Sequences 6 to 25; the stream keeps 16 to 25: 6 to 15 are gone unread.
    server.publish("events", &events(100, 120));
    assert_eq!(server.count("EVENTS"), 10);

    // Resumed: it reads what the stream holds, then is stopped (SIGTERM) for its summary.
    let resumed = start_run(dir.path(), &server, &CHECKPOINTS);
    wait_until("the rows the stream still held in OUT", || {
        server.count("OUT") == 15
    });
    let status = Command::new("kill")
        .args(["-TERM", &resumed.pid().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let out = ended(resumed);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("resuming from checkpoint"), "{stderr}");
    assert!(stderr.contains("stopped by SIGTERM"), "{stderr}");
    let summary = stderr
        .lines()
        .find(|l| l.contains("[nats]") && l.contains("rows out"))
        .unwrap_or_else(|| panic!("the source's line in the summary: {stderr}"));
    assert!(
        summary.contains("10 rows out") && summary.contains("messages_removed_unread 10"),
        "{summary}"
    );
    let written = server.read("OUT");
    assert_eq!(&written[5..], &events(110, 120)[..]);
}
