//! From a hostile probe: two coordinators elected through etcd share a state directory and a
//! checkpoint directory, both told never to step down by their clock (`--inject-no-step-down`,
//! for tests), so that only the fences stop a superseded leader. The leader is paused past
//! its lease; the standby leads at a later term, takes the catalog over (its term directory,
//! named by `STATE_DIR/catalog/CURRENT`) and runs the query on. Let run again, the old leader
//! believes it leads. A fresh worker that has followed no term yet registers with it, and the
//! old leader restores the query's tasks there and checkpoints them — into the shared
//! checkpoint directory, which had no fence: its commits interleaved with the new leader's,
//! and the output held rows twice (its checkpoints' and, at the end of the input it replayed,
//! what its sinks held). Now its commits are refused (the pointer names another term's
//! directory) and so is the leave it would give its executors to end their input (it steps
//! down then, status 75), each refusal written as a typed event (`refused_by_fence`, act
//! `checkpoint commit` or `leave to end the input`, its term): nothing of its run is
//! committed, and the output equals an uninterrupted run's.

use std::process::{Command, Stdio};

use crate::common;

use common::cluster::{
    assert_submitted_output, leader_term, signal, status_at, windowed_reference, LocalCluster,
    Setup,
};
use common::etcd::EtcdServer;
use common::{output_rows, wait_until, ChildGuard};

/// Two coordinators elected through etcd sharing a state directory, neither stepping down by
/// its clock, and a query under way: the leader paused past its lease, the standby leading
/// and the workers reporting to it, then the old leader let run again.
struct Superseded {
    // Dropped last: the cluster's coordinators use it.
    _etcd: EtcdServer,
    work: tempfile::TempDir,
    expected: Vec<String>,
    cluster: LocalCluster,
    old_term: u64,
    old_addr: String,
    standby: String,
    submit: ChildGuard,
}

fn superseded(prefix: &str, seed: u64) -> Superseded {
    let etcd = EtcdServer::start();
    let work = tempfile::tempdir().expect("tempdir");
    let expected = windowed_reference(work.path(), seed, 120_000, 10_000);
    let setup = Setup {
        standby: true,
        election: Some(format!("etcd://{}/{prefix}", etcd.endpoint)),
        coordinator_flags: vec![
            "--leader-lease".into(),
            "2s".into(),
            "--inject-no-step-down".into(),
        ],
        ..Setup::default()
    };
    let cluster = LocalCluster::start_with(2, 8, setup);
    let old_term = leader_term(&cluster.coordinator_log()).expect("the leader's term");
    let old_addr = std::fs::read_to_string(cluster.dir.path().join("addr"))
        .expect("the leader's address")
        .trim()
        .to_string();
    let standby = cluster.standby_addr();
    let submit = cluster.submit_windowed(work.path());
    wait_until("a first checkpoint", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|c| c >= 1)
    });
    let leader = cluster.coordinator.pid();
    signal(leader, libc::SIGSTOP);
    wait_until("the standby leading", || {
        cluster.standby_log().contains(" leads (term")
    });
    wait_until("the workers reporting to the new leader", || {
        status_at(&standby, "q")["state"] == "running"
    });
    signal(leader, libc::SIGCONT);
    Superseded {
        _etcd: etcd,
        work,
        expected,
        cluster,
        old_term,
        old_addr,
        standby,
        submit,
    }
}

#[test]
fn a_superseded_leader_sharing_a_state_directory_commits_no_checkpoint() {
    let Superseded {
        _etcd,
        work,
        expected,
        cluster,
        old_term,
        old_addr,
        standby,
        submit,
    } = superseded("shared-dir", 13);
    // A worker that knows only the old leader, and no term.
    let fresh = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["worker", "--coordinator", &old_addr, "--name", "fresh"])
            .args(["--slots", "8"])
            .arg("--work-dir")
            .arg(cluster.dir.path().join("fresh"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(cluster.dir.path().join("fresh.log")).expect("a log file"),
            )
            .spawn()
            .expect("a worker starts"),
    );
    let events = cluster.dir.path().join("coordinator/events.jsonl");
    let first_refusal = || {
        std::fs::read_to_string(&events)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|e| e["event"] == "refused_by_fence" && e["term"] == old_term)
    };
    wait_until("the old leader refused by the fence", || {
        first_refusal().is_some()
    });
    // Refused before it acted: as it woke (its check of the fence), or at its first act —
    // placing the query's tasks on the fresh worker, whose sinks would bring the shared
    // output back to its last checkpoint's, or beginning a checkpoint, which would clear the
    // directory of one the new leader committed — never after a commit or an end.
    let refused = first_refusal().expect("waited for above");
    assert!(
        [
            "leadership check",
            "checkpoint begin",
            "deployment of an attempt",
            "restore of a part"
        ]
        .contains(&refused["act"].as_str().unwrap_or("")),
        "the old leader acted before it was refused: {refused}"
    );

    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", cluster.logs());
    drop(fresh);
    let got = output_rows(&work.path().join("out"));
    assert_eq!(
        got.len(),
        expected.len(),
        "rows lost or duplicated\n{}\n--- fresh.log\n{}\nthe old leader's events:\n{}",
        cluster.logs(),
        std::fs::read_to_string(cluster.dir.path().join("fresh.log")).unwrap_or_default(),
        std::fs::read_to_string(&events).unwrap_or_default()
    );
    assert!(
        got == expected,
        "the output differs from the uninterrupted run"
    );
    assert_eq!(status_at(&standby, "q")["state"], "finished");
}

/// From the hostile probe: the same two coordinators, and no fresh worker. Let run again,
/// the old leader has nothing it must do — its workers left it — and no deployment, restore
/// or commit of its own would meet a fence: it lingered, answering clients with what it last
/// knew (a `submit --wait` that had heard only it waited for ever) and taking submissions
/// nobody would run. Now a leader checks the fence as it wakes, and every second: it steps
/// down (status 75), its refusal a typed event; the query finishes under the new leader.
#[test]
fn a_superseded_leader_with_nothing_to_do_steps_down_as_it_wakes() {
    let Superseded {
        _etcd,
        work,
        expected,
        mut cluster,
        old_term,
        submit,
        ..
    } = superseded("idle-superseded", 17);
    cluster.assert_coordinator_steps_down();
    let events = std::fs::read_to_string(cluster.dir.path().join("coordinator/events.jsonl"))
        .unwrap_or_default();
    assert!(
        events
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .any(|e| e["event"] == "refused_by_fence" && e["term"] == old_term),
        "no typed refusal of term {old_term} in {events}"
    );
    assert_submitted_output(&cluster, submit, &work.path().join("out"), &expected);
}
