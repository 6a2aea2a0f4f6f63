//! Two coordinators with catalogs of their own must not share a checkpoint directory: each
//! takes checkpoints under a query's name it does not know for leftovers and removes them
//! (one once cleared a running query's checkpoints as it took a submission of that name, and
//! the other's recovery then hung). A second coordinator on the directory of a running one is
//! refused as it starts, naming the first's PID; so it is (issue 19) once the first's
//! `COORDINATOR.LOCK` was removed (a cleanup script, a user), since the first locks the
//! directory itself too.

use crate::common;

use std::process::{Command, Stdio};

use common::cluster::LocalCluster;
use common::{wait_until, ChildGuard};

#[test]
fn a_second_coordinator_on_the_checkpoint_directory_of_another_is_refused() {
    let cluster = LocalCluster::start(1, 2);
    let store = cluster.dir.path().join("checkpoints");
    let second = |state: &std::path::Path| {
        // Killed if the test fails: a coordinator let in would run on.
        let mut child = ChildGuard(
            Command::new(env!("CARGO_BIN_EXE_anduin"))
                .args(["coordinator", "--listen", "127.0.0.1:0"])
                .arg("--state-dir")
                .arg(state)
                .arg("--checkpoint-store")
                .arg(&store)
                .stderr(Stdio::piped())
                .spawn()
                .expect("anduin runs"),
        );
        wait_until("the second coordinator to be refused and end", || {
            child.0.try_wait().expect("waits").is_some()
        });
        let out = child.wait_output();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "{err}");
        assert!(
            err.contains("another coordinator uses it")
                && err.contains(&format!("PID {}", cluster.coordinator.pid())),
            "{err}"
        );
    };
    let other = tempfile::tempdir().expect("tempdir");
    second(&other.path().join("state"));
    // The lock file gone, the directory's own lock still refuses a second coordinator.
    std::fs::remove_file(store.join("COORDINATOR.LOCK")).expect("the first's lock file");
    let another = tempfile::tempdir().expect("tempdir");
    second(&another.path().join("state"));
}
