//! A leading coordinator stopped by SIGTERM lets go of its lease of etcd before it exits: the
//! election key is gone at once (a standby leads now, not when a 30 s lease would have run
//! out). A SIGKILLed one cannot: its key stays until the lease expires.

use std::process::{Command, Stdio};

use crate::common;

use common::cluster::signal;
use common::etcd::EtcdServer;
use common::{wait_until, ChildGuard};

/// A coordinator electing through `etcd` under `/PREFIX`, with a 30 s lease, once it leads
/// and serves.
fn leader(dir: &std::path::Path, etcd: &EtcdServer, prefix: &str) -> ChildGuard {
    let log = dir.join(format!("{prefix}.log"));
    let child = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["coordinator", "--listen", "127.0.0.1:0"])
            .args(["--state-dir", prefix, "--checkpoint-store", "checkpoints"])
            .args([
                "--leader-election",
                &format!("etcd://{}/{prefix}", etcd.endpoint),
                "--leader-lease",
                "30s",
            ])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("a log"))
            .spawn()
            .expect("the coordinator starts"),
    );
    // Serving (its signal handler is set by then), not only elected.
    wait_until("the coordinator leading and serving", || {
        std::fs::read_to_string(&log)
            .is_ok_and(|l| l.contains(" leads (term") && l.contains(" listening on "))
    });
    child
}

/// How many keys etcd holds at `key`.
fn count(etcd: &EtcdServer, key: &str) -> u64 {
    use base64::Engine;
    let key = base64::engine::general_purpose::STANDARD.encode(key);
    let answer: serde_json::Value = ureq::post(&format!("http://{}/v3/kv/range", etcd.endpoint))
        .send_json(serde_json::json!({ "key": key }))
        .expect("etcd answers")
        .body_mut()
        .read_json()
        .expect("JSON");
    answer["count"]
        .as_str()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_coordinator_stopped_by_sigterm_lets_go_of_its_lease() {
    let etcd = EtcdServer::start();
    let dir = tempfile::tempdir().expect("tempdir");

    let mut stopped = leader(dir.path(), &etcd, "stopped");
    assert_eq!(count(&etcd, "/stopped/leader"), 1);
    signal(stopped.pid(), libc::SIGTERM);
    let status = stopped.0.wait().expect("it ends");
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    assert_eq!(count(&etcd, "/stopped/leader"), 0, "the lease was let go");

    let mut killed = leader(dir.path(), &etcd, "killed");
    let _ = killed.0.kill();
    let _ = killed.0.wait();
    assert_eq!(
        count(&etcd, "/killed/leader"),
        1,
        "a killed leader's key waits for its lease"
    );
}
