//! A worker paused (SIGSTOP, with its executor) for as long as its query takes to finish
//! elsewhere: its part — a generator fused with a file writer, no channel to another worker —
//! is restored on a live worker and the query finishes without it (the paused executor's
//! connection, which holds the attempt's checkpoint events open, is cut when its part is
//! restored). When the executor resumes it is stale and must not commit what it holds: its
//! tasks end their input only with the coordinator's leave, which it does not get, and it
//! learns from its cut connection that it must stop. The output equals an uninterrupted
//! embedded run's.

use crate::common;

use common::cluster::{children, running, signal, PerTask};
use common::{output_rows, wait_until};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 21
  param count = 120000
  param rate = 20000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "events"
  param path = "${OUTPUT}"
}
"#;

#[test]
fn a_worker_paused_until_its_query_finished_elsewhere_holds_nothing_up_and_commits_nothing() {
    let t = PerTask::start(QUERY);
    let submit = t.submit(&[]);
    // The query's one instance (a generator fused with its writer) runs on one worker.
    let (worker, executor) = t
        .cluster
        .workers
        .iter()
        .find_map(|w| Some((w.pid(), *children(w.pid()).first()?)))
        .expect("a worker runs the query's executor");
    signal(worker, libc::SIGSTOP);
    signal(executor, libc::SIGSTOP);
    // Its part is restored elsewhere, and the query finishes without it.
    let log = t.assert_same_output_at_attempt_1(submit);
    assert!(
        log.contains("instances restored; no other task was restarted"),
        "{log}"
    );
    // The stale executor resumes alone (its worker still paused, so that it is not stopped
    // by it): it must not commit anything.
    signal(executor, libc::SIGCONT);
    wait_until("the stale executor ended", || !running(executor));
    signal(worker, libc::SIGCONT);
    let got = output_rows(&t.work.path().join("out"));
    assert!(
        got == t.expected,
        "the stale executor changed the output\n{}",
        t.cluster.logs()
    );
}
