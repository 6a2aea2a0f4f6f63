//! Kafka to Kafka, against librdkafka's mock cluster (held by the test process): a bounded
//! source reads three partitions of JSON values, a filter keeps the low ones, a sink writes
//! them to another topic; the records that do not decode go to the dead letters, named by
//! topic, partition and offset. Written in `.flow` and in SQL.

use crate::common;

use common::kafka::Cluster;
use common::{anduin, dead_letters};

/// `n` events as JSON values; every 97th is not a number where one is expected.
fn events(n: u64) -> Vec<String> {
    (0..n)
        .map(|i| {
            if i % 97 == 13 {
                format!(
                    "{{\"ts\":{},\"sensor\":{},\"value\":\"oops\"}}",
                    1_700_000_000_000u64 + i,
                    i % 5
                )
            } else {
                format!(
                    "{{\"ts\":{},\"sensor\":{},\"value\":{}}}",
                    1_700_000_000_000u64 + i,
                    i % 5,
                    (i * 37) % 100
                )
            }
        })
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn low(values: &[String]) -> Vec<String> {
    values
        .iter()
        .filter(|v| !v.contains("oops"))
        .filter(|v| {
            let value: serde_json::Value = serde_json::from_str(v).expect("json");
            value["value"].as_i64().expect("int") < 50
        })
        .cloned()
        .collect()
}

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "in", type = "kafka" {
  param topic = "events"
  param properties.bootstrap.servers = "${SERVERS}"
  param format = "json"
  param bounded = true
  output name = "events", type = "Event"
}
operator name = "low", type = "filter" {
  input name = "events"
  param condition = "value < 50"
  output name = "low", type = "Event"
}
operator name = "out", type = "kafka" {
  input name = "low"
  param topic = "low"
  param properties.bootstrap.servers = "${SERVERS}"
  param format = "json"
}
"#;

#[test]
fn a_kafka_topic_filtered_into_another_topic_holds_exactly_the_filtered_rows() {
    let cluster = Cluster::start();
    cluster.topic("events", 3);
    cluster.topic("low", 2);
    let input = events(3000);
    cluster.produce("events", 3, &input);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let servers = format!("SERVERS={}", cluster.servers());
    let out = anduin(
        dir.path(),
        &[
            "run",
            "q.flow",
            "--var",
            &servers,
            "--dead-letter",
            "rejects.jsonl",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = cluster.read_committed("low");
    assert_eq!(sorted(got), sorted(low(&input)));

    let rejects = dead_letters(&dir.path().join("rejects.jsonl"));
    let bad = input.iter().filter(|v| v.contains("oops")).count();
    assert_eq!(rejects.len(), bad, "{rejects:?}");
    // Value 13 went to partition 13 % 3 = 1, at offset 13 / 3 = 4.
    assert!(
        rejects
            .iter()
            .any(|r| r["source"] == "events/1@4" && r["line"] == 4),
        "{rejects:?}"
    );
    assert!(rejects[0]["reason"]
        .as_str()
        .expect("reason")
        .contains("value"));
}

#[test]
fn a_kafka_table_filtered_into_another_in_sql_holds_exactly_the_filtered_rows() {
    let cluster = Cluster::start();
    cluster.topic("events", 2);
    cluster.topic("low", 1);
    let input: Vec<String> = events(500)
        .into_iter()
        .filter(|v| !v.contains("oops"))
        .collect();
    cluster.produce("events", 2, &input);
    let servers = cluster.servers();
    let sql = format!(
        "CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT) WITH (connector = 'kafka', topic = 'events', 'properties.bootstrap.servers' = '{servers}', format = 'json', bounded = 'true', 'scan.startup.mode' = 'earliest-offset');
CREATE TABLE low WITH (connector = 'kafka', topic = 'low', 'properties.bootstrap.servers' = '{servers}', format = 'json', 'sink.delivery-guarantee' = 'at-least-once');
INSERT INTO low SELECT * FROM events WHERE value < 50;"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.sql"), sql).expect("query");
    let out = anduin(dir.path(), &["run", "q.sql"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = cluster.read_committed("low");
    assert_eq!(sorted(got), sorted(low(&input)));
}

#[test]
fn a_kafka_source_in_parallel_reads_each_partition_once() {
    let cluster = Cluster::start();
    cluster.topic("events", 5);
    cluster.topic("low", 2);
    let input: Vec<String> = events(2000)
        .into_iter()
        .filter(|v| !v.contains("oops"))
        .collect();
    cluster.produce("events", 5, &input);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let servers = format!("SERVERS={}", cluster.servers());
    let out = anduin(
        dir.path(),
        &["run", "q.flow", "--var", &servers, "--parallelism", "3"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = cluster.read_committed("low");
    assert_eq!(sorted(got), sorted(low(&input)));
}
