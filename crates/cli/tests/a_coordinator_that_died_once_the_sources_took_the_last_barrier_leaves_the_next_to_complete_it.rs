//! The last checkpoint's barrier ends the sources. A coordinator that dies after every source
//! took it, before the checkpoint completed, left the next coordinator a query it could not
//! finish well: it numbered a last checkpoint of its own, which no source was left to take,
//! and the query ended with its output complete but no checkpoint marked finished (a new
//! submission would read it all again). This was
//! `a_coordinator_killed_mid_run_takes_over_a_cluster_checkpointing_to_s3_without_restarting_a_task`
//! failing under load once the reader ran several instances (each at the paced rate, so the
//! last checkpoint came right after the second, where the kill lands). Now each executor
//! tells the next coordinator where its sources ended and the acknowledgements it sent since
//! the last complete checkpoint: the next coordinator completes the checkpoint the other began,
//! marked finished, without restarting a task; `anduin checkpoints list` shows it. The
//! coordinator, told to by a testing flag, exits as soon as every source reported taking the
//! last barrier (a kill in that window is too rare to aim at by timing).

use crate::common;

#[test]
fn a_coordinator_that_died_once_the_sources_took_the_last_barrier_leaves_the_next_to_complete_it() {
    common::cluster::the_next_coordinator_completes_the_last_checkpoint(
        19,
        "last-barrier-taken",
        "LastBarrierTaken",
        "once the sources took the last barrier",
    );
}
