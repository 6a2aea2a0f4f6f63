//! A worker's report that a part ended is written to the coordinator's connection; a
//! coordinator killed before it read it takes the report with it. The next coordinator would
//! wait for the executor of that part, which is gone: it gave the part up after a heartbeat
//! timeout and restored it alone, or, when every other part had ended too, failed the attempt
//! ("not every executor of attempt 1 reported to the restarted coordinator": the flaky failure
//! of `a_coordinator_killed_as_its_query_finished_counts_the_parts_that_ended_meanwhile` under
//! load, where the kill lands between a worker's report and its reading). A kill at that
//! instant is too rare to aim at by timing: the coordinator, told to by a testing flag, exits
//! right after reading the first report of a part's end. The worker tells the next
//! coordinator again (until one notes it): the query finishes at its first attempt, nothing
//! restored, and its output equals an uninterrupted embedded run's.

use crate::common;

use common::cluster::{tumbling_generator, PerTask};
use common::wait_until;

#[test]
fn a_coordinator_gone_before_it_read_that_a_part_ended_hears_it_from_the_worker_again() {
    let mut t = PerTask::start_with(
        &tumbling_generator(37, 60_000),
        &["--inject-exit-after", "part-end-read"],
    );
    let submit = t.submit(&["--no-chaining"]);
    wait_until("the coordinator to exit on reading a part's end", || {
        t.cluster
            .coordinator
            .0
            .try_wait()
            .is_ok_and(|s| s.is_some())
    });
    let first = t.cluster.coordinator_log();
    assert!(first.contains("exiting after PartEndRead"), "{first}");
    t.cluster.setup.coordinator_flags.clear();
    t.cluster.restart_coordinator();
    let log = t.assert_same_output_at_attempt_1(submit);
    let after = &log[first.len()..];
    assert!(!after.contains("did not report again"), "{log}");
    let status = t.cluster.status("q");
    assert_eq!(status["state"], "finished", "{status}");
    assert_eq!(status["error"], serde_json::Value::Null, "{status}\n{log}");
}
