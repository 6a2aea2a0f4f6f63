//! A worker that is only paused (SIGSTOP, as a long garbage-collection pause or a frozen VM
//! would) past its heartbeat timeout is declared dead, and per-task recovery restores its
//! instances on a live worker. When it resumes (SIGCONT), its executor is stale: the
//! coordinator turns it away and ignores what it still sends, and the consumers of its
//! channels refuse its older incarnation, so it cannot take its part back. The query runs on
//! at its first attempt and its output equals an uninterrupted embedded run's; the stale
//! executor stops.

use crate::common;

use common::cluster::{children, running, signal, windowed_generator, PerTask};
use common::wait_until;

#[test]
fn a_paused_worker_whose_part_was_restored_elsewhere_cannot_take_it_back() {
    let t = PerTask::start(&windowed_generator(
        9,
        200_000,
        20_000,
        r#"param kind = "tumbling" param size = "100ms""#,
    ));
    let submit = t.submit(&["--no-chaining"]);
    let worker = t.cluster.workers[1].pid();
    let executors = children(worker);
    assert!(!executors.is_empty(), "the worker runs an executor");
    let mut paused = vec![worker];
    paused.extend(&executors);
    for pid in &paused {
        signal(*pid, libc::SIGSTOP);
    }
    wait_until("the paused worker's instances restored elsewhere", || {
        t.cluster
            .coordinator_log()
            .contains("instances restored; no other task was restarted")
    });
    for pid in &paused {
        signal(*pid, libc::SIGCONT);
    }
    t.assert_same_output_at_attempt_1(submit);
    wait_until("the stale executor stopped", || {
        !executors.iter().copied().any(running)
    });
}
