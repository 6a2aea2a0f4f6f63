//! A param change made after the last checkpoint survives a rollback of the whole query
//! (issue 13). With per-task recovery off and checkpoints on demand, checkpoint 1 completes,
//! then a filter's condition is changed through the coordinator: the change rides on
//! checkpoint 2, which fails (injected), so no manifest records it. A worker killed then rolls
//! the query back to checkpoint 1; the coordinator gives the new attempt the change from its
//! catalog with the restore, and every row after checkpoint 1 is filtered by the new
//! condition: the output is the rows before checkpoint 1 under the old condition and the rest
//! under the new one, exactly. `ctl history` of the new attempt lists the change, at the
//! epoch of the checkpoint it was given with.

use crate::a_param_changed_on_a_cluster_survives_its_coordinator_killed_before_a_checkpoint_recorded_it::{
    api, change_after_checkpoint_1, generated, kill_its_worker_then_finish, rows_before_checkpoint_1, switched_at, NEW, ROWS,
};
use crate::common;
use common::cluster::paced_filter;

use common::cluster::{LocalCluster, Setup};
use common::{ctl, output_rows, stdout_ok};

#[test]
fn a_param_changed_after_the_last_checkpoint_survives_a_whole_rollback() {
    let work = tempfile::tempdir().expect("tempdir");
    let d = work.path();
    std::fs::write(d.join("q.flow"), paced_filter(ROWS)).expect("query");
    let every = generated(d);
    let mut cluster = LocalCluster::start_with(
        2,
        8,
        Setup {
            coordinator_flags: vec!["--no-per-task-recovery".into()],
            ..Setup::default()
        },
    );
    let submit = cluster.submit(
        d,
        "q.flow",
        &[
            "--var",
            "OUTPUT=out",
            "--no-chaining",
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
    let logs = kill_its_worker_then_finish(&mut cluster, "low", submit);
    let switch = rows_before_checkpoint_1(&cluster, &every);
    let status = cluster.status("q");
    assert_eq!(status["attempt"], 2, "a whole rollback: {status}\n{logs}");
    // The new attempt's control plane has the change, given with checkpoint 1's restore.
    let history: serde_json::Value =
        serde_json::from_str(&stdout_ok(&ctl(d, &api, &["--json", "history", "q"]))).expect("json");
    assert!(
        history
            .as_array()
            .is_some_and(|h| h.iter().any(|r| r["new"] == NEW && r["epoch"] == 1)),
        "{history}"
    );
    // The coordinator's typed events: checkpoint 1 went through `checkpointing`, and the
    // query rolled back to it as a whole.
    let events = cluster.life_events();
    assert!(
        events.iter().any(|e| e["event"] == "transition"
            && e["to"]["state"] == "checkpointing"
            && e["to"]["epoch"] == 1),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "whole_query_rollback" && e["to"] == 1),
        "{events:?}"
    );
    assert!(
        output_rows(&d.join("out")) == switched_at(&every, switch),
        "the output is not the rows before checkpoint 1 (row {switch}) under the old condition and the rest under the new\n{logs}"
    );
}
