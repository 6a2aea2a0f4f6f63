//! A `stream-selector` over two replicas of one filter (as the hot-standby rule builds it)
//! forwards one copy of their rows: the output equals that of the filter alone, row for row,
//! with the default batching and one row per batch.

use crate::common;

use common::{anduin_ok, repo};

const REPLICATED: &str = r#"
type name = "Reading" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "source", type = "reader" {
  param path = "data/readings.csv"
  output name = "readings", type = "Reading"
}
operator name = "low", type = "filter" {
  input name = "readings"
  param condition = "value < 42"
  output name = "low1"
}
operator name = "low_replica_1", type = "filter" {
  input name = "readings"
  param condition = "value < 42"
  output name = "low2"
}
operator name = "select", type = "stream-selector" {
  input name = "low1"
  input name = "low2"
  output name = "lows"
}
operator name = "sink", type = "writer" {
  input name = "lows"
  param path = "${OUTPUT}"
}
"#;

fn run(query: &str, batch: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let q = dir.path().join("q.flow");
    std::fs::write(&q, query).expect("query");
    let out = dir.path().join("out.csv");
    anduin_ok(
        &repo(),
        &[
            "run",
            q.to_str().expect("utf-8"),
            "--var",
            &format!("OUTPUT={}", out.display()),
            "--batch-size",
            batch,
        ],
    );
    std::fs::read_to_string(out).expect("output")
}

#[test]
fn the_output_is_one_copy_of_the_replicas_rows() {
    let alone = REPLICATED
        .replace("input name = \"lows\"", "input name = \"low1\"")
        .replace(
            "operator name = \"select\", type = \"stream-selector\" {\n  input name = \"low1\"\n  input name = \"low2\"\n  output name = \"lows\"\n}\n",
            "operator name = \"drop\", type = \"discard\" {\n  input name = \"low2\"\n}\n",
        );
    for batch in ["1", "1024"] {
        let expected = run(&alone, batch);
        assert!(expected.lines().count() > 2, "{expected}");
        assert_eq!(run(REPLICATED, batch), expected, "batch size {batch}");
    }
}
