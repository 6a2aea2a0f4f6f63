//! Exactly once from Kafka to Kafka: a query reading a topic of the mock cluster (held by the
//! test process, outside the runs it kills), filtering and writing another topic, killed
//! with SIGKILL at seeded moments and resumed from its checkpoints, leaves in its sink topic,
//! read with `isolation.level = read_committed`, exactly the rows of an uninterrupted run:
//! none lost, none twice, whether the kill came before, during or after a transaction.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::kafka::{filter_query, filter_rows, Cluster};
use common::{anduin, kill_after, Rng};

/// The filter query into `${OUT}`, its source bounded, its sink keyed by sensor.
fn query() -> String {
    filter_query(
        "param bounded = true",
        "${OUT}",
        r#"param key.fields = "sensor""#,
    )
}

fn args<'a>(servers: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
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
    args.extend_from_slice(extra);
    args
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
fn a_killed_kafka_to_kafka_run_resumes_to_the_committed_rows_of_an_uninterrupted_one() {
    scenario(&[31, 32, 33], &[]);
}

/// The sink a task of its own: its end waits for the last commit in the operator task's
/// loop, not the source's.
#[test]
fn a_killed_kafka_to_kafka_run_without_chaining_resumes_to_the_committed_rows_of_an_uninterrupted_one(
) {
    scenario(&[34], &["--no-chaining"]);
}

fn scenario(seeds: &[u64], extra: &[&str]) {
    for &seed in seeds {
        let cluster = Cluster::start();
        cluster.topic("events", 3);
        cluster.topic("reference", 2);
        cluster.topic("out", 2);
        let (input, _) = filter_rows(30_000);
        cluster.produce("events", 3, &input);
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("q.flow"), query()).expect("query");
        let servers = format!("SERVERS={}", cluster.servers());

        // The reference: an uninterrupted run with checkpoints, into its own topic.
        let reference = tempfile::tempdir().expect("tempdir");
        std::fs::write(reference.path().join("q.flow"), query()).expect("query");
        let out = anduin(reference.path(), &args(&servers, "OUT=reference", extra));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let expected = sorted(cluster.read_committed("reference"));
        let filtered: Vec<String> = input
            .iter()
            .filter(|r| r.rsplit(',').next().and_then(|v| v.parse::<u32>().ok()) < Some(50))
            .cloned()
            .collect();
        assert_eq!(
            expected.len(),
            filtered.len(),
            "the uninterrupted run commits every row, the last checkpoint's too"
        );
        assert!(
            expected == sorted(filtered),
            "the uninterrupted run writes the filtered rows"
        );
        assert!(expected.len() > 10_000, "the query writes enough rows");

        let mut rng = Rng(seed);
        let kills = 2 + rng.next(3);
        let mut killed = 0;
        for round in 0..kills {
            let drawn = 1 + rng.next(6);
            // The first kill after the first checkpoint, which every run reaches: a later count may
            // outlast what is left of the input (on a fast machine, the whole run).
            let after = if round == 0 { 1 } else { drawn };
            let delay_ms = rng.next(60);
            if kill_after(
                start(dir.path(), &args(&servers, "OUT=out", extra)),
                after,
                delay_ms,
            ) {
                killed += 1;
            }
        }
        assert!(killed >= 1, "seed {seed}: the run was never killed mid-way");
        let out = anduin(dir.path(), &args(&servers, "OUT=out", extra));
        assert_eq!(
            out.status.code(),
            Some(0),
            "seed {seed}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = sorted(cluster.read_committed("out"));
        assert_eq!(
            got.len(),
            expected.len(),
            "seed {seed} ({killed} kills): rows lost or duplicated"
        );
        assert!(
            got == expected,
            "seed {seed}: other rows than the uninterrupted run's"
        );
    }
}
