//! Event time over Kafka partitions read at different paces: partition 0's records all come
//! before partition 1's (librdkafka fetches a partition at a time), so a watermark that
//! followed the largest event time read would make every row of partition 1 late. The
//! source keeps a watermark per partition and moves event time to their least: every
//! one-second window counts the rows of both partitions, none is late.

use crate::common;

use common::kafka::Cluster;
use common::{anduin, output_rows};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
}
operator name = "in", type = "kafka" {
  param topic = "events"
  param properties.bootstrap.servers = "${SERVERS}"
  param bounded = true
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "w", type = "window" {
  input name = "events"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param aggregates = "COUNT(*) AS n"
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "out.csv"
}
"#;

#[test]
fn a_kafka_source_keeps_a_watermark_per_partition_so_a_lagging_one_loses_no_row() {
    let cluster = Cluster::start();
    cluster.topic("events", 2);
    // Record i goes to partition i % 2: each partition holds ts 0, 10, 20, … ms, in order.
    let input: Vec<String> = (0..8000u64)
        .map(|i| format!("{},{}", 1_700_000_000_000 + (i / 2) * 10, i % 2))
        .collect();
    cluster.produce("events", 2, &input);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let servers = format!("SERVERS={}", cluster.servers());
    let out = anduin(
        dir.path(),
        &["run", "q.flow", "--var", &servers, "--batch-size", "100"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("late_rows 0"), "no row is late: {stderr}");
    let rows = output_rows(&dir.path().join("out.csv"));
    assert_eq!(rows.len(), 40, "{rows:?}");
    assert!(rows.iter().all(|r| r.ends_with(",200")), "{rows:?}");
}
