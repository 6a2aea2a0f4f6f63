//! `anduin submit` takes the flags of `anduin run` that concern the query, and refuses at once
//! those the coordinator chooses (`--checkpoint-dir`, `--events`…). A flag that each executor
//! is started with anyway (`--quiet`, `--no-api`) must either work or be refused at submit
//! with a message naming it.
//!
//! Found by a hostile probe: `--quiet` (or `-q`, `--no-api`, `--api-token-file F`) is
//! accepted; every executor then dies at once on clap's "the argument '--quiet' cannot be
//! used multiple times" (worker.rs `start_executor` appends `--no-api --quiet`), which only
//! the worker's stderr shows; the query is retried ten times and fails with "its executor
//! ended with exit status: 2".

use crate::common;

use common::cluster::LocalCluster;
use common::output_rows;

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
fn a_run_flag_the_executor_sets_itself_is_refused_at_submit_or_works() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), GENERATE).expect("query");
    let cluster = LocalCluster::start(1, 4);
    for (i, flag) in ["--quiet", "--no-api"].into_iter().enumerate() {
        let output = format!("OUTPUT=out{i}");
        let out = cluster
            .submit(
                work.path(),
                "q.flow",
                &["--name", &format!("q{i}"), "--var", &output, flag],
            )
            .wait_output();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            assert_eq!(
                output_rows(&work.path().join(format!("out{i}"))).len(),
                1000,
                "{flag}: {stderr}"
            );
        } else {
            assert!(
                stderr.contains(flag) && !stderr.contains("attempt 2"),
                "{flag}: refused, but not at once or without saying why: {stderr}"
            );
        }
    }
}
