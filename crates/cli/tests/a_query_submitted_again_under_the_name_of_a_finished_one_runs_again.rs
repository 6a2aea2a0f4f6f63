//! A name is free again once its query is over (the coordinator says so: "cancel it or
//! choose another name" is only asked of a running one). A query submitted again under the
//! name of one that finished — here the same file writing to another output — must run and
//! write its output. Found by a hostile probe: the new submission is reported `finished` at
//! once, exits 0, and writes nothing, because it finds the old query's final checkpoint in
//! the checkpoint directory named after the query (driver.rs `attempt`: `recovery(dir)` says
//! `Finished` before anything is deployed), and `--from-scratch` is refused by `submit`.

use crate::common;

use common::cluster::LocalCluster;
use common::{anduin_ok, output_rows};

const GENERATE: &str = r#"
type name = "Event" {
  column name = "ts", type = "int"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 5000
  output name = "events", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "events"
  param path = "${OUTPUT}"
}
"#;

#[test]
fn a_query_submitted_again_under_the_name_of_a_finished_one_runs_again() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), GENERATE).expect("query");
    anduin_ok(
        work.path(),
        &["run", "q.flow", "--var", "OUTPUT=reference.csv"],
    );
    let expected = output_rows(&work.path().join("reference.csv"));
    assert_eq!(expected.len(), 5000);

    let cluster = LocalCluster::start(2, 4);
    let first = cluster
        .submit(work.path(), "q.flow", &["--var", "OUTPUT=first"])
        .wait_output();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(output_rows(&work.path().join("first")), expected);
    assert_eq!(cluster.status("q")["state"], "finished");

    // The same name again: the first query is over, so the name is free.
    let second = cluster
        .submit(work.path(), "q.flow", &["--var", "OUTPUT=second"])
        .wait_output();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    let out = work.path().join("second");
    assert!(
        out.exists(),
        "the second submission said it finished but wrote no output at all: {stderr}"
    );
    assert_eq!(
        output_rows(&out),
        expected,
        "the second submission's output differs from the query's"
    );
}
