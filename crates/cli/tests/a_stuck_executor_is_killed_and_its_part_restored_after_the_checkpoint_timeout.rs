//! An executor can get stuck while its worker heartbeats on (paused here with SIGSTOP, as a
//! deadlock or an endless loop in a function would): the checkpoint it holds back times out
//! (`--checkpoint-timeout`), the coordinator tells the stuck part from the parts that only
//! wait behind it, has its worker kill it, and restores its instances alone while the rest of
//! the query runs on, at its first attempt. The output equals an uninterrupted embedded run's.

use crate::common;

use common::cluster::{children, running, signal, windowed_generator, PerTask};
use common::wait_until;

#[test]
fn a_stuck_executor_is_killed_and_its_part_restored_after_the_checkpoint_timeout() {
    let t = PerTask::start(&windowed_generator(
        13,
        200_000,
        20_000,
        r#"param kind = "sliding" param size = "200ms" param slide = "50ms""#,
    ));
    // Checkpoints by time too: a stalled query triggers none by rows.
    let submit = t.submit(&[
        "--no-chaining",
        "--checkpoint-timeout",
        "3s",
        "--checkpoint-interval",
        "500ms",
    ]);
    let executors = children(t.cluster.workers[2].pid());
    assert_eq!(executors.len(), 1, "the worker runs one executor");
    signal(executors[0], libc::SIGSTOP);
    let log = t.assert_same_output_at_attempt_1(submit);
    assert!(
        log.contains("past --checkpoint-timeout: its executor is stuck")
            && log.contains("instances restored; no other task"),
        "{log}"
    );
    wait_until("the stuck executor killed", || !running(executors[0]));
}
