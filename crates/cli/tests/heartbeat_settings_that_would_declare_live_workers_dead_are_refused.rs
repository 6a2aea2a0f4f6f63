//! A heartbeat timeout of 0 made the coordinator's liveness watch spin and declare every
//! worker dead; a heartbeat interval of 0 flooded the coordinator; an interval longer than half
//! the coordinator's timeout got healthy workers declared dead by one late heartbeat. Each is
//! refused, naming the flag and the value to give: the coordinator's and the worker's own
//! bounds before anything starts, and the interval against the timeout when the worker
//! registers (the coordinator tells it its timeout).

use std::process::Command;

use crate::common;

use common::cluster::LocalCluster;
use common::wait_until;

fn refused(args: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(args)
        .current_dir(dir.path())
        .output()
        .expect("anduin runs");
    let why = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{args:?} must be refused: {why}");
    why
}

#[test]
fn heartbeat_settings_that_would_declare_live_workers_dead_are_refused() {
    for timeout in ["0s", "50ms"] {
        let why = refused(&[
            "coordinator",
            "--listen",
            "127.0.0.1:0",
            "--state-dir",
            "st",
            "--checkpoint-store",
            "ck",
            "--heartbeat-timeout",
            timeout,
        ]);
        assert!(
            why.contains("--heartbeat-timeout") && why.contains("give at least 100ms"),
            "{why}"
        );
    }
    // Refused before it reaches for a coordinator (none listens on port 1).
    let why = refused(&[
        "worker",
        "--coordinator",
        "127.0.0.1:1",
        "--work-dir",
        "wd",
        "--heartbeat-interval",
        "0s",
    ]);
    assert!(why.contains("give at least 10ms"), "{why}");

    // The coordinator's timeout is the default 5 s: heartbeats every 3 s are too rare.
    let cluster = LocalCluster::start(0, 1);
    let why = refused(&[
        "worker",
        "--coordinator",
        &cluster.addr,
        "--work-dir",
        "wd",
        "--heartbeat-interval",
        "3s",
    ]);
    assert!(
        why.contains("more than half the coordinator's --heartbeat-timeout 5s")
            && why.contains("at most 2.5s"),
        "{why}"
    );
    wait_until("the refused worker to be gone", || {
        cluster.workers_joined() == 0
    });
}

#[test]
fn an_executor_timeout_shorter_than_a_few_figures_is_refused() {
    let why = refused(&[
        "coordinator",
        "--listen",
        "127.0.0.1:0",
        "--state-dir",
        "st",
        "--checkpoint-store",
        "ck",
        "--executor-timeout",
        "1s",
    ]);
    assert!(
        why.contains("--executor-timeout") && why.contains("give at least 3s"),
        "{why}"
    );
}
