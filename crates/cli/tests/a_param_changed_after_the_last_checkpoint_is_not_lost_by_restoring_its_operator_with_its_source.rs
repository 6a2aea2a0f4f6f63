//! A param change made after the last checkpoint is not lost when the worker running the
//! changed operator dies together with its source (here the whole query is one chained task
//! on one worker). Checkpoint 1 completes, the filter's condition is changed through the
//! coordinator and rides on checkpoint 2, which fails (injected), so no manifest records it.
//! Restoring that part alone from checkpoint 1 would run the filter without the change (the
//! restored source injects no barrier of before, and the one that carried the change is
//! gone): the coordinator says per-task recovery does not apply and rolls the query back as
//! a whole, giving the change with the restore. The output is the rows before checkpoint 1
//! under the old condition and the rest under the new one, exactly.

use crate::a_param_changed_on_a_cluster_survives_its_coordinator_killed_before_a_checkpoint_recorded_it::{
    api, change_after_checkpoint_1, generated, kill_its_worker_then_finish, rows_before_checkpoint_1, switched_at, ROWS,
};
use crate::common;
use common::cluster::paced_filter;

use common::cluster::LocalCluster;
use common::output_rows;

#[test]
fn a_param_changed_after_the_last_checkpoint_is_not_lost_by_restoring_its_operator_with_its_source()
{
    let work = tempfile::tempdir().expect("tempdir");
    let d = work.path();
    std::fs::write(d.join("q.flow"), paced_filter(ROWS)).expect("query");
    let every = generated(d);
    let mut cluster = LocalCluster::start(2, 8);
    let submit = cluster.submit(
        d,
        "q.flow",
        &[
            "--var",
            "OUTPUT=out",
            "--checkpoint-interval",
            "1h",
            "--checkpoint-keep",
            "1000",
            "--inject-checkpoint-failure",
            "2",
        ],
    );
    let api = api(&cluster);
    change_after_checkpoint_1(&cluster, d, &api);
    // One chained task: the source and the filter run on one worker.
    let logs = kill_its_worker_then_finish(&mut cluster, "gen -> low -> out", submit);
    let switch = rows_before_checkpoint_1(&cluster, &every);
    assert!(
        output_rows(&d.join("out")) == switched_at(&every, switch),
        "the output is not the rows before checkpoint 1 (row {switch}) under the old condition and the rest under the new\n{logs}"
    );
    let log = cluster.coordinator_log();
    assert!(
        log.contains("the param `condition` of operator \"low\" was changed"),
        "the coordinator says why per-task recovery does not apply\n{log}"
    );
}
