//! A query that checkpoints only by rows triggers no checkpoint once one of its executors is
//! stuck (paused here with SIGSTOP while its worker heartbeats on), so no checkpoint could time
//! out and the query used to hang. Every executor sends its figures every second from a thread
//! of its own; the coordinator takes one none of whose figures came for `--executor-timeout`
//! as stuck, has its worker kill it and restores its part alone, the rest of the query running
//! on at its first attempt. The output equals an uninterrupted embedded run's.

use crate::common;

use common::cluster::{children, running, signal, windowed_generator, PerTask};
use common::wait_until;

#[test]
fn a_silent_executor_is_killed_and_its_part_restored_though_no_checkpoint_times_out() {
    let t = PerTask::start_with(
        &windowed_generator(
            17,
            200_000,
            20_000,
            r#"param kind = "sliding" param size = "200ms" param slide = "50ms""#,
        ),
        &["--executor-timeout", "3s"],
    );
    // Checkpoints by rows only (PerTask's --checkpoint-every), none by time.
    let submit = t.submit(&["--no-chaining"]);
    let executors = children(t.cluster.workers[2].pid());
    assert_eq!(executors.len(), 1, "the worker runs one executor");
    signal(executors[0], libc::SIGSTOP);
    let log = t.assert_same_output_at_attempt_1(submit);
    assert!(
        log.contains("(--executor-timeout) while its worker lived: it is stuck")
            && log.contains("instances restored; no other task"),
        "{log}"
    );
    wait_until("the stuck executor killed", || !running(executors[0]));
}
