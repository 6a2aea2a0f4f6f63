//! Two coordinators elect their leader by a lock file (`--leader-election file:///…`) and
//! share a state directory; workers and the client are given both addresses. The leader is
//! killed with SIGKILL mid-run (after a seeded number of checkpoints): the standby takes the
//! lock (term 2), recovers the catalog the leader kept, the workers and their executors —
//! running on meanwhile — register and report with it, and it takes over the query's
//! checkpoints without restarting a task (attempt 1, the same executors). `anduin submit
//! --wait`, asking whichever leads, sees the query finish, and the output equals an
//! uninterrupted embedded run's. A coordinator with another state directory or checkpoint
//! store than the leader's is refused at its start. The same with coordinators elected
//! through etcd under 2 s leases (the standby leads once the killed leader's lease expired,
//! at a term above the leader's: etcd's revision), and by Redlock over 3 Redis servers one of
//! which is down. And through etcd with checkpoints in S3 (a moto server) and a state
//! directory of each coordinator's own: no file system shared, the catalog is in the store
//! (`.catalog/`), and the standby takes it over from there.

use crate::common;

use common::cluster::{executors, leader_term, windowed_generator, LocalCluster, Setup};
use common::etcd::EtcdServer;
use common::redis::RedisServer;
use common::s3::{S3Server, BUCKET};
use common::{anduin, anduin_ok, output_rows, wait_until};

/// The scenario, the leader killed after `after` checkpoints; the coordinators elect by
/// `election`, or by a lock file, and are started as `more` says beyond that.
fn scenario(after: u64, election: Option<String>, more: Setup) {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        work.path().join("q.flow"),
        windowed_generator(
            7,
            60_000,
            20_000,
            r#"param kind = "tumbling" param size = "100ms""#,
        ),
    )
    .expect("query");
    anduin_ok(
        work.path(),
        &["run", "q.flow", "--var", "OUTPUT=reference.csv"],
    );
    let expected = output_rows(&work.path().join("reference.csv"));
    assert!(expected.len() > 10_000, "the query writes enough rows");

    let mut cluster = LocalCluster::start_with(
        3,
        8,
        Setup {
            standby: true,
            election: election.clone(),
            coordinator_flags: ["--leader-lease".into(), "2s".into()]
                .into_iter()
                .chain(more.coordinator_flags.clone())
                .collect(),
            ..more
        },
    );
    assert!(
        cluster.standby_log().contains("standing by"),
        "{}",
        cluster.logs()
    );
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &[
            "--var",
            "OUTPUT=out",
            "--parallelism",
            "3",
            "--no-chaining",
            "--checkpoint-every",
            "4000",
        ],
    );
    wait_until("the checkpoints before the kill", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= after)
    });
    assert_ne!(
        cluster.status("q")["state"],
        "finished",
        "the kill must come mid-run"
    );
    let before = executors(&cluster, None);
    let leader = leader_term(&cluster.coordinator_log()).expect("the leader's term");
    cluster.kill_leader();
    wait_until("the standby leading", || {
        leader_term(&cluster.standby_log()).is_some()
    });
    let standby = leader_term(&cluster.standby_log()).expect("read above");
    assert!(standby > leader, "{}", cluster.logs());
    if election.is_none() {
        assert_eq!((leader, standby), (1, 2), "a lock file's terms count up");
    }
    // The new leader takes over: a checkpoint of its own completes (or the query ends).
    let mut taken_over = None;
    wait_until("the new leader's status of the query", || {
        taken_over = cluster.status("q")["last_checkpoint"].as_u64();
        taken_over.is_some()
    });
    let taken_over = taken_over.expect("read above");
    wait_until("a checkpoint completed by the new leader", || {
        let s = cluster.status("q");
        s["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e > taken_over)
            || s["state"] == "finished"
    });
    let started: Vec<u32> = executors(&cluster, None)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert!(
        started.is_empty(),
        "after {after}: the workers started the executors {started:?} since the leader's kill\n{}",
        cluster.logs()
    );
    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "after {after}: {stderr}\n{}",
        cluster.logs()
    );
    let got = output_rows(&work.path().join("out"));
    assert_eq!(
        got.len(),
        expected.len(),
        "after {after}: rows lost or duplicated"
    );
    assert!(
        got == expected,
        "after {after}: the output differs from the uninterrupted run"
    );
    let status = cluster.status("q");
    assert_eq!(status["state"], "finished", "{status}");
    assert_eq!(
        status["attempt"], 1,
        "after {after}: the new leader restarted the query's tasks: {status}"
    );

    if cluster.setup.standby_state_of_its_own {
        // Neither kept a catalog in its state directory: both read and wrote the store's.
        for dir in ["coordinator", "standby-state"] {
            let catalog = cluster.dir.path().join(dir).join("catalog");
            assert!(!catalog.exists(), "{} exists", catalog.display());
        }
        // A coordinator without an election on that store is refused: it would lead beside.
        let store = cluster.setup.checkpoint_store.clone().expect("an S3 store");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["coordinator", "--listen", "127.0.0.1:0", "--state-dir"])
            .arg(cluster.dir.path().join("unelected"))
            .args(["--checkpoint-store", &store])
            .envs(cluster.setup.env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("anduin runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains("give this one the same --leader-election"),
            "{stderr}"
        );
    }
    if election.is_some() {
        return;
    }
    // A third coordinator on the same lock but another state directory is refused.
    let other = tempfile::tempdir().expect("tempdir");
    let lock = format!(
        "file://{}",
        cluster.dir.path().join("leader.lock").display()
    );
    let out = anduin(
        other.path(),
        &[
            "coordinator",
            "--listen",
            "127.0.0.1:0",
            "--state-dir",
            "state",
            "--checkpoint-store",
            "checkpoints",
            "--leader-election",
            &lock,
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("same --state-dir"),
        "{stderr}"
    );
    // So is one with the leader's state directory and other checkpoints: it would restore
    // the queries from what is not theirs.
    let state = cluster.dir.path().join("coordinator");
    let out = anduin(
        other.path(),
        &[
            "coordinator",
            "--listen",
            "127.0.0.1:0",
            "--state-dir",
            &state.display().to_string(),
            "--checkpoint-store",
            "elsewhere",
            "--leader-election",
            &lock,
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("--checkpoint-store")
            && stderr.contains("elsewhere"),
        "{stderr}"
    );
}

#[test]
fn a_standby_coordinator_takes_over_from_a_killed_leader_without_restarting_a_task() {
    for after in [1, 3] {
        scenario(after, None, Setup::default());
    }
}

#[test]
fn a_standby_coordinator_elected_through_etcd_takes_over_from_a_killed_leader() {
    let etcd = EtcdServer::start();
    scenario(
        1,
        Some(format!("etcd://{}/anduin-test", etcd.endpoint)),
        Setup::default(),
    );
}

#[test]
fn a_standby_coordinator_elected_by_a_kubernetes_lease_takes_over_from_a_killed_leader() {
    let api = common::kube_fake::FakeApi::start("streams");
    scenario(
        1,
        Some("kubernetes://streams/anduin-leader".into()),
        Setup {
            coordinator_flags: vec!["--kube-api".into(), api.url()],
            ..Setup::default()
        },
    );
    let lease = api
        .state()
        .leases
        .get("anduin-leader")
        .cloned()
        .expect("the Lease");
    assert_eq!(lease["spec"]["leaseTransitions"], 1, "{lease}");
}

#[test]
fn a_standby_coordinator_with_no_shared_file_system_takes_over_through_the_catalog_in_s3() {
    let etcd = EtcdServer::start();
    let s3 = S3Server::start();
    scenario(
        1,
        Some(format!("etcd://{}/anduin-test", etcd.endpoint)),
        Setup {
            checkpoint_store: Some(format!("s3://{BUCKET}/cluster")),
            env: s3
                .env()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            standby_state_of_its_own: true,
            ..Setup::default()
        },
    );
}

#[test]
fn a_standby_coordinator_elected_by_redlock_takes_over_from_a_killed_leader_with_a_redis_server_down(
) {
    let mut servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let addresses: Vec<String> = servers.iter().map(RedisServer::address).collect();
    // One of the three is down from the start: a majority is two.
    servers[1].kill();
    scenario(
        1,
        Some(format!("redlock://{}", addresses.join(","))),
        Setup::default(),
    );
}

/// The leader dies right after recording a submission, before answering it: the client asks
/// the next leader whether it was taken (it was: a query of that name is not over) instead of
/// failing, and the query runs once under the new leader, to the embedded run's output.
#[test]
fn a_submission_whose_leader_died_as_it_recorded_it_runs_once_under_the_next() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        work.path().join("q.flow"),
        windowed_generator(
            3,
            20_000,
            20_000,
            r#"param kind = "tumbling" param size = "100ms""#,
        ),
    )
    .expect("query");
    anduin_ok(
        work.path(),
        &["run", "q.flow", "--var", "OUTPUT=reference.csv"],
    );
    let expected = output_rows(&work.path().join("reference.csv"));
    let cluster = LocalCluster::start_with(
        2,
        8,
        Setup {
            standby: true,
            coordinator_flags: vec!["--inject-exit-after".into(), "submission-recorded".into()],
            ..Setup::default()
        },
    );
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &[
            "--var",
            "OUTPUT=out",
            "--parallelism",
            "2",
            "--checkpoint-every",
            "4000",
        ],
    );
    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", cluster.logs());
    assert!(
        cluster
            .coordinator_log()
            .contains("exiting after SubmissionRecorded"),
        "the leader died with the submission: {}",
        cluster.logs()
    );
    assert!(cluster.standby_log().contains(" leads (term 2)"));
    assert_eq!(output_rows(&work.path().join("out")), expected);
    assert_eq!(cluster.status("q")["state"], "finished");
}
