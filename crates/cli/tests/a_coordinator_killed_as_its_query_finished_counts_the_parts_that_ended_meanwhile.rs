//! A coordinator killed with SIGKILL the moment it begins its query's last checkpoint (every
//! input has ended) and started again on the same address and state: the parts end while no
//! coordinator runs, and their workers tell the new one once they have reconnected — possibly
//! before it has taken the attempt over. A part that ended well has nothing more to report:
//! the query finishes at its first attempt, with no failure in its status, and its output
//! equals an uninterrupted embedded run's (found by the fourth hostile probe: such parts were
//! counted as silent, and the query rolled back as a whole with a failure that had not
//! happened).

use crate::common;

use common::cluster::{tumbling_generator, PerTask};
use common::wait_until;

#[test]
fn a_coordinator_killed_as_its_query_finished_counts_the_parts_that_ended_meanwhile() {
    // `-v`: the coordinator logs each checkpoint it begins.
    let mut t = PerTask::start_with(&tumbling_generator(37, 60_000), &["-v"]);
    let submit = t.submit(&["--no-chaining"]);
    wait_until("the last checkpoint begun", || {
        t.cluster
            .coordinator_log()
            .lines()
            .any(|l| l.contains("checkpoint started") && l.contains("last=true"))
    });
    t.cluster.restart_coordinator();
    let log = t.assert_same_output_at_attempt_1(submit);
    let status = t.cluster.status("q");
    assert_eq!(status["state"], "finished", "{status}");
    assert_eq!(status["error"], serde_json::Value::Null, "{status}\n{log}");
}
