//! Two coordinators elected through etcd under 2 s leases; the leader is paused (SIGSTOP)
//! mid-run, past its lease. The workers and executors, which hear no ping from it for 1 s
//! (half the lease), leave it. The standby leads and takes the catalog over by term without
//! waiting for the paused leader (which still holds its own), the executors report to it, and
//! it completes checkpoints while the old leader is still paused. Let run again (SIGCONT), the
//! old leader finds its lease gone and steps down at once (status 75), writing nothing. No task
//! restarted, and the output equals an uninterrupted embedded run's.
//!
//! Then the fences alone: the catalog in S3 (no shared file system) and the old leader told
//! never to step down by its clock or a lost lease (`--inject-no-step-down`, for tests). Run
//! again, it is stopped by the store — its check of the new leader's mark as it wakes, or
//! its next catalog edit's place taken by the new leader, or the mark found as it begins or
//! commits a checkpoint — and steps down
//! (status 75), the refusal written as a typed event (`refused_by_fence`, with its term) to
//! its events file; the output is exact all the same.

use crate::common;

use common::cluster::{
    assert_submitted_output, leader_term, signal, status_at, windowed_reference, LocalCluster,
    Setup,
};
use common::etcd::EtcdServer;
use common::s3::{S3Server, BUCKET};
use common::{wait_until, wait_until_or_show};

#[test]
fn a_standby_takes_over_from_a_leader_paused_past_its_lease_which_steps_down_as_it_wakes() {
    scenario(None);
}

#[test]
fn a_paused_leader_that_would_act_on_is_stopped_by_the_fences_in_the_store() {
    let s3 = S3Server::start();
    scenario(Some(&s3));
}

/// The scenario; with `fenced`, the catalog in that S3 server and the old leader stopped by
/// the fences alone.
fn scenario(fenced: Option<&S3Server>) {
    let etcd = EtcdServer::start();
    let work = tempfile::tempdir().expect("tempdir");
    let expected = windowed_reference(work.path(), 5, 100_000, 10_000);

    let mut setup = Setup {
        standby: true,
        election: Some(format!("etcd://{}/paused", etcd.endpoint)),
        coordinator_flags: vec!["--leader-lease".into(), "2s".into()],
        ..Setup::default()
    };
    if let Some(s3) = fenced {
        setup.checkpoint_store = Some(format!("s3://{BUCKET}/paused"));
        setup.env = s3
            .env()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        setup.standby_state_of_its_own = true;
        setup.coordinator_flags.push("--inject-no-step-down".into());
    }
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
    // No status asked of the paused one: its kernel accepts connections nobody answers.
    wait_until("the standby leading", || {
        cluster.standby_log().contains(" leads (term")
    });
    for w in 0..2 {
        let log = cluster.dir.path().join(format!("w{w}.log"));
        wait_until_or_show(
            "the worker leaving the silent leader",
            || {
                std::fs::read_to_string(&log)
                    .is_ok_and(|l| l.contains("the coordinator has been silent for 1s: leaving it"))
            },
            || cluster.logs(),
        );
    }
    wait_until("a checkpoint the new leader completed", || {
        let s = status_at(&standby, "q");
        s["last_checkpoint"].as_u64().is_some_and(|e| e > before) || s["state"] == "finished"
    });
    assert!(
        matches!(cluster.coordinator.0.try_wait(), Ok(None)),
        "the old leader is still there, paused: {}",
        cluster.logs()
    );
    signal(leader, libc::SIGCONT);
    cluster.assert_coordinator_steps_down();
    let old_log = cluster.coordinator_log();
    assert!(old_log.contains("stepping down"), "{old_log}");
    if fenced.is_some() {
        // Stopped by the store, not by its clock.
        assert!(!old_log.contains("may expire before"), "{old_log}");
        let events = std::fs::read_to_string(cluster.dir.path().join("coordinator/events.jsonl"))
            .expect("the old leader's events");
        let refused: Vec<serde_json::Value> = events
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|e| e["event"] == "refused_by_fence")
            .collect();
        assert!(
            refused.iter().any(|e| e["term"] == old_term
                && [
                    "leadership check",
                    "catalog edit",
                    "checkpoint begin",
                    "checkpoint commit"
                ]
                .contains(&e["act"].as_str().unwrap_or(""))),
            "no typed refusal of term {old_term} in {events}"
        );
    }

    assert_submitted_output(&cluster, submit, &work.path().join("out"), &expected);
    let status = status_at(&standby, "q");
    assert_eq!(status["state"], "finished", "{status}");
    assert_eq!(
        status["attempt"],
        1,
        "the new leader restarted tasks: {status}\n{}",
        cluster.logs()
    );
    if fenced.is_some() {
        for dir in ["coordinator", "standby-state"] {
            let catalog = cluster.dir.path().join(dir).join("catalog");
            assert!(!catalog.exists(), "{} exists", catalog.display());
        }
        return;
    }
    // The catalog is the new leader's term's.
    let current = std::fs::read_to_string(cluster.dir.path().join("coordinator/catalog/CURRENT"))
        .expect("the catalog's pointer");
    let term = leader_term(&cluster.standby_log()).expect("the standby's term");
    assert_eq!(current.trim(), format!("term-{term:0>20}"));
}
