//! A coordinator and three worker processes on loopback run Q2 of the benchmark over a
//! million rows, its window instances spread over the workers and its channels across the
//! network: the output equals the embedded run's, and `anduin status` shows where the tasks
//! ran and the checkpoint the query finished at.

use crate::common;

use common::cluster::{q2_reference, LocalCluster};
use common::{output_rows, repo};

#[test]
fn a_query_on_a_coordinator_and_three_workers_writes_what_the_embedded_run_writes() {
    let work = tempfile::tempdir().expect("tempdir");
    let expected = q2_reference(work.path());
    let q2 = repo().join("examples/q2.flow");
    let q2 = q2.to_str().expect("utf-8 path");

    let cluster = LocalCluster::start(3, 8);
    let submit = cluster.submit(
        work.path(),
        q2,
        &[
            "--var",
            "INPUT=events.csv",
            "--var",
            "OUTPUT=clustered",
            "--parallelism",
            "4",
        ],
    );
    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        output_rows(&work.path().join("clustered")) == expected,
        "the cluster's output differs from the embedded run's"
    );
    let status = cluster.status("q2");
    assert_eq!(status["state"], "finished", "{status}");
    // Four window instances and a source and a sink over three workers: every worker ran some.
    let placement = status["placement"].as_object().expect("placement");
    assert_eq!(placement.len(), 3, "{status}");
    assert!(status["last_checkpoint"].as_u64().is_some(), "{status}");
}
