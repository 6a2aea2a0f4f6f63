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
    api, generated, switched_at, NEW, ROWS,
};
use crate::common;
use common::cluster::paced_filter;

use anduin_checkpoint::Store;
use common::cluster::{kill_worker_after, wait_for_rows, LocalCluster};
use common::{ctl, output_rows, stdout_ok, wait_until};

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
    wait_for_rows(&cluster, "q", "gen");
    wait_until("the query runs", || {
        ctl(d, &api, &["checkpoint", "q"]).status.success()
    });
    wait_until("checkpoint 1", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });
    let applied = stdout_ok(&ctl(d, &api, &["set", "q", "low", "condition", NEW]));
    assert!(
        applied.contains("applied at epoch 2"),
        "the change rides on checkpoint 2, which fails: {applied}"
    );
    // One chained task: the source and the filter run on one worker.
    let status = cluster.status("q");
    let victim = (0..2)
        .find(|w| {
            status["instances"]["gen -> low -> out"].as_str() == Some(format!("w{w}").as_str())
        })
        .unwrap_or_else(|| panic!("one worker runs the chain: {status}"));
    assert!(
        kill_worker_after(&mut cluster, "q", victim, 1),
        "the kill must come mid-run"
    );
    let out = submit.wait_output();
    let logs = cluster.logs();
    assert!(
        out.status.success(),
        "{}\n{logs}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest = Store::open(cluster.checkpoints("q"))
        .expect("opens")
        .manifest(anduin_types::Epoch(1))
        .expect("reads")
        .expect("checkpoint 1 is complete");
    let switch = manifest.operators["gen"]
        .inline
        .as_ref()
        .expect("a position")["produced"]
        .as_u64()
        .expect("a count") as usize;
    assert!(switch > 0 && switch < every.len(), "switch at {switch}");
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
