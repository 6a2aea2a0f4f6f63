//! probe41 M3: a Kafka record longer than 1 MiB went to the dead letters with a reason that
//! named param `max_record_bytes`, which the `kafka` operator refused as unknown: such values
//! could not be read at all. Now a Kafka (and NATS) source takes `max_record_bytes`, as a
//! file reader does.

use crate::common;

use common::anduin;
use common::kafka::Cluster;

fn query(max: &str) -> String {
    format!(
        r#"
type name = "Line" {{
  column name = "ts", type = "timestamp"
  column name = "note", type = "string"
}}
operator name = "in", type = "kafka" {{
  param topic = "lines"
  param properties.bootstrap.servers = "${{SERVERS}}"
  param format = "csv"
  param bounded = true
  param max_record_bytes = "{max}"
  output name = "lines", type = "Line"
}}
operator name = "out", type = "writer" {{
  input name = "lines"
  param path = "out.csv"
}}
"#
    )
}

#[test]
fn a_kafka_source_bounds_its_records_by_max_record_bytes() {
    let cluster = Cluster::start();
    cluster.topic("lines", 1);
    let long = format!("2,{}", "x".repeat(100_000));
    cluster.produce(
        "lines",
        1,
        &["1,short".to_string(), long, "3,short".to_string()],
    );
    let servers = format!("SERVERS={}", cluster.servers());
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();

    // Bounded at 64 KiB, the 100 KB record is a dead letter, named by its offset.
    std::fs::write(d.join("q.flow"), query("64KB")).expect("query");
    let out = anduin(d, &["run", "q.flow", "--no-api", "--var", &servers]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let written = std::fs::read_to_string(d.join("out.csv")).expect("out.csv");
    assert_eq!(
        written.lines().count(),
        3,
        "a header and two rows: {written}"
    );
    let rejected = std::fs::read_to_string(d.join("out.csv.rejected")).expect("dead letters");
    let shown = &rejected[..rejected.len().min(600)];
    assert!(rejected.contains("longer than 64 KiB"), "{shown}");
    assert!(
        rejected.contains("lines/0@1"),
        "the dead letter names its record: {shown}"
    );

    // Bounded at 1 MiB, it is read.
    std::fs::remove_file(d.join("out.csv")).expect("removed");
    std::fs::remove_file(d.join("out.csv.rejected")).expect("removed");
    std::fs::write(d.join("q.flow"), query("1MB")).expect("query");
    let out = anduin(d, &["run", "q.flow", "--no-api", "--var", &servers]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let written = std::fs::read_to_string(d.join("out.csv")).expect("out.csv");
    assert_eq!(written.lines().count(), 4, "a header and three rows");
}
