//! A coordinator that notes a worker's report that a part ended tells the worker, which then
//! forgets the report. A coordinator that died right after that took the end with it: the
//! next one waited for the executor of that part, which is gone, and, past a heartbeat
//! timeout, gave it up as silent and tried to restore it — on a query that was finishing. The
//! coordinator records each end it notes in its catalog before it answers the worker, and the
//! next one takes the attempt over knowing it: the query finishes at its first attempt, with
//! no failure in its status and no part restored, and its output equals an uninterrupted
//! embedded run's. The coordinator, told to by a testing flag, exits right after it answered
//! the first report of a part's end (a kill at that instant is too rare to aim at by timing).

use crate::common;

use common::cluster::{tumbling_generator, PerTask};
use common::wait_until;

#[test]
fn a_coordinator_killed_after_noting_that_a_part_ended_leaves_the_end_to_the_next() {
    let mut t = PerTask::start_with(
        &tumbling_generator(43, 60_000),
        &["--inject-exit-after", "part-end-noted"],
    );
    let submit = t.submit(&["--no-chaining"]);
    wait_until("the coordinator to exit on noting a part's end", || {
        t.cluster
            .coordinator
            .0
            .try_wait()
            .is_ok_and(|s| s.is_some())
    });
    let first = t.cluster.coordinator_log();
    assert!(first.contains("exiting after PartEndNoted"), "{first}");
    t.cluster.setup.coordinator_flags.clear();
    t.cluster.restart_coordinator();
    let log = t.assert_same_output_at_attempt_1(submit);
    let after = &log[first.len()..];
    assert!(!after.contains("did not report again"), "{after}");
    assert!(!after.contains("restoring"), "{after}");
    assert!(!after.contains("nothing to recover"), "{after}");
    let status = t.cluster.status("q");
    assert_eq!(status["state"], "finished", "{status}");
    assert_eq!(status["error"], serde_json::Value::Null, "{status}\n{log}");
}
