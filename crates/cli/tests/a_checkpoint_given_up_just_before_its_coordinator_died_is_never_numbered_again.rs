//! The tasks of a running attempt remember the newest barrier they had: a consumer ignores a
//! barrier numbered as one it has had, taking it for the replay of a restored producer. A
//! checkpoint given up (here its manifest cannot be written, as on a full disk) after every
//! task had its barrier has its files removed; a coordinator that dies right then, before it
//! begins another, leaves nothing of it in the checkpoint store. The next coordinator took the
//! attempt over numbering its checkpoints after the newest one in the store, so it began
//! that checkpoint again under the same number: the source's worker having been killed
//! meanwhile, the restored source injected the barrier anew, every running consumer ignored
//! it, and the checkpoint, then the query, waited forever (the flake of
//! `a_part_whose_restoration_was_recorded_but_never_sent_is_restored_by_the_next_coordinator`
//! under load, where the kill lands while a checkpoint is in flight). The catalog records
//! every checkpoint given up before its files go, and the next coordinator numbers after it:
//! a checkpoint completes after the restore, the query finishes at its first attempt, and
//! its output equals an uninterrupted embedded run's. The coordinator, told to by a testing
//! flag, exits right after giving the checkpoint up and removing its files (a kill at that
//! instant is too rare to aim at by timing).

use crate::common;

use common::cluster::{tumbling_generator, worker_of_the_source, PerTask};
use common::wait_until;

#[test]
fn a_checkpoint_given_up_just_before_its_coordinator_died_is_never_numbered_again() {
    let mut t = PerTask::start_with(
        &tumbling_generator(41, 200_000),
        &["--inject-exit-after", "checkpoint-given-up"],
    );
    let submit = t.cluster.submit(
        t.work.path(),
        "q.flow",
        &[
            "--var",
            "OUTPUT=out",
            "--parallelism",
            "3",
            "--checkpoint-every",
            "4000",
            "--no-chaining",
            "--inject-checkpoint-failure",
            "3",
        ],
    );
    let victim = worker_of_the_source(&t.cluster);
    wait_until(
        "the coordinator to exit after giving checkpoint 3 up",
        || {
            t.cluster
                .coordinator
                .0
                .try_wait()
                .is_ok_and(|s| s.is_some())
        },
    );
    let first = t.cluster.coordinator_log();
    assert!(first.contains("exiting after CheckpointGivenUp"), "{first}");
    let checkpoints = t.cluster.checkpoints("q");
    assert!(
        !checkpoints.join("chk-00000003").exists() && checkpoints.join("chk-00000002").exists(),
        "nothing of checkpoint 3 is left, and checkpoint 2 is complete"
    );
    // The source's worker dies while no coordinator runs: the next one restores its part.
    let _ = t.cluster.workers[victim].0.kill();
    let _ = t.cluster.workers[victim].0.wait();
    t.cluster.setup.coordinator_flags.clear();
    t.cluster.restart_coordinator();
    wait_until("a checkpoint to complete after the restore", || {
        let s = t.cluster.status("q");
        s["last_checkpoint"].as_u64().is_some_and(|e| e > 3) || s["state"] == "finished"
    });
    let log = t.assert_same_output_at_attempt_1(submit);
    let after = &log[first.len()..];
    assert!(
        after.contains("were lost while no coordinator ran"),
        "{after}"
    );
    assert!(
        after.contains("instances restored; no other task was restarted"),
        "{after}"
    );
    assert_eq!(t.cluster.status("q")["state"], "finished");
}
