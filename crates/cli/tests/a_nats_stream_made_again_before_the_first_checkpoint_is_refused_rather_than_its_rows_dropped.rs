//! Issue 19 (H6): a run killed before its first checkpoint completed, started again, takes the
//! earlier run's lineage and its sink the earlier run's message ids (the stream drops the rows
//! it stored). When the stream the source reads was deleted and made again in between, the
//! rows made of the new stream would get the ids of the earlier run's rows and be dropped as
//! duplicates: 1 000 of 1 500 new rows were lost without a word. The source keeps when its
//! stream was made beside the lineage, and a fresh start of the lineage that finds another
//! stream is refused, naming it and saying to start with `--from-scratch`, which writes every
//! row of the new stream.

use crate::common;

use std::time::Duration;

use common::nats::{ended, events, start_run, NatsServer, EVENTS_TO_OUT};
use common::wait_until;

/// Checkpoints, but only every million rows: none completes before the kill.
const NO_CHECKPOINT_YET: [&str; 4] = ["--checkpoint-dir", "ckpt", "--checkpoint-every", "1000000"];

#[test]
fn a_nats_stream_made_again_before_the_first_checkpoint_is_refused_rather_than_its_rows_dropped() {
    let server = NatsServer::start();
    let window = Duration::from_secs(120);
    server.stream("EVENTS", &["events"], window);
    server.stream("OUT", &["out"], window);
    server.publish("events", &events(0, 1000));

    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), EVENTS_TO_OUT).expect("query");
    let killed = start_run(dir.path(), &server, &NO_CHECKPOINT_YET);
    wait_until("the old stream's rows in OUT", || {
        server.count("OUT") == 1000
    });
    drop(killed);
    assert!(
        !dir.path().join("ckpt").join("chk-00000001").exists(),
        "no checkpoint before the kill"
    );

    server.delete_stream("EVENTS");
    server.stream("EVENTS", &["events"], window);
    let new_rows = events(5000, 6500);
    server.publish("events", &new_rows);

    let out = ended(start_run(dir.path(), &server, &NO_CHECKPOINT_YET));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for part in [
        &format!(
            "stream `EVENTS` on the NATS server at {} was made again (",
            server.url
        ),
        "since an earlier run of this query with these checkpoints, which stopped before its first checkpoint completed",
        "dropped as duplicates",
        "--from-scratch",
    ] {
        assert!(stderr.contains(part), "{part} not in {stderr}");
    }
    assert!(stderr.contains(r#"operator "in""#), "{stderr}");
    assert_eq!(server.count("OUT"), 1000, "the refused run wrote nothing");

    let mut again = NO_CHECKPOINT_YET.to_vec();
    again.push("--from-scratch");
    let _run = start_run(dir.path(), &server, &again);
    wait_until("every row of the new stream in OUT", || {
        server.count("OUT") == 2500
    });
    let written = server.read("OUT");
    assert_eq!(&written[1000..], new_rows.as_slice());
}
