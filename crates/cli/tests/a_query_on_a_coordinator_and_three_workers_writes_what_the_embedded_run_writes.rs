//! A coordinator and three worker processes on loopback run Q2 of the benchmark over a
//! million rows, its window instances spread over the workers and its channels across the
//! network: the output equals the embedded run's, and `anduin status` shows where the tasks
//! ran and the checkpoint the query finished at.

mod common;

use common::cluster::LocalCluster;
use common::{anduin_ok, output_rows, repo};

const EVENTS: &str = r#"
type name = "Event" {
  column name = "ts", type = "int"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 1000000
  output name = "events", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "events"
  param path = "events.csv"
}
"#;

#[test]
fn a_query_on_a_coordinator_and_three_workers_writes_what_the_embedded_run_writes() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("events.flow"), EVENTS).expect("query");
    anduin_ok(work.path(), &["run", "events.flow"]);
    let q2 = repo().join("examples/q2.flow");
    let q2 = q2.to_str().expect("utf-8 path");
    anduin_ok(
        work.path(),
        &[
            "run",
            q2,
            "--var",
            "INPUT=events.csv",
            "--var",
            "OUTPUT=embedded.csv",
        ],
    );
    let expected = output_rows(&work.path().join("embedded.csv"));
    assert!(expected.len() > 100_000, "Q2 writes enough rows");

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
