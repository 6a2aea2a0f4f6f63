//! Two coordinators elected through etcd under 2 s leases; the leader is paused (SIGSTOP)
//! mid-run, past its lease. The workers, which hear no ping from it for 1 s (half the lease),
//! leave it. The standby is elected but does not touch the catalog or the checkpoint store
//! the paused leader holds: it waits, saying so. The old leader, let run
//! again (SIGCONT), finds its lease gone and steps down at once (status 75); the standby then
//! takes the query over without restarting a task, and the output equals an uninterrupted
//! embedded run's.

use crate::common;

use common::cluster::{signal, windowed_generator, LocalCluster, Setup};
use common::etcd::EtcdServer;
use common::{anduin_ok, output_rows, wait_until};

#[test]
fn a_leader_paused_past_its_lease_steps_down_as_it_wakes_and_the_standby_takes_over() {
    let etcd = EtcdServer::start();
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        work.path().join("q.flow"),
        windowed_generator(
            5,
            40_000,
            10_000,
            r#"param kind = "tumbling" param size = "100ms""#,
        ),
    )
    .expect("query");
    anduin_ok(
        work.path(),
        &["run", "q.flow", "--var", "OUTPUT=reference.csv"],
    );
    let expected = output_rows(&work.path().join("reference.csv"));

    let mut cluster = LocalCluster::start_with(
        2,
        8,
        Setup {
            standby: true,
            election: Some(format!("etcd://{}/paused", etcd.endpoint)),
            coordinator_flags: vec!["--leader-lease".into(), "2s".into()],
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
    wait_until("a first checkpoint", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });
    let leader = cluster.coordinator.pid();
    signal(leader, libc::SIGSTOP);
    // No status asked while it is paused: its kernel accepts connections nobody answers.
    wait_until("the standby elected, waiting for the paused leader", || {
        cluster
            .standby_log()
            .contains("waiting for the leader before it to let go")
    });
    for w in 0..2 {
        let log = cluster.dir.path().join(format!("w{w}.log"));
        wait_until("the worker leaving the silent leader", || {
            std::fs::read_to_string(&log)
                .is_ok_and(|l| l.contains("the coordinator has been silent for 1s: leaving it"))
        });
    }
    signal(leader, libc::SIGCONT);
    let mut ended = None;
    wait_until("the old leader stepping down", || {
        ended = cluster.coordinator.0.try_wait().expect("its status");
        ended.is_some()
    });
    assert_eq!(
        ended.expect("read above").code(),
        Some(75),
        "{}",
        cluster.logs()
    );
    assert!(cluster.coordinator_log().contains("stepping down"));

    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", cluster.logs());
    let got = output_rows(&work.path().join("out"));
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated");
    assert!(
        got == expected,
        "the output differs from the uninterrupted run"
    );
    let status = cluster.status("q");
    assert_eq!(status["state"], "finished", "{status}");
    assert_eq!(
        status["attempt"], 1,
        "the new leader restarted tasks: {status}"
    );
}
