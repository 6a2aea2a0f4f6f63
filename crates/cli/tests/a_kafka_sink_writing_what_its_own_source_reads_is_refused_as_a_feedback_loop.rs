//! Issue 19: a Kafka sink that writes a topic its own query's Kafka source reads (named in its
//! `topic` list or matched by its `topic-pattern`, on a broker both name) makes the query read
//! its own output again and write it again, without end, as a NATS sink publishing what its
//! source reads does. Such a query is refused before it runs, naming both operators, what they
//! share and what to do; a sink writing another topic, or on another cluster, is not.

use crate::common;

use common::anduin;

fn query(source_servers: &str, source_topics: &str, sink_topic: &str) -> String {
    format!(
        r#"
type name = "Event" {{
  column name = "ts", type = "timestamp"
  column name = "value", type = "int"
}}
operator name = "in", type = "kafka" {{
  param properties.bootstrap.servers = "{source_servers}"
  {source_topics}
  output name = "events", type = "Event"
}}
operator name = "low", type = "filter" {{
  input name = "events"
  param condition = "value < 50"
  output name = "kept", type = "Event"
}}
operator name = "out", type = "kafka" {{
  input name = "kept"
  param properties.bootstrap.servers = "127.0.0.1:9092"
  param topic = "{sink_topic}"
}}
"#
    )
}

fn check(query: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), query).expect("query");
    let out = anduin(dir.path(), &["check", "q.flow"]);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_kafka_sink_writing_what_its_own_source_reads_is_refused_as_a_feedback_loop() {
    for (servers, topics, param) in [
        ("127.0.0.1:9092", r#"param topic = "events""#, "topic"),
        ("localhost", r#"param topic = "audit, events""#, "topic"),
        (
            "10.1.2.3:9092,127.0.0.1:9092",
            r#"param topic-pattern = "ev.*""#,
            "topic-pattern",
        ),
    ] {
        let (code, stderr) = check(&query(servers, topics, "events"));
        assert_eq!(code, Some(1), "{servers} {topics}: {stderr}");
        for part in [
            r#"operator "out" (kafka) writes to topic `events` of the Kafka cluster at 127.0.0.1:9092, which source "in" (kafka) at 6:1 reads"#,
            "(a feedback loop)",
            &format!("Write to another topic, or leave `events` out of the source's `{param}`"),
        ] {
            assert!(stderr.contains(part), "{part} not in {stderr}");
        }
    }
    for (servers, topics, sink_topic) in [
        ("127.0.0.1:9092", r#"param topic = "events""#, "low"),
        ("127.0.0.1:9092", r#"param topic-pattern = "ev""#, "events"),
        ("10.1.2.3:9092", r#"param topic = "events""#, "events"),
    ] {
        let (code, stderr) = check(&query(servers, topics, sink_topic));
        assert_eq!(code, Some(0), "{servers} {topics} {sink_topic}: {stderr}");
    }
}
