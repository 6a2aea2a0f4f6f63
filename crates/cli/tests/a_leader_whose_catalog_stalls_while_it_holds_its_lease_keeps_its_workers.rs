//! Two coordinators elected through etcd under 2 s leases (workers leave a coordinator silent
//! for 1 s). The leader's write of its first completed checkpoint takes 3 s, its state held
//! meanwhile (`--inject-catalog-stall`, as a catalog in a slow object store tried again): it
//! still holds its lease, so it keeps pinging, and no worker leaves it, none is declared dead,
//! nothing is restored, and the output equals an uninterrupted embedded run's.

use crate::common;

use common::cluster::{windowed_reference, LocalCluster, Setup};
use common::etcd::EtcdServer;
use common::{output_rows, wait_until};

#[test]
fn a_leader_whose_catalog_stalls_while_it_holds_its_lease_keeps_its_workers() {
    let etcd = EtcdServer::start();
    let work = tempfile::tempdir().expect("tempdir");
    let expected = windowed_reference(work.path(), 5, 60_000, 10_000);
    let cluster = LocalCluster::start_with(
        2,
        8,
        Setup {
            standby: true,
            election: Some(format!("etcd://{}/stall", etcd.endpoint)),
            coordinator_flags: vec![
                "--leader-lease".into(),
                "2s".into(),
                "--inject-catalog-stall".into(),
                "3s".into(),
            ],
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
    wait_until("the query's status", || {
        cluster.status("q")["state"] == "finished"
    });
    let status = cluster.status("q");
    assert_eq!(status["attempt"], 1, "{status}\n{}", cluster.logs());
    let logs = cluster.logs();
    assert!(
        !logs.contains("leaving it") && !logs.contains("declared dead"),
        "a worker left the stalled leader:\n{logs}"
    );
    assert!(
        !cluster.standby_log().contains(" leads (term"),
        "the standby took over:\n{logs}"
    );
    let got = output_rows(&work.path().join("out"));
    assert_eq!(
        got, expected,
        "the output differs from the uninterrupted run"
    );
}
