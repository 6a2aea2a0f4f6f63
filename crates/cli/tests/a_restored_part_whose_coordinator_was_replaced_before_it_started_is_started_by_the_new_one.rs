//! A coordinator can go between deploying a restored part and starting it: a worker is
//! killed with SIGKILL, its instances are restored alone on a live worker, and the moment that
//! worker has started the restored part's executor the coordinator is killed with SIGKILL
//! and started again on the same address and state. The executor, not yet started, reports
//! again to the new coordinator, which starts it (and tells every other executor where the
//! restored part listens) instead of rolling the query back: the query stays at attempt 1
//! and its output equals an uninterrupted embedded run's. (Whether the kill lands before or
//! after the old coordinator's `Start` depends on how fast the executor reports; the outcome
//! must be the same either way.)

use crate::common;

use common::cluster::{children, running, tumbling_generator, PerTask};
use common::wait_until;

#[test]
fn a_restored_part_whose_coordinator_was_replaced_before_it_started_is_started_by_the_new_one() {
    let mut t = PerTask::start(&tumbling_generator(11, 200_000));
    let submit = t.submit(&["--no-chaining"]);
    t.kill_mid_run(1, 1);
    // The restored part's executor is a second child of a surviving worker.
    let survivors = [t.cluster.workers[0].pid(), t.cluster.workers[2].pid()];
    wait_until("the restored part's executor", || {
        survivors
            .iter()
            .any(|w| children(*w).into_iter().filter(|c| running(*c)).count() >= 2)
    });
    t.cluster.restart_coordinator();
    let log = t.assert_same_output_at_attempt_1(submit);
    assert_eq!(t.cluster.status("q")["state"], "finished");
    assert!(log.contains("taken over, nothing restarted"), "{log}");
}
