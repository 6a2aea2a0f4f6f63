//! A Kafka source's checkpoint resumed at another parallelism (issue 19): a Kafka-to-Kafka
//! query whose source reads three partitions with two instances, killed with SIGKILL after a
//! seeded number of checkpoints, resumes with three instances or with one (each partition and
//! its offset dealt to the instance that reads it now), and leaves in its sink topic, read
//! with `read_committed`, exactly the rows of an uninterrupted run at parallelism 1. So does
//! one killed with five instances, two of which read nothing, and resumed with two, and one
//! whose `param parallelism` changes between runs (as `--parallelism` does).

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::kafka::Cluster;
use common::{anduin, anduin_ok, kill_after, Rng};

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
  ${PARAM}
  output name = "events", type = "Event"
}
operator name = "low", type = "filter" {
  input name = "events"
  param condition = "value < 50"
  output name = "low", type = "Event"
}
operator name = "out", type = "kafka" {
  input name = "low"
  param topic = "${OUT}"
  param properties.bootstrap.servers = "${SERVERS}"
  param key.fields = "sensor"
}
"#;

/// The run's arguments at `parallelism`: `--parallelism N` for "N", none for "pN" (the
/// query's `param parallelism` then says N; see [`query`]).
fn args<'a>(servers: &'a str, out: &'a str, parallelism: &'a str) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "q.flow",
        "--var",
        servers,
        "--var",
        out,
        "--checkpoint-dir",
        "ckpt",
        "--checkpoint-every",
        "400",
        "--batch-size",
        "100",
    ];
    if !parallelism.starts_with('p') {
        args.extend(["--parallelism", parallelism]);
    }
    args
}

/// Writes the query for `parallelism`: with `param parallelism = N` for "pN".
fn query(dir: &Path, parallelism: &str) {
    let param = match parallelism.strip_prefix('p') {
        Some(n) => format!("param parallelism = {n}"),
        None => String::new(),
    };
    std::fs::write(dir.join("q.flow"), QUERY.replace("${PARAM}", &param)).expect("query");
}

fn start(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(args)
        .args(["--events", "-"])
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts")
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn a_kafka_source_killed_at_one_parallelism_resumes_at_another_to_the_uninterrupted_output() {
    let cluster = Cluster::start();
    cluster.topic("events", 3);
    cluster.topic("reference", 1);
    let input: Vec<String> = (0..30_000u64)
        .map(|i| format!("{i},{},{}", i % 7, (i * 53) % 100))
        .collect();
    cluster.produce("events", 3, &input);
    let servers = format!("SERVERS={}", cluster.servers());

    let reference = tempfile::tempdir().expect("tempdir");
    query(reference.path(), "1");
    let out = anduin(reference.path(), &args(&servers, "OUT=reference", "1"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = sorted(cluster.read_committed("reference"));
    assert!(expected.len() > 10_000, "the query writes enough rows");

    // The source runs as many instances as asked; the sink as one.
    let plan = anduin_ok(
        reference.path(),
        &[
            "explain",
            "q.flow",
            "--var",
            &servers,
            "--var",
            "OUT=x",
            "--parallelism",
            "2",
        ],
    );
    let plan = String::from_utf8_lossy(&plan.stdout);
    assert!(plan.contains("in (2 instances)"), "{plan}");
    assert!(!plan.contains("out (2 instances)"), "{plan}");

    // Killed at the first parallelism (then at the next), and on to the end at the last; "pN"
    // is `param parallelism = N`, "N" `--parallelism N`.
    let scenarios: [(&str, &[&str], &str, u64); 5] = [
        ("out_a", &["2"], "3", 41),
        ("out_b", &["2"], "1", 42),
        ("out_c", &["2", "3"], "1", 43),
        ("out_d", &["5"], "2", 44),
        ("out_e", &["p2", "3"], "p1", 45),
    ];
    for (topic, killed_at, last, seed) in scenarios {
        cluster.topic(topic, 1);
        let dir = tempfile::tempdir().expect("tempdir");
        let out_var = format!("OUT={topic}");
        let mut rng = Rng(seed);
        for (round, p) in killed_at.iter().enumerate() {
            // The first kill after the first checkpoint, which every run reaches.
            let after = if round == 0 { 1 } else { 1 + rng.next(3) };
            let delay_ms = rng.next(60);
            query(dir.path(), p);
            assert!(
                kill_after(
                    start(dir.path(), &args(&servers, &out_var, p)),
                    after,
                    delay_ms
                ),
                "seed {seed}: the run at parallelism {p} ended (or was refused) before it was killed"
            );
        }
        query(dir.path(), last);
        let out = anduin(dir.path(), &args(&servers, &out_var, last));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "seed {seed}: {stderr}");
        let got = sorted(cluster.read_committed(topic));
        let what = format!("seed {seed}, killed at {killed_at:?}, ended at {last}");
        assert_eq!(got.len(), expected.len(), "{what}: rows lost or twice");
        assert!(
            got == expected,
            "{what}: other rows than the uninterrupted run's"
        );
    }
}
