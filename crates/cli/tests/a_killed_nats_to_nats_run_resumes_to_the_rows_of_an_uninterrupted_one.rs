//! Exactly once from NATS JetStream to JetStream: a query reading a stream of a
//! `nats-server` (held by the test process, outside the runs it kills), filtering and
//! publishing to another stream, killed with SIGKILL at seeded moments and resumed from its
//! checkpoints, leaves in its output stream exactly the rows of an uninterrupted run, in the
//! same order: none lost, none twice. The rows a killed run published after its last
//! checkpoint are published again by the resumed run with the same message ids, and the
//! stream drops them (its duplicate window, 2 minutes, outlasts the test).
//!
//! Also through a window with hundreds of keys per window: a window restored from a
//! checkpoint emits its keys in the order an uninterrupted one does (the order of their
//! values), so the rows it writes again get the ids they had.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::nats::NatsServer;
use common::{anduin, kill_after, Rng};

/// The source every query here reads (operators of the query follow it).
const SOURCE: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "in", type = "nats" {
  param server = "${SERVER}"
  param stream = "EVENTS"
  param format = "csv"
  param bounded = true
  output name = "events", type = "Event"
}
"#;

/// The sink every query here writes, reading the stream `rows` the query makes.
const SINK: &str = r#"
operator name = "out", type = "nats" {
  input name = "rows"
  param server = "${SERVER}"
  param stream = "${OUT}"
  param subject = "${OUT}.rows"
  param format = "csv"
}
"#;

/// Keeps the rows whose value is below 50.
const FILTER: &str = r#"
operator name = "low", type = "filter" {
  input name = "events"
  param condition = "value < 50"
  output name = "rows", type = "Event"
}
"#;

/// Counts per 1 s window and (sensor, value): 700 keys in each of 30 windows.
const WINDOW: &str = r#"
operator name = "counts", type = "window" {
  input name = "events"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param keys = "sensor, value"
  param aggregates = "COUNT(*) AS n"
  output name = "counts"
}
operator name = "rows", type = "map" {
  input name = "counts"
  param columns = "CAST(window_start AS BIGINT) AS w, sensor, value, n"
  output name = "rows"
}
"#;

/// The input rows whose value is below 50, in order.
fn filtered(input: &[String]) -> Vec<String> {
    input
        .iter()
        .filter(|r| r.rsplit(',').next().and_then(|v| v.parse::<u32>().ok()) < Some(50))
        .cloned()
        .collect()
}

/// The counts per 1 s window and (sensor, value) of the input rows, in order of the keys.
fn counted(input: &[String]) -> Vec<String> {
    let mut counts = std::collections::BTreeMap::new();
    for row in input {
        let f: Vec<i64> = row.split(',').map(|v| v.parse().expect("an int")).collect();
        *counts
            .entry((f[0] / 1000 * 1000, f[1], f[2]))
            .or_insert(0u64) += 1;
    }
    counts
        .into_iter()
        .map(|((w, s, v), n)| format!("{w},{s},{v},{n}"))
        .collect()
}

fn args<'a>(server: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "q.flow",
        "--var",
        server,
        "--var",
        out,
        "--checkpoint-dir",
        "ckpt",
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

/// A checkpoint every 400 rows.
const EVERY_400: &[&str] = &["--checkpoint-every", "400"];

#[test]
fn a_killed_nats_to_nats_run_resumes_to_the_rows_of_an_uninterrupted_one() {
    scenario(FILTER, filtered, &[41, 42, 43], EVERY_400);
}

/// Killed while a window writes its hundreds of rows, or after: the resumed run's windows
/// (restored ones among them) write their rows in the uninterrupted run's order.
#[test]
fn a_killed_nats_to_nats_run_through_a_window_resumes_to_the_rows_of_an_uninterrupted_one() {
    scenario(
        WINDOW,
        counted,
        &[47, 48, 49],
        &["--checkpoint-every", "2500"],
    );
}

/// The sink a task of its own: its acknowledgements are awaited in the operator task's
/// checkpoints, not the source's.
#[test]
fn a_killed_nats_to_nats_run_without_chaining_resumes_to_the_rows_of_an_uninterrupted_one() {
    scenario(
        FILTER,
        filtered,
        &[44],
        &["--checkpoint-every", "400", "--no-chaining"],
    );
}

/// Checkpoints on a timer: the barriers of a resumed run fall between other rows than the
/// killed run's, so a row's id cannot be its checkpoint epoch and its index in it.
#[test]
fn a_killed_nats_to_nats_run_checkpointing_on_a_timer_resumes_to_the_rows_of_an_uninterrupted_one()
{
    scenario(
        FILTER,
        filtered,
        &[45, 46],
        &["--checkpoint-interval", "50ms"],
    );
}

/// Runs the query of operators `ops` (between [`SOURCE`] and [`SINK`]) uninterrupted, checks it wrote `naive`'s rows (in the same order, or, where
/// the query orders them itself, as many of each), then kills a run of it at moments drawn
/// from each seed and resumes it, and checks it wrote the uninterrupted run's rows in order.
fn scenario(ops: &str, naive: fn(&[String]) -> Vec<String>, seeds: &[u64], extra: &[&str]) {
    let query = format!("{SOURCE}{ops}{SINK}");
    let window = Duration::from_secs(120);
    for &seed in seeds {
        let server = NatsServer::start();
        server.stream("EVENTS", &["events"], window);
        server.stream("REFERENCE", &["REFERENCE.rows"], window);
        server.stream("OUT", &["OUT.rows"], window);
        let input: Vec<String> = (0..30_000u64)
            .map(|i| format!("{},{},{}", 1_700_000_000_000 + i, i % 7, (i * 53) % 100))
            .collect();
        server.publish("events", &input);
        let var = format!("SERVER={}", server.url);

        // The reference: an uninterrupted run with checkpoints, into its own stream.
        let reference = tempfile::tempdir().expect("tempdir");
        std::fs::write(reference.path().join("q.flow"), &query).expect("query");
        let out = anduin(reference.path(), &args(&var, "OUT=REFERENCE", extra));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let expected = server.read("REFERENCE");
        let naive = naive(&input);
        let mut sorted = expected.clone();
        sorted.sort_unstable();
        let mut naive_sorted = naive.clone();
        naive_sorted.sort_unstable();
        assert!(
            sorted == naive_sorted,
            "the uninterrupted run writes the naive rows ({} of {})",
            expected.len(),
            naive.len()
        );
        if ops == FILTER {
            assert!(expected == naive, "a filter keeps the input's order");
        }
        assert!(expected.len() > 10_000, "the query writes enough rows");

        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("q.flow"), &query).expect("query");
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
                start(dir.path(), &args(&var, "OUT=OUT", extra)),
                after,
                delay_ms,
            ) {
                killed += 1;
            }
        }
        assert!(killed >= 1, "seed {seed}: the run was never killed mid-way");
        let out = anduin(dir.path(), &args(&var, "OUT=OUT", extra));
        assert_eq!(
            out.status.code(),
            Some(0),
            "seed {seed}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = server.read("OUT");
        assert_eq!(
            got.len(),
            expected.len(),
            "seed {seed} ({killed} kills): rows lost or duplicated"
        );
        assert!(
            got == expected,
            "seed {seed}: other rows than the uninterrupted run's, or in another order"
        );
    }
}
