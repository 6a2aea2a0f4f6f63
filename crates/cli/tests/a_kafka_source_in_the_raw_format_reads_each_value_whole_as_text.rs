//! A Kafka source with `format = 'raw'` (issue 19, Flink's raw format with a `STRING` column)
//! reads each record's value whole, as it was written (commas, quotes and line breaks kept),
//! into its one `string` column, beside the record timestamp with `metadata.timestamp`; a
//! `raw` source of any other columns, and a `raw` sink, are refused by `anduin check`.

use crate::common;

use common::kafka::Cluster;
use common::{anduin, anduin_ok};

const QUERY: &str = r#"
type name = "Line" {
  column name = "value", type = "string"
  column name = "ts", type = "timestamp"
}
operator name = "in", type = "kafka" {
  param topic = "lines"
  param properties.bootstrap.servers = "${SERVERS}"
  param format = "raw"
  param metadata.timestamp = "ts"
  param bounded = true
  output name = "lines", type = "Line"
}
operator name = "out", type = "writer" {
  input name = "lines"
  param path = "out.jsonl"
  param format = "jsonl"
}
"#;

#[test]
fn a_kafka_source_in_the_raw_format_reads_each_value_whole_as_text() {
    let cluster = Cluster::start();
    cluster.topic("lines", 1);
    let values: Vec<String> = [
        "plain",
        "a,b,c",
        "\"quoted\", and more",
        "two\nlines\n",
        " padded ",
        "{\"json\": 1}",
    ]
    .iter()
    .map(|v| v.to_string())
    .collect();
    cluster.produce_at("lines", 1, &values, |i| {
        Some(1_700_000_000_000 + i64::try_from(i).expect("small"))
    });
    let servers = format!("SERVERS={}", cluster.servers());
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("q.flow"), QUERY).expect("query");
    anduin_ok(d, &["run", "q.flow", "-q", "--var", &servers]);
    let written = std::fs::read_to_string(d.join("out.jsonl")).expect("out.jsonl");
    let rows: Vec<(String, i64)> = written
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON object");
            (
                v["value"].as_str().expect("text").to_string(),
                v["ts"].as_i64().expect("epoch ms"),
            )
        })
        .collect();
    let expected: Vec<(String, i64)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            (
                v.clone(),
                1_700_000_000_000 + i64::try_from(i).expect("small"),
            )
        })
        .collect();
    assert_eq!(
        rows, expected,
        "each value whole, in order, with its timestamp"
    );

    for (query, says) in [
        (
            QUERY.replace(
                "column name = \"ts\", type = \"timestamp\"",
                "column name = \"ts\", type = \"timestamp\"\n  column name = \"more\", type = \"string\"",
            ),
            "format `raw` reads each value whole into one `string` column",
        ),
        (
            QUERY.replace("column name = \"value\", type = \"string\"", "column name = \"value\", type = \"int\""),
            "the output has `value`",
        ),
        (
            QUERY.replace(
                "param path = \"out.jsonl\"\n  param format = \"jsonl\"",
                "param path = \"out.jsonl\"\n  param format = \"jsonl\"\n}\noperator name = \"back\", type = \"kafka\" {\n  input name = \"lines\"\n  param topic = \"copy\"\n  param properties.bootstrap.servers = \"${SERVERS}\"\n  param format = \"raw\"",
            ),
            "format `raw` is read by a source only",
        ),
    ] {
        std::fs::write(d.join("q.flow"), &query).expect("query");
        let out = anduin(d, &["check", "q.flow", "--var", &servers]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{says}: {stderr}");
        assert!(stderr.contains(says), "{says}: {stderr}");
    }
}
