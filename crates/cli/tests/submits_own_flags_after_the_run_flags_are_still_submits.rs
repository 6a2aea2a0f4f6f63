//! `anduin submit FILE --coordinator A --var …` takes its own flags and the run flags of the
//! query in any order, as the usage in issue 13 writes it:
//! `anduin submit q2.sql --coordinator … --var INPUT=… --var OUTPUT=… [--parallelism 4] [--wait]`.
//!
//! Found by a hostile probe: the run flags are a trailing argument list, so everything after
//! the first run flag is taken for `anduin run`: `--wait` at the end is refused by the
//! coordinator ("unexpected argument '--wait' found; tip: a similar argument exists:
//! '--api'"), and `--name N` at the end silently becomes `anduin run --name` (the API's name)
//! while the query is named after the file.

use crate::common;

use common::cluster::LocalCluster;
use common::{anduin, output_rows};

const GENERATE: &str = r#"
type name = "Event" {
  column name = "ts", type = "int"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 1000
  output name = "events", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "events"
  param path = "${OUTPUT}"
}
"#;

#[test]
fn submits_own_flags_after_the_run_flags_are_still_submits() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), GENERATE).expect("query");
    let cluster = LocalCluster::start(1, 4);
    let out = anduin(
        work.path(),
        &[
            "submit",
            "q.flow",
            "--coordinator",
            &cluster.addr,
            "--var",
            "OUTPUT=out",
            "--name",
            "named",
            "--wait",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(output_rows(&work.path().join("out")).len(), 1000);
    assert_eq!(
        cluster.status("named")["state"],
        "finished",
        "the query is not named as --name said: {}",
        cluster.all()
    );
}
