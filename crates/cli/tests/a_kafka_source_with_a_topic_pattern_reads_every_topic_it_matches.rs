//! A Kafka source with `topic-pattern` (issue 19, Flink's option) reads every topic whose
//! whole name the pattern matches when it starts, and no other; alone or in parallel it
//! reads what `topic` listing those topics reads. A pattern that matches no topic fails the
//! start naming it; `topic` and `topic-pattern` together are refused by `anduin check`.

use crate::common;

use common::kafka::Cluster;
use common::{anduin, anduin_ok, output_rows};

const QUERY: &str = r#"
type name = "Event" {
  column name = "id", type = "int"
  column name = "topic", type = "string"
}
operator name = "in", type = "kafka" {
  ${TOPICS}
  param properties.bootstrap.servers = "${SERVERS}"
  param bounded = true
  output name = "events", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "events"
  param path = "out.csv"
}
"#;

/// `n` records of `topic`: `i,topic`.
fn records(topic: &str, n: u64) -> Vec<String> {
    (0..n).map(|i| format!("{i},{topic}")).collect()
}

fn write_query(dir: &std::path::Path, topics: &str) {
    std::fs::write(dir.join("q.flow"), QUERY.replace("${TOPICS}", topics)).expect("query");
}

#[test]
fn a_kafka_source_with_a_topic_pattern_reads_every_topic_it_matches() {
    let cluster = Cluster::start();
    let mut expected = Vec::new();
    for (topic, partitions, n) in [
        ("events-eu", 2, 300),
        ("events-us", 1, 200),
        ("events", 1, 50),
        ("audit-events-eu", 1, 70),
    ] {
        cluster.topic(topic, partitions);
        let values = records(topic, n);
        cluster.produce(topic, partitions, &values);
        if topic.starts_with("events-") {
            expected.extend(values);
        }
    }
    expected.sort();
    let servers = format!("SERVERS={}", cluster.servers());
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();

    for (topics, extra) in [
        (r#"param topic-pattern = "events-.*""#, &[][..]),
        (
            r#"param topic-pattern = "events-.*""#,
            &["--parallelism", "2"][..],
        ),
        (r#"param topic = "events-us, events-eu""#, &[][..]),
    ] {
        write_query(d, topics);
        let mut args = vec!["run", "q.flow", "-q", "--var", &servers];
        args.extend_from_slice(extra);
        anduin_ok(d, &args);
        assert_eq!(
            output_rows(&d.join("out.csv")),
            expected,
            "{topics} {extra:?}: the rows of events-eu and events-us, of no other topic"
        );
    }

    write_query(d, r#"param topic-pattern = "evnets-.*""#);
    let out = anduin(d, &["run", "q.flow", "-q", "--var", &servers]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no topic on the Kafka cluster at")
            && stderr.contains("matches `topic-pattern` `evnets-.*`"),
        "{stderr}"
    );

    for (topics, says) in [
        (
            "param topic = \"events-eu\"\n  param topic-pattern = \"events-.*\"",
            "not both",
        ),
        ("", "a source needs `topic`"),
        (
            r#"param topic-pattern = "events-(""#,
            "not a regular expression",
        ),
    ] {
        write_query(d, topics);
        let out = anduin(d, &["check", "q.flow", "--var", &servers]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{topics}: {stderr}");
        assert!(stderr.contains(says), "{topics}: {stderr}");
    }
}
