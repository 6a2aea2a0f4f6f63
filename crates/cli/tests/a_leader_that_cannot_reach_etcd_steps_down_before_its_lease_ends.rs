//! A coordinator elected through etcd whose etcd goes away cannot renew its lease: it steps
//! down — exits, with status 75 and a line saying why — rather than lead on when another may
//! have been elected. A coordinator that cannot reach etcd at its start is refused, naming
//! it; so is an election URL without a port.

use std::process::{Command, Stdio};

use crate::common;

use common::etcd::EtcdServer;
use common::{anduin, wait_until, ChildGuard};

#[test]
fn a_leader_that_cannot_reach_etcd_steps_down_before_its_lease_ends() {
    let mut etcd = EtcdServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let election = format!("etcd://{}/steps-down", etcd.endpoint);
    let log = dir.path().join("coordinator.log");
    let mut coordinator = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["coordinator", "--listen", "127.0.0.1:0"])
            .args(["--state-dir", "state", "--checkpoint-store", "checkpoints"])
            .args(["--leader-election", &election, "--leader-lease", "2s"])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("a log"))
            .spawn()
            .expect("the coordinator starts"),
    );
    let text = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_until("the coordinator leading", || {
        text().contains(" leads (term")
    });
    etcd.kill();
    let mut ended = None;
    wait_until("the coordinator stepping down", || {
        ended = coordinator.0.try_wait().expect("its status");
        ended.is_some()
    });
    let status = ended.expect("read above");
    assert_eq!(status.code(), Some(75), "{}", text());
    assert!(text().contains("stepping down"), "{}", text());

    // etcd is gone: a coordinator starting now is refused, naming it.
    let out = anduin(
        dir.path(),
        &[
            "coordinator",
            "--listen",
            "127.0.0.1:0",
            "--state-dir",
            "state",
            "--checkpoint-store",
            "checkpoints",
            "--leader-election",
            &election,
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("cannot reach etcd")
            && stderr.contains(&etcd.endpoint),
        "{stderr}"
    );
    let out = anduin(
        dir.path(),
        &[
            "coordinator",
            "--state-dir",
            "state",
            "--checkpoint-store",
            "checkpoints",
            "--leader-election",
            "etcd://localhost",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("`localhost` is not HOST:PORT"),
        "{stderr}"
    );
}
