//! NATS JetStream to JetStream, against a `nats-server -js` the test starts: a bounded source
//! reads one subject of a stream of JSON payloads (the stream's last messages are of another
//! subject, so the source must see that nothing of its own is left), a filter keeps the low
//! ones, a sink publishes them to another stream; they arrive once each, in stream order.
//! The payloads that do not decode go to the dead letters, named by stream and sequence.
//! Written in `.flow` and in SQL.

use crate::common;

use std::time::Duration;

use common::nats::NatsServer;
use common::{anduin, dead_letters};

/// `n` events as JSON payloads; every 97th is not a number where one is expected.
fn events(n: u64) -> Vec<String> {
    (0..n)
        .map(|i| {
            let value = if i % 97 == 13 {
                "\"oops\"".to_string()
            } else {
                ((i * 37) % 100).to_string()
            };
            format!(
                "{{\"ts\":{},\"sensor\":{},\"value\":{value}}}",
                1_700_000_000_000u64 + i,
                i % 5
            )
        })
        .collect()
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
operator name = "in", type = "nats" {
  param server = "${SERVER}"
  param stream = "EVENTS"
  param subject = "events.a"
  param format = "json"
  param bounded = true
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "low", type = "filter" {
  input name = "events"
  param condition = "value < 50"
  output name = "low", type = "Event"
}
operator name = "out", type = "nats" {
  input name = "low"
  param server = "${SERVER}"
  param stream = "LOW"
  param subject = "low.out"
  param format = "json"
}
"#;

const WINDOW: Duration = Duration::from_secs(120);

#[test]
fn a_nats_stream_filtered_into_another_stream_holds_exactly_the_filtered_rows() {
    let server = NatsServer::start();
    server.stream("EVENTS", &["events.>"], WINDOW);
    server.stream("LOW", &["low.>"], WINDOW);
    let input = events(3000);
    // Sequences 1..=3000 on the subject read, then 10 on another.
    server.publish("events.a", &input);
    server.publish("events.b", &events(10));
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let var = format!("SERVER={}", server.url);
    let out = anduin(
        dir.path(),
        &[
            "run",
            "q.flow",
            "--var",
            &var,
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
    assert_eq!(server.read("LOW"), low(&input));

    let rejects = dead_letters(&dir.path().join("rejects.jsonl"));
    let bad = input.iter().filter(|v| v.contains("oops")).count();
    assert_eq!(rejects.len(), bad, "{rejects:?}");
    // Event 13 is the 14th message of the stream.
    assert!(
        rejects
            .iter()
            .any(|r| r["source"] == "EVENTS@14" && r["line"] == 14),
        "{rejects:?}"
    );
    assert!(rejects[0]["reason"]
        .as_str()
        .expect("reason")
        .contains("value"));
}

#[test]
fn a_nats_table_filtered_into_another_in_sql_holds_exactly_the_filtered_rows() {
    let server = NatsServer::start();
    server.stream("EVENTS", &["events"], WINDOW);
    server.stream("LOW", &["low"], WINDOW);
    let input: Vec<String> = events(500)
        .into_iter()
        .filter(|v| !v.contains("oops"))
        .collect();
    server.publish("events", &input);
    let url = &server.url;
    let sql = format!(
        "CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT) WITH (connector = 'nats', server = '{url}', stream = 'EVENTS', subject = 'events', format = 'json', bounded = 'true');
CREATE TABLE low WITH (connector = 'nats', server = '{url}', stream = 'LOW', subject = 'low', format = 'json');
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
    assert_eq!(server.read("LOW"), low(&input));
}
