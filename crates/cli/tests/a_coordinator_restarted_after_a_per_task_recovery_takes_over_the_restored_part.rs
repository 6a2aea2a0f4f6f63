//! Per-task recovery outlives its coordinator: a worker is killed with SIGKILL, its instances
//! are restored alone on a live worker, then the coordinator is killed with SIGKILL and
//! started again on the same address and state. The restarted coordinator reads from its
//! catalog where the restored part runs and at which incarnation, takes the attempt over
//! without restarting a task — the query stays at attempt 1 — and the output equals an
//! uninterrupted embedded run's.

use crate::common;

use common::cluster::{restart_coordinator_after, tumbling_generator, PerTask};
use common::wait_until;

#[test]
fn a_coordinator_restarted_after_a_per_task_recovery_takes_over_the_restored_part() {
    let mut t = PerTask::start(&tumbling_generator(7, 200_000));
    let submit = t.submit(&["--no-chaining"]);
    t.kill_mid_run(1, 1);
    wait_until("the lost instances restored alone", || {
        t.cluster
            .coordinator_log()
            .contains("instances restored; no other task was restarted")
    });
    let restored_at = t.cluster.status("q")["last_checkpoint"]
        .as_u64()
        .unwrap_or(0);
    // A checkpoint the restored part took part in, then the coordinator goes.
    restart_coordinator_after(&mut t.cluster, "q", restored_at + 1);
    let log = t.assert_same_output_at_attempt_1(submit);
    assert_eq!(t.cluster.status("q")["state"], "finished");
    assert!(log.contains("taken over, nothing restarted"), "{log}");
}
