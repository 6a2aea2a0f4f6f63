//! probe41 M1: a row larger than a Kafka record may be (the producer's `message.max.bytes`)
//! was found only when the transaction of its checkpoint was committed: the run failed with
//! librdkafka's `MessageSizeTooLarge`, naming no row, and so did every run resumed from that
//! checkpoint, which held the row. Now the sink refuses the row when it comes, naming it,
//! before a checkpoint holds it; an at-least-once sink too.

use crate::common;

use common::anduin;
use common::kafka::Cluster;

const QUERY: &str = r#"
type name = "Row" {
  column name = "id", type = "int"
  column name = "text", type = "string"
}
operator name = "in", type = "reader" {
  param path = "in.csv"
  param format = "csv"
  output name = "rows", type = "Row"
}
operator name = "out", type = "kafka" {
  input name = "rows"
  param topic = "out"
  param properties.bootstrap.servers = "${SERVERS}"
  param format = "csv"
  DELIVERY
}
"#;

/// Runs the query (with `delivery`, and `flags`) twice over 20 small rows and one of a
/// million bytes; checks that both runs fail naming the large row.
fn both_runs_name_the_row(delivery: &str, flags: &[&str]) {
    let cluster = Cluster::start();
    cluster.topic("out", 1);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("q.flow"),
        QUERY.replace("DELIVERY", delivery),
    )
    .expect("q");
    let mut input = String::from("id,text\n");
    for i in 0..10 {
        input.push_str(&format!("{i},small\n"));
    }
    input.push_str(&format!("777,{}\n", "x".repeat(1_000_000)));
    for i in 11..21 {
        input.push_str(&format!("{i},small\n"));
    }
    std::fs::write(dir.path().join("in.csv"), input).expect("input");
    let servers = format!("SERVERS={}", cluster.servers());
    let mut args = vec!["run", "q.flow", "--no-api", "-q", "--var", &servers];
    args.extend_from_slice(flags);
    for run in ["the first run", "a run again"] {
        let out = anduin(dir.path(), &args);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{run}: {said}");
        assert!(
            said.contains(r#"the row that begins "777,xxxx"#),
            "{run} names the row: {said}"
        );
        assert!(said.contains("(1000004 bytes encoded)"), "{run}: {said}");
        assert!(
            said.contains("more than the producer's `message.max.bytes` of 1000000 bytes"),
            "{run}: {said}"
        );
        assert!(said.contains(r#"operator "out""#), "{run}: {said}");
    }
}

#[test]
fn an_exactly_once_sink_refuses_the_row_when_it_comes() {
    both_runs_name_the_row("", &["--checkpoint-dir", "ckpt", "--checkpoint-every", "5"]);
}

#[test]
fn an_at_least_once_sink_refuses_it_too() {
    both_runs_name_the_row(r#"param sink.delivery-guarantee = "at-least-once""#, &[]);
}
