//! From the hostile probe of hot standby on a cluster: the copies of a hot standby are placed
//! on distinct workers, and per-task recovery keeps them apart too — a lost copy is restored on
//! a live worker that does not run its twin when there is one (it went to the least loaded
//! worker, its twin's: from then on a single worker's loss took every copy at once). With
//! three workers, killing the standby copy's worker leaves one that does not run the active
//! copy: the standby is restored there.

use crate::common;

use common::cluster::{tumbling_generator, LocalCluster};

const HOT: &str = "param fault_tolerance = \"hot-standby\"\n  param replicas = 2\n  ";

#[test]
fn a_restored_copy_of_a_hot_standby_stays_apart_from_its_twin() {
    let plain = tumbling_generator(23, 40_000);
    let hot = plain.replacen(
        "param time = \"ts\"",
        &format!("{HOT}param time = \"ts\""),
        1,
    );
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), &hot).expect("query");
    let mut cluster = LocalCluster::start(3, 8);
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &["--var", "OUTPUT=out", "--checkpoint-every", "4000"],
    );
    common::wait_until("the query to run", || {
        cluster.status("q")["instances"]
            .as_object()
            .is_some_and(|i| !i.is_empty())
    });
    let standby = cluster.status("q")["instances"]["w_replica_1"]
        .as_str()
        .expect("the standby's worker")
        .to_string();
    let victim: usize = standby
        .strip_prefix('w')
        .and_then(|i| i.parse().ok())
        .expect("a worker named wN");
    common::wait_until("the first checkpoint", || {
        let s = cluster.status("q");
        s["last_checkpoint"].as_u64().is_some_and(|e| e >= 1) || s["state"] == "finished"
    });
    let _ = cluster.workers[victim].0.kill();
    let _ = cluster.workers[victim].0.wait();
    common::wait_until("the standby to be restored elsewhere", || {
        let s = cluster.status("q");
        s["instances"]["w_replica_1"] != standby.as_str() || s["state"] == "finished"
    });
    let done = submit.wait_output();
    assert!(done.status.success(), "{}", cluster.logs());
    let instances = cluster.status("q")["instances"].clone();
    assert_ne!(
        instances["w"], instances["w_replica_1"],
        "the restored copy runs next to its twin although a third worker is live: {instances}"
    );
}
