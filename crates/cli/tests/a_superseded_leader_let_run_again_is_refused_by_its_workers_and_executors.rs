//! Two coordinators elected through etcd under 2 s leases, both told never to step down by
//! their clock or a lost lease (`--inject-no-step-down`, for tests): only the fences stop a
//! superseded leader. The leader is paused (SIGSTOP) mid-run past its lease; the standby leads
//! at a later term and completes a checkpoint; then it is killed, and the old leader let run
//! again (SIGCONT). It believes it still leads, and the workers and executors, which have lost
//! the new leader, reach it — and refuse it: they have followed a later term. Reading the
//! refusal it steps down (status 75), the refusal written as a typed event
//! (`refused_by_fence`, with its term) to its events file. (The shared state directory's
//! fence may refuse it first — as it wakes, or as it would begin a checkpoint or restore the
//! parts of the workers it heard nothing from while paused: the catalog pointer names the
//! new term's directory — with the same outcome.) Started again, the standby leads at
//! a third term and the query finishes with the output of an uninterrupted run.

use crate::common;

use common::cluster::{leader_term, signal, status_at, windowed_reference, LocalCluster, Setup};
use common::etcd::EtcdServer;
use common::{output_rows, wait_until};

#[test]
fn a_superseded_leader_let_run_again_is_refused_by_its_workers_and_executors() {
    let etcd = EtcdServer::start();
    let work = tempfile::tempdir().expect("tempdir");
    let expected = windowed_reference(work.path(), 7, 100_000, 10_000);
    let setup = Setup {
        standby: true,
        election: Some(format!("etcd://{}/superseded", etcd.endpoint)),
        coordinator_flags: vec![
            "--leader-lease".into(),
            "2s".into(),
            "--inject-no-step-down".into(),
        ],
        ..Setup::default()
    };
    let mut cluster = LocalCluster::start_with(2, 8, setup);
    let old_term = leader_term(&cluster.coordinator_log()).expect("the leader's term");
    let standby = cluster.standby_addr();
    let submit = cluster.submit_windowed(work.path());
    let mut before = 0;
    wait_until("a first checkpoint", || {
        before = cluster.status("q")["last_checkpoint"].as_u64().unwrap_or(0);
        before >= 1
    });
    let leader = cluster.coordinator.pid();
    signal(leader, libc::SIGSTOP);
    wait_until("the standby leading", || {
        cluster.standby_log().contains(" leads (term")
    });
    let new_term = leader_term(&cluster.standby_log()).expect("the standby's term");
    assert!(new_term > old_term, "term {new_term} after {old_term}");
    wait_until("a checkpoint the new leader completed", || {
        let s = status_at(&standby, "q");
        s["last_checkpoint"].as_u64().is_some_and(|e| e > before) || s["state"] == "finished"
    });
    // The new leader gone, the old one — which never steps down by itself — is the only
    // coordinator the workers and executors can reach.
    cluster.kill_standby();
    signal(leader, libc::SIGCONT);
    cluster.assert_coordinator_steps_down();
    let events = std::fs::read_to_string(cluster.dir.path().join("coordinator/events.jsonl"))
        .expect("the old leader's events");
    let refused: Vec<serde_json::Value> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "refused_by_fence")
        .collect();
    // Refused by a worker or an executor that follows the new term, or by the shared state
    // directory, whose catalog pointer names the new term's directory.
    let by_peer = |e: &serde_json::Value| {
        e["act"]
            .as_str()
            .is_some_and(|a| a.ends_with(" connection"))
            && e["why"]
                .as_str()
                .is_some_and(|w| w.contains(&format!("term {new_term}")))
    };
    let by_directory = |e: &serde_json::Value| {
        e["why"]
            .as_str()
            .is_some_and(|w| w.contains(&format!("term-{new_term:020}")))
    };
    assert!(
        refused
            .iter()
            .any(|e| e["term"] == old_term && (by_peer(e) || by_directory(e))),
        "no typed refusal of term {old_term} by a worker, an executor or the state directory \
         in {events}"
    );

    // A leader again: the query goes on to the uninterrupted output.
    cluster.start_standby_again();
    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", cluster.logs());
    assert!(
        leader_term(&cluster.standby_log()).is_some_and(|t| t > new_term),
        "{}",
        cluster.logs()
    );
    let got = output_rows(&work.path().join("out"));
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated");
    assert!(
        got == expected,
        "the output differs from the uninterrupted run"
    );
    assert_eq!(status_at(&standby, "q")["state"], "finished");
}
