//! A live split is taken on a cluster (issue 15), but not of an operator that runs in a copy
//! of a hot standby, as in an embedded run: `anduin ctl set q w pipeline split` against the
//! coordinator is refused with the reason (the stream selector fails over between whole
//! copies), nothing is split or recorded, and the query runs on to its output.

use crate::a_chain_split_while_it_runs_writes_what_an_unsplit_run_writes::CHAIN;
use crate::a_live_split_of_a_hot_standby_copy_is_refused::assert_copies_refuse_to_split;
use crate::common;

use common::cluster::LocalCluster;
use common::{ctl, output_rows, stdout_ok, wait_until};

#[test]
fn a_live_split_of_a_hot_standby_copy_on_a_cluster_is_refused() {
    let work = tempfile::tempdir().expect("tempdir");
    let d = work.path();
    let query = CHAIN
        .replace(
            "  param keys = \"sensor\"",
            "  param keys = \"sensor\"\n  param fault_tolerance = \"hot-standby\"\n  param replicas = 2",
        )
        .replace("param rate = 40000", "param rate = 2000");
    std::fs::write(d.join("q.flow"), query).expect("query");
    // The copies run on distinct workers.
    let cluster = LocalCluster::start(2, 8);
    let api = cluster.api();
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
    assert_copies_refuse_to_split(d, &api);
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
