//! The executors keep the acknowledgements of the last checkpoint, and where their sources
//! ended, until that checkpoint is settled: a coordinator that read them all and died before
//! writing the last manifest leaves the next coordinator the facts to complete it from. An
//! executor whose part had ended used to end as soon as its coordinator had read them (it was
//! answered at once): a coordinator killed between reading the last acknowledgements and
//! writing the last manifest left the next one nothing to complete it from, and the query
//! finished with its output complete but no checkpoint marked finished. This was
//! `a_coordinator_killed_mid_run_takes_over_a_cluster_checkpointing_to_s3_without_restarting_a_task`
//! failing under load ("no finished checkpoint", every part ended before the kill). The
//! coordinator, told to by a testing flag, exits before the last manifest once every executor
//! waits to end (a kill in that window is too rare to aim at by timing); the next one
//! completes the last checkpoint, marked finished, without restarting a task.

use crate::common;

#[test]
fn a_coordinator_that_died_after_reading_the_last_acknowledgements_leaves_the_next_to_complete_the_last_checkpoint(
) {
    common::cluster::the_next_coordinator_completes_the_last_checkpoint(
        23,
        "last-checkpoint-awaited",
        "LastCheckpointAwaited",
        "once every executor waits for the last checkpoint",
    );
}
