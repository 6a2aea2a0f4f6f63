//! A Kafka source in parallel (issue 19): its topic's partitions are dealt over its instances
//! (`param parallelism`, `--parallelism`, or in SQL `'parallelism'`), and together they read
//! exactly the rows one instance reads, each partition in its order, also with more
//! instances than partitions; an instance without a partition never holds event time back.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::kafka::Cluster;
use common::{anduin_ok, output_rows, ChildGuard};

const PARTITIONS: i32 = 3;

const QUERY: &str = r#"
type name = "Event" {
  column name = "id", type = "int"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "in", type = "kafka" {
  param topic = "events"
  param properties.bootstrap.servers = "${SERVERS}"
  param bounded = true
  ${PARALLELISM}
  output name = "events", type = "Event"
}
operator name = "low", type = "filter" {
  input name = "events"
  param condition = "value < 70"
  output name = "low", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "low"
  param path = "out.csv"
}
"#;

/// Record `i` goes to partition `i % 3` (the cluster helper's rule).
fn events(n: u64) -> Vec<String> {
    (0..n)
        .map(|i| format!("{i},{},{}", i % 7, (i * 37) % 100))
        .collect()
}

/// The rows of `out.csv` in the order written, without the header.
fn written(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("out.csv"))
        .expect("out.csv")
        .lines()
        .skip(1)
        .map(str::to_string)
        .collect()
}

/// Fails unless the rows of each partition (`id % 3`) come in the order they were written.
fn in_order_per_partition(rows: &[String], what: &str) {
    let mut last = [None::<u64>; PARTITIONS as usize];
    for r in rows {
        let id: u64 = r
            .split(',')
            .next()
            .and_then(|v| v.parse().ok())
            .expect("an id");
        let p = (id % PARTITIONS as u64) as usize;
        assert!(
            last[p].is_none_or(|l| l < id),
            "{what}: row {id} of partition {p} after row {:?}",
            last[p]
        );
        last[p] = Some(id);
    }
}

#[test]
fn a_kafka_source_split_over_instances_reads_what_one_instance_reads() {
    let cluster = Cluster::start();
    cluster.topic("events", PARTITIONS);
    let input = events(6000);
    cluster.produce("events", PARTITIONS, &input);
    let servers = format!("SERVERS={}", cluster.servers());
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let query = |parallelism_param: &str| {
        std::fs::write(
            d.join("q.flow"),
            QUERY.replace("${PARALLELISM}", parallelism_param),
        )
        .expect("query");
    };
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "q.flow",
            "-q",
            "--var",
            &servers,
            "--batch-size",
            "64",
        ];
        args.extend_from_slice(extra);
        anduin_ok(d, &args);
        written(d)
    };

    query("");
    let one = run(&[]);
    let mut expected: Vec<String> = input
        .iter()
        .filter(|r| r.rsplit(',').next().and_then(|v| v.parse::<u32>().ok()) < Some(70))
        .cloned()
        .collect();
    expected.sort();
    let mut sorted_one = one.clone();
    sorted_one.sort();
    assert_eq!(sorted_one, expected, "one instance reads every partition");

    for (param, extra, instances) in [
        ("param parallelism = 2", &[][..], 2),
        ("", &["--parallelism", "3"][..], 3),
        ("param parallelism = \"5\"", &[][..], 5),
    ] {
        let what = format!("`{param}` {extra:?}");
        query(param);
        let mut explain = vec!["explain", "q.flow", "--var", &servers];
        explain.extend_from_slice(extra);
        let plan = anduin_ok(d, &explain);
        let plan = String::from_utf8_lossy(&plan.stdout);
        assert!(
            plan.contains(&format!("in ({instances} instances)")),
            "{what}: {plan}"
        );
        let got = run(extra);
        in_order_per_partition(&got, &what);
        let mut sorted_got = got;
        sorted_got.sort();
        assert_eq!(
            sorted_got.len(),
            expected.len(),
            "{what}: rows lost or twice"
        );
        assert!(
            sorted_got == sorted_one,
            "{what}: other rows than one instance's"
        );
    }
}

#[test]
fn a_kafka_table_given_a_parallelism_in_sql_is_read_by_that_many_instances() {
    let cluster = Cluster::start();
    cluster.topic("events", PARTITIONS);
    let input = events(900);
    cluster.produce("events", PARTITIONS, &input);
    let servers = cluster.servers();
    let sql = format!(
        "CREATE TABLE events (id BIGINT, sensor BIGINT, value BIGINT) WITH (connector = 'kafka', topic = 'events', 'properties.bootstrap.servers' = '{servers}', bounded = 'true', 'parallelism' = '2');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv');
INSERT INTO out SELECT * FROM events;"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.sql"), sql).expect("query");
    let plan = anduin_ok(dir.path(), &["explain", "q.sql"]);
    let plan = String::from_utf8_lossy(&plan.stdout);
    assert!(plan.contains("events (2 instances)"), "{plan}");
    anduin_ok(dir.path(), &["run", "q.sql", "-q"]);
    let got = written(dir.path());
    in_order_per_partition(&got, "SQL");
    let mut want = input;
    want.sort();
    assert_eq!(output_rows(&dir.path().join("out.csv")), want);
}

const WINDOWED: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
}
operator name = "in", type = "kafka" {
  param topic = "events"
  param properties.bootstrap.servers = "${SERVERS}"
  param event_time = "ts"
  param parallelism = 5
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
  param path = "-"
}
"#;

/// Unbounded, so that only the watermark can close a window while the query runs: five
/// instances over three partitions, two of them with nothing to read. The windows close as
/// the three partitions' event time passes them.
#[test]
fn an_instance_of_a_kafka_source_without_a_partition_never_holds_its_watermark_back() {
    let cluster = Cluster::start();
    cluster.topic("events", PARTITIONS);
    // Each partition: 100 records a second of event time over 4 s, then one at 10 s.
    let mut input: Vec<String> = (0..1200u64)
        .map(|i| format!("{},{}", 1_700_000_000_000 + (i / 3) * 10, i % 3))
        .collect();
    input.extend((0..3).map(|s| format!("{},{s}", 1_700_000_010_000u64)));
    cluster.produce("events", PARTITIONS, &input);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), WINDOWED).expect("query");
    let servers = format!("SERVERS={}", cluster.servers());
    let mut child = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["run", "q.flow", "-q", "--var", &servers])
            .current_dir(dir.path())
            .env_remove("RUST_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starts"),
    );
    let stdout = BufReader::new(child.0.stdout.take().expect("stdout"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut counts = Vec::new();
    while counts.len() < 4 {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) if line.starts_with(|c: char| c.is_ascii_digit()) => counts.push(line),
            Ok(_) => {}
            Err(e) => panic!(
                "the windows did not close while the query ran ({e}): an instance without a partition holds the watermark back; got {counts:?}"
            ),
        }
    }
    assert!(counts.iter().all(|r| r.ends_with(",300")), "{counts:?}");
}
