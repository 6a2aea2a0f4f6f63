//! Coordinators of one election must share a state directory and checkpoint store: one with
//! other ones is refused at its start when the election says so — and also when the election
//! said nothing yet at its start but does once it wins (two of different state started at
//! once on a new election: the first to lead says what the cluster shares, the other is
//! refused when its turn comes). A coordinator without --leader-election on an elected
//! cluster's state directory is refused; so is a lease out of bounds.

use std::process::{Command, Stdio};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde_json::{json, Value};

use crate::common;

use common::etcd::EtcdServer;
use common::{anduin, wait_until, ChildGuard};

/// A call to etcd's gateway.
fn etcd_call(etcd: &EtcdServer, path: &str, body: Value) -> Value {
    ureq::post(&format!("http://{}{path}", etcd.endpoint))
        .send_json(body)
        .expect("etcd answers")
        .body_mut()
        .read_json()
        .expect("JSON")
}

#[test]
fn a_coordinator_that_would_lead_another_clusters_state_is_refused_even_when_it_wins() {
    let etcd = EtcdServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    // The test holds the election key itself, under a lease of its own, and has said
    // nothing of the cluster's state yet.
    let lease = etcd_call(&etcd, "/v3/lease/grant", json!({ "TTL": 60 }));
    let id = lease["ID"].as_str().expect("a lease").to_string();
    etcd_call(
        &etcd,
        "/v3/kv/put",
        json!({ "key": BASE64.encode("/p/leader"), "value": BASE64.encode("the test"), "lease": id }),
    );
    let log = dir.path().join("b.log");
    let mut b = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["coordinator", "--listen", "127.0.0.1:0"])
            .args(["--state-dir", "b", "--checkpoint-store", "b-checkpoints"])
            .args([
                "--leader-election",
                &format!("etcd://{}/p", etcd.endpoint),
                "--leader-lease",
                "2s",
            ])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("a log"))
            .spawn()
            .expect("starts"),
    );
    let text = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_until("b standing by", || text().contains("the test leads"));
    // Meanwhile the leader says what its cluster shares: another state directory.
    let theirs = json!({ "state_dir": "/elsewhere/state", "checkpoint_store": "/elsewhere/ck" });
    etcd_call(
        &etcd,
        "/v3/kv/put",
        json!({ "key": BASE64.encode("/p/shared"), "value": BASE64.encode(theirs.to_string()) }),
    );
    etcd_call(&etcd, "/v3/lease/revoke", json!({ "ID": id }));
    let mut ended = None;
    wait_until("b refused once it won", || {
        ended = b.0.try_wait().expect("its status");
        ended.is_some()
    });
    assert!(!ended.expect("read above").success(), "{}", text());
    assert!(
        text().contains("same --state-dir") && text().contains("/elsewhere/state"),
        "{}",
        text()
    );
    assert!(!text().contains(" leads (term"), "{}", text());

    // An elected cluster's state directory, and a coordinator without an election.
    std::fs::create_dir_all(dir.path().join("s")).expect("a state directory");
    std::fs::write(
        dir.path().join("s/leader-lock"),
        format!("etcd://{}/p", etcd.endpoint),
    )
    .expect("the note");
    let out = anduin(
        dir.path(),
        &[
            "coordinator",
            "--listen",
            "127.0.0.1:0",
            "--state-dir",
            "s",
            "--checkpoint-store",
            "ck",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("give this one the same --leader-election"),
        "{stderr}"
    );
    // A lease etcd would refuse, and a Redis server given twice.
    for (election, lease, says) in [
        (
            format!("etcd://{}/q", etcd.endpoint),
            "100000000s",
            "between 1s and 1h",
        ),
        (
            "redlock://127.0.0.1:1,127.0.0.1:1,127.0.0.1:2".to_string(),
            "2s",
            "given twice",
        ),
    ] {
        let out = anduin(
            dir.path(),
            &[
                "coordinator",
                "--listen",
                "127.0.0.1:0",
                "--state-dir",
                "t",
                "--checkpoint-store",
                "ck",
                "--leader-election",
                &election,
                "--leader-lease",
                lease,
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{stderr}");
    }
}
