//! A param change is durable once `anduin ctl set` is answered, however the cluster fails
//! after (issue 13: the catalog keeps parameter values and control history). A filter's
//! condition is changed through the coordinator, which exits the moment it has recorded the
//! change in its catalog (`--inject-exit-after parameter-recorded`, as a SIGKILL would leave
//! things): the checkpoint whose barrier carried it never completes, so no manifest knows it.
//! The restarted coordinator takes the query over without restarting a task; `ctl history`
//! through it still lists the change, and the checkpoints it takes record it: a worker then
//! killed has its instances restored from one of them under the new condition. The output is
//! the generated rows filtered by the old condition up to one switch point and by the new one
//! after it, nothing lost or duplicated; the query stays at attempt 1.
//!
//! `a_param_changed_after_the_last_checkpoint_survives_a_whole_rollback` is the same change
//! kept through a rollback of the whole query.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::cluster::{all_generated, children, paced_filter, running, LocalCluster, Setup};
use common::{ctl, output_rows, wait_until};

/// How many rows the query ([`paced_filter`]) generates.
pub const ROWS: u64 = 45_000;

/// The condition the change sets.
pub const NEW: &str = "value >= 42";

/// Every row the generator of [`paced_filter`] makes, in order (an embedded run into `d`).
pub fn generated(d: &Path) -> Vec<String> {
    std::fs::write(d.join("all.flow"), all_generated(ROWS)).expect("query");
    let all = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(["run", "all.flow", "-q", "--no-api"])
        .current_dir(d)
        .output()
        .expect("runs");
    assert!(
        all.status.success(),
        "{}",
        String::from_utf8_lossy(&all.stderr)
    );
    let every = common::rows_in_order(&d.join("all.csv"));
    assert_eq!(every.len(), 45000);
    every
}

fn value(l: &str) -> i64 {
    l.rsplit(',')
        .next()
        .and_then(|v| v.parse().ok())
        .expect("a value")
}

/// The rows of `every` before `switch` that the old condition keeps and the rest that the new
/// one keeps, sorted.
pub fn switched_at(every: &[String], switch: usize) -> Vec<String> {
    let mut rows: Vec<String> = every
        .iter()
        .enumerate()
        .filter(|(i, l)| {
            if *i < switch {
                value(l) < 42
            } else {
                value(l) >= 42
            }
        })
        .map(|(_, l)| l.clone())
        .collect();
    rows.sort();
    rows
}

/// The point where `got` switched from the old condition to the new one, when it is the rows
/// of `every` filtered so at one point (a change never lost for a part of the query).
fn one_switch(every: &[String], got: &[String]) -> Option<usize> {
    let kept: std::collections::BTreeSet<&String> = got.iter().collect();
    // The first row the new condition kept is where it switched.
    let switch = every
        .iter()
        .position(|l| value(l) >= 42 && kept.contains(l))?;
    (switched_at(every, switch) == got).then_some(switch)
}

/// The coordinator's API URL, as it wrote it.
pub fn api(cluster: &LocalCluster) -> String {
    std::fs::read_to_string(cluster.dir.path().join("coordinator/api.url"))
        .expect("the coordinator wrote its API's URL")
        .trim()
        .to_string()
}

#[test]
fn a_param_changed_on_a_cluster_survives_its_coordinator_killed_before_a_checkpoint_recorded_it() {
    let work = tempfile::tempdir().expect("tempdir");
    let d = work.path();
    std::fs::write(d.join("q.flow"), paced_filter(ROWS)).expect("query");
    let every = generated(d);
    let mut cluster = LocalCluster::start_with(
        3,
        8,
        Setup {
            coordinator_flags: vec!["--inject-exit-after".into(), "parameter-recorded".into()],
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
            "300ms",
            "--checkpoint-keep",
            "1000",
        ],
    );
    wait_until("the query runs with a checkpoint", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });
    // The coordinator exits once the change is in its catalog: `ctl` gets no answer.
    let _ = ctl(d, &api(&cluster), &["set", "q", "low", "condition", NEW]);
    let mut exited = None;
    wait_until(
        "the coordinator to exit once the change is in its catalog",
        || {
            exited = cluster.coordinator.0.try_wait().ok().flatten();
            exited.is_some()
        },
    );
    assert_eq!(
        exited.and_then(|e| e.code()),
        Some(137),
        "{}",
        cluster.logs()
    );
    cluster.setup.coordinator_flags.clear();
    cluster.restart_coordinator();

    let mut history = String::new();
    wait_until(
        "the change in the history of the restarted coordinator",
        || {
            let out = ctl(d, &api(&cluster), &["history", "q"]);
            history = String::from_utf8_lossy(&out.stdout).into_owned();
            history.contains(NEW)
        },
    );
    // A checkpoint of the restarted coordinator, then the worker that runs the filter
    // killed: its instances are restored from that checkpoint.
    let taken_over_at = cluster.status("q")["last_checkpoint"].as_u64().unwrap_or(0);
    wait_until("a checkpoint of the restarted coordinator", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e > taken_over_at)
    });
    let status = cluster.status("q");
    let victim: usize = status["instances"]["low"]
        .as_str()
        .and_then(|w| w.trim_start_matches('w').parse().ok())
        .unwrap_or_else(|| panic!("where the filter runs: {status}"));
    let worker = cluster.workers.get_mut(victim).expect("the worker");
    assert!(
        children(worker.pid()).into_iter().any(running),
        "the kill must come mid-run"
    );
    let _ = worker.0.kill();
    let _ = worker.0.wait();

    let out = submit.wait_output();
    let logs = cluster.logs();
    assert!(
        out.status.success(),
        "{}\n{logs}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status = cluster.status("q");
    assert_eq!(status["attempt"], 1, "restored alone: {status}\n{logs}");
    let got = output_rows(&d.join("out"));
    let switch = one_switch(&every, &got).unwrap_or_else(|| {
        panic!(
            "the output is not the rows filtered by the old condition up to one point and by the new one after it ({} rows)\n{history}\n{logs}",
            got.len()
        )
    });
    assert!(
        switch > 0 && switch < every.len(),
        "the change came mid-run: at row {switch}"
    );
}

/// Once the generator of query `q` has sent rows: asks for checkpoint 1 through the control
/// plane at `api` and waits for it, then sets the filter's condition to [`NEW`], which rides
/// on checkpoint 2 (a test makes that one fail).
pub fn change_after_checkpoint_1(cluster: &LocalCluster, d: &Path, api: &str) {
    common::cluster::wait_for_rows(cluster, "q", "gen");
    common::wait_until("the query runs", || {
        common::ctl(d, api, &["checkpoint", "q"]).status.success()
    });
    common::wait_until("checkpoint 1", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });
    let applied = common::stdout_ok(&common::ctl(d, api, &["set", "q", "low", "condition", NEW]));
    assert!(
        applied.contains("applied at epoch 2"),
        "the change rides on checkpoint 2, which fails: {applied}"
    );
}

/// The generator's rows before checkpoint 1 of query `q`, by its manifest: where the
/// output switches to the new condition after a rollback to it.
pub fn rows_before_checkpoint_1(cluster: &LocalCluster, every: &[String]) -> usize {
    let manifest = anduin_checkpoint::Store::open(cluster.checkpoints("q"))
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
    switch
}

/// Kills (SIGKILL) the worker of `cluster` that runs task `task` of query `q`, once
/// checkpoint 1 is complete; then waits for `submit` and asserts that the query finished.
/// The cluster's logs.
pub fn kill_its_worker_then_finish(
    cluster: &mut LocalCluster,
    task: &str,
    submit: common::ChildGuard,
) -> String {
    let status = cluster.status("q");
    let victim = (0..cluster.workers.len())
        .find(|w| status["instances"][task].as_str() == Some(format!("w{w}").as_str()))
        .unwrap_or_else(|| panic!("no worker runs {task}: {status}"));
    assert!(
        common::cluster::kill_worker_after(cluster, "q", victim, 1),
        "the kill must come mid-run"
    );
    let out = submit.wait_output();
    let logs = cluster.logs();
    assert!(
        out.status.success(),
        "{}\n{logs}",
        String::from_utf8_lossy(&out.stderr)
    );
    logs
}
