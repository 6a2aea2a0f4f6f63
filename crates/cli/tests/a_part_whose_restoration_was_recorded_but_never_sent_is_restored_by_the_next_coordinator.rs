//! A coordinator can go between recording where a lost part is restored and sending the
//! deployment there: the worker running the query's source is killed with SIGKILL, and the
//! coordinator, told to by a testing flag, exits right after its catalog records the part's
//! new host (a kill at that instant is too rare to aim at by timing). The next coordinator
//! finds the part recorded on a live worker that never heard of it: its executor never
//! reports. Once a heartbeat timeout has passed, the new coordinator takes the other executors
//! over and restores that part alone (a source: its consumers drop what they had already
//! received), instead of rolling the whole query back: the query stays at attempt 1 and its
//! output equals an uninterrupted embedded run's.

use crate::common;

use common::cluster::{tumbling_generator, worker_of_the_source, PerTask};
use common::wait_until;

#[test]
fn a_part_whose_restoration_was_recorded_but_never_sent_is_restored_by_the_next_coordinator() {
    let mut t = PerTask::start_with(
        &tumbling_generator(23, 200_000),
        &["--inject-exit-after", "part-restored"],
    );
    let submit = t.submit(&["--no-chaining"]);
    let victim = worker_of_the_source(&t.cluster);
    t.kill_mid_run(victim, 2);
    wait_until(
        "the coordinator to exit after recording the restored part",
        || {
            t.cluster
                .coordinator
                .0
                .try_wait()
                .is_ok_and(|s| s.is_some())
        },
    );
    let first = t.cluster.coordinator_log();
    assert!(first.contains("exiting after PartRestored"), "{first}");
    t.cluster.setup.coordinator_flags.clear();
    t.cluster.restart_coordinator();
    let log = t.assert_same_output_at_attempt_1(submit);
    let after = &log[first.len()..];
    assert!(after.contains("did not report again"), "{after}");
    assert!(
        after.contains("instances restored; no other task was restarted"),
        "{after}"
    );
    assert_eq!(t.cluster.status("q")["state"], "finished");
}
