//! The Kafka record timestamp as a column (`metadata.timestamp`) and as event time, and a
//! start at the end of each partition (`latest-offset`, after which a bounded source reads
//! nothing). (A start at a timestamp is not tested here: the mock cluster does not look
//! offsets up by time.)

use crate::common;

use common::kafka::Cluster;
use common::{anduin, output_rows};

fn query(startup: &str) -> String {
    format!(
        r#"
type name = "Reading" {{
  column name = "sensor", type = "int"
  column name = "ts", type = "timestamp"
  column name = "value", type = "int"
}}
operator name = "in", type = "kafka" {{
  param topic = "readings"
  param properties.bootstrap.servers = "${{SERVERS}}"
  param bounded = true
  param metadata.timestamp = "ts"
  param event_time = "ts"
  {startup}
  output name = "readings", type = "Reading"
}}
operator name = "w", type = "window" {{
  input name = "readings"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param aggregates = "COUNT(*) AS n, SUM(value) AS total"
  output name = "counts"
}}
operator name = "out", type = "writer" {{
  input name = "counts"
  param path = "out.csv"
}}
"#
    )
}

/// Runs `q` on `cluster`; the window rows written.
fn run(cluster: &Cluster, q: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), q).expect("query");
    let servers = format!("SERVERS={}", cluster.servers());
    let out = anduin(dir.path(), &["run", "q.flow", "--var", &servers]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    output_rows(&dir.path().join("out.csv"))
}

#[test]
fn a_kafka_source_takes_event_time_and_its_start_from_record_timestamps() {
    let cluster = Cluster::start();
    cluster.topic("readings", 2);
    // Values hold no time: "sensor,value". Record i is stamped 1 700 000 000 000 + 100 i ms:
    // ten records a second, over 3 seconds.
    let values: Vec<String> = (0..30).map(|i| format!("{},{}", i % 2, i)).collect();
    cluster.produce_at("readings", 2, &values, |i| {
        Some(1_700_000_000_000 + 100 * i64::try_from(i).expect("small"))
    });

    let all = run(&cluster, &query(""));
    assert_eq!(
        all,
        [
            "1700000000000,1700000001000,10,45",
            "1700000001000,1700000002000,10,145",
            "1700000002000,1700000003000,10,245",
        ],
        "windows by record timestamp"
    );

    let latest = run(
        &cluster,
        &query("param scan.startup.mode = \"latest-offset\""),
    );
    assert!(latest.is_empty(), "{latest:?}");
}
