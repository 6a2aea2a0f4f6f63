//! Two coordinators with catalogs of their own must not share a checkpoint directory: each
//! takes checkpoints under a query's name it does not know for leftovers and removes them
//! (one once cleared a running query's checkpoints as it took a submission of that name, and
//! the other's recovery then hung). A second coordinator on the directory of a running one is
//! refused as it starts, naming the first's PID.

use crate::common;

use std::process::Command;

use common::cluster::LocalCluster;

#[test]
fn a_second_coordinator_on_the_checkpoint_directory_of_another_is_refused() {
    let cluster = LocalCluster::start(1, 2);
    let store = cluster.dir.path().join("checkpoints");
    let other = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(["coordinator", "--listen", "127.0.0.1:0"])
        .arg("--state-dir")
        .arg(other.path().join("state"))
        .arg("--checkpoint-store")
        .arg(&store)
        .output()
        .expect("anduin runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("another coordinator uses it")
            && err.contains(&format!("{}", cluster.coordinator.pid())),
        "{err}"
    );
}
