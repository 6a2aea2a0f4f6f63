//! Pipelining (the paper's pattern 5): operators of a chain that ask for
//! `pipeline = "split"` run as tasks of their own instead of fused into one, with the output
//! of the fused chain; on a cluster, two such stages one after the other run on distinct
//! workers.

use crate::common;

use common::cluster::LocalCluster;
use common::{anduin, anduin_ok, output_rows, wait_until};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 3
  param count = 20000
  param rate = 10000
  output name = "events", type = "Event"
}
operator name = "low", type = "filter" {
  input name = "events"
  param condition = "value < 42"
  param pipeline = "split"
  output name = "low", type = "Event"
}
operator name = "doubled", type = "map" {
  input name = "low"
  param columns = "ts, sensor, value * 2 AS value"
  param pipeline = "split"
  output name = "doubled"
}
operator name = "out", type = "writer" {
  input name = "doubled"
  param path = "${OUTPUT}"
}
"#;

fn fused() -> String {
    QUERY.replace("  param pipeline = \"split\"\n", "")
}

#[test]
fn a_split_pipeline_runs_each_stage_as_a_task_of_its_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("split.flow"), QUERY).expect("query");
    std::fs::write(dir.path().join("fused.flow"), fused()).expect("query");
    let run = |file: &str, out: &str| {
        let o = anduin(
            dir.path(),
            &[
                "run",
                file,
                "--var",
                &format!("OUTPUT={out}"),
                "--no-api",
                "--events",
                "-",
            ],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let split = run("split.flow", "split.csv");
    let fused_events = run("fused.flow", "fused.csv");
    let started = |events: &str| -> Vec<String> {
        let mut names: Vec<String> = events
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["event"] == "task_started")
            .filter_map(|v| v["name"].as_str().map(str::to_string))
            .collect();
        names.sort();
        names
    };
    assert_eq!(started(&split), ["doubled", "gen", "low", "out"]);
    assert_eq!(started(&fused_events), ["gen -> low -> doubled -> out"]);
    let rows = output_rows(&dir.path().join("split.csv"));
    assert!(rows.len() > 1000, "{}", rows.len());
    assert_eq!(rows, output_rows(&dir.path().join("fused.csv")));
}

#[test]
fn on_a_cluster_the_stages_of_a_split_pipeline_run_on_distinct_workers() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), QUERY).expect("query");
    std::fs::write(work.path().join("fused.flow"), fused()).expect("query");
    anduin_ok(
        work.path(),
        &[
            "run",
            "fused.flow",
            "--var",
            "OUTPUT=reference.csv",
            "--no-api",
        ],
    );
    let cluster = LocalCluster::start(2, 8);
    let submit = cluster.submit(work.path(), "q.flow", &["--var", "OUTPUT=out"]);
    wait_until("the query to be placed", || {
        cluster.status("q")["instances"]
            .as_object()
            .is_some_and(|i| !i.is_empty())
    });
    let instances = cluster.status("q")["instances"].clone();
    assert!(
        instances["low"].is_string() && instances["low"] != instances["doubled"],
        "the two stages on distinct workers: {instances}"
    );
    let out = submit.wait_output();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        cluster.logs()
    );
    assert_eq!(
        output_rows(&work.path().join("out")),
        output_rows(&work.path().join("reference.csv"))
    );
}
