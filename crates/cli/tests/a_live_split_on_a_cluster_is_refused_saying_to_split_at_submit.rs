//! Live pipelining runs embedded only: on a cluster (`anduin submit`), `anduin ctl set q w
//! pipeline split` is refused with an error that says so and how to split there (`param
//! pipeline = "split"` in the query, at submit), and the query runs on unchanged.

use crate::a_chain_split_while_it_runs_writes_what_an_unsplit_run_writes::CHAIN;
use crate::common;

use common::cluster::LocalCluster;
use common::{ctl, output_rows, stdout_ok, wait_until};

#[test]
fn a_live_split_on_a_cluster_is_refused_saying_to_split_at_submit() {
    let work = tempfile::tempdir().expect("tempdir");
    let d = work.path();
    let slow = CHAIN.replace("param rate = 40000", "param rate = 2000");
    std::fs::write(d.join("q.flow"), slow).expect("query");
    let cluster = LocalCluster::start(1, 8);
    let api = std::fs::read_to_string(cluster.dir.path().join("coordinator/api.url"))
        .expect("the coordinator wrote its API's URL");
    let submit = cluster.submit(
        d,
        "q.flow",
        &["--var", "OUTPUT=out", "--checkpoint-interval", "300ms"],
    );
    wait_until("the query runs with a checkpoint", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });

    let refused = ctl(d, &api, &["set", "q", "w", "pipeline", "split"]);
    assert_ne!(refused.status.code(), Some(0));
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        why.contains("embedded only") && why.contains("param pipeline = \"split\""),
        "{why}"
    );
    let history = stdout_ok(&ctl(d, &api, &["history", "q"]));
    assert!(!history.contains("pipeline"), "{history}");

    stdout_ok(&ctl(d, &api, &["set", "q", "gen", "rate", "1000000"]));
    let out = submit.wait_output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!output_rows(&d.join("out")).is_empty());
}
