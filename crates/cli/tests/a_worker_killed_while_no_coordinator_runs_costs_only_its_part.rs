//! A worker can die while no coordinator runs: the coordinator is killed with SIGKILL, then a
//! worker, and the coordinator is started again on the same address and state. The executors
//! of the other workers report again; the dead worker's never does. The restarted coordinator
//! takes the others over once that worker is declared dead (it does not come back within the
//! heartbeat timeout) and restores the lost part's instances alone, as for a loss while it
//! ran: the query stays at attempt 1 and its output equals an uninterrupted embedded run's.
//! (Found by a hostile probe: the take-over failed and the whole query rolled back.)

use crate::common;

use common::cluster::{tumbling_generator, PerTask};

#[test]
fn a_worker_killed_while_no_coordinator_runs_costs_only_its_part() {
    let mut t = PerTask::start(&tumbling_generator(29, 200_000));
    let submit = t.submit(&["--no-chaining"]);
    let _ = t.cluster.coordinator.0.kill();
    let _ = t.cluster.coordinator.0.wait();
    let _ = t.cluster.workers[1].0.kill();
    let _ = t.cluster.workers[1].0.wait();
    t.cluster.restart_coordinator();
    let log = t.assert_same_output_at_attempt_1(submit);
    assert!(log.contains("were lost while no coordinator ran"), "{log}");
    assert!(
        log.contains("instances restored; no other task was restarted"),
        "{log}"
    );
}
