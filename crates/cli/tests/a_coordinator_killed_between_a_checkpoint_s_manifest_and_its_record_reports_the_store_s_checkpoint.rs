//! A coordinator that dies after a checkpoint's manifest is written and before its catalog
//! records the checkpoint complete leaves the store newer than the catalog. The next
//! coordinator took the attempt over from the store (it resumes from that checkpoint), but
//! reported the catalog's last checkpoint: when that was the query's last, finished one, the
//! status said an older checkpoint for good (the CI flake of
//! `a_coordinator_killed_mid_run_takes_over_a_cluster_checkpointing_to_s3_without_restarting_a_task`,
//! whose kill landed there). Now the taking over records the store's checkpoint.
//!
//! The coordinator, told to by a testing flag, exits right after the manifest of the query's
//! one checkpoint (its last: no interval checkpoint comes first) is written.

use crate::common;

use common::cluster::{tumbling_generator, PerTask};
use common::wait_until;

#[test]
fn a_coordinator_killed_between_a_checkpoint_s_manifest_and_its_record_reports_the_store_s_checkpoint(
) {
    let mut t = PerTask::start_with(
        &tumbling_generator(43, 20_000),
        &["--inject-exit-after", "checkpoint-written"],
    );
    let submit = t.cluster.submit(
        t.work.path(),
        "q.flow",
        &[
            "--var",
            "OUTPUT=out",
            "--parallelism",
            "2",
            "--checkpoint-interval",
            "1h",
        ],
    );
    wait_until("the coordinator to exit after the manifest", || {
        t.cluster
            .coordinator
            .0
            .try_wait()
            .is_ok_and(|s| s.is_some())
    });
    let first = t.cluster.coordinator_log();
    assert!(first.contains("exiting after CheckpointWritten"), "{first}");
    assert!(
        t.cluster.checkpoints("q").join("chk-00000001").exists(),
        "the manifest of checkpoint 1 is written"
    );
    t.cluster.setup.coordinator_flags.clear();
    t.cluster.restart_coordinator();
    wait_until("the query to finish", || {
        t.cluster.status("q")["state"] == "finished"
    });
    let status = t.cluster.status("q");
    assert_eq!(status["last_checkpoint"], 1, "{status}");
    t.assert_same_output_at_attempt_1(submit);
}
