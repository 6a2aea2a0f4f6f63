//! Exactly-once end to end: a query killed with SIGKILL at seeded random moments and resumed
//! from its checkpoints writes exactly the rows an uninterrupted run writes, none lost and
//! none twice. Two queries: a stateless one reads a CSV file and a rate-limited generator (so
//! that it runs long enough to be killed mid-way), unions them (barrier alignment over two
//! inputs), filters, and writes part files; a windowed one aggregates the generator's rows per
//! key over sliding windows (open panes and sealed panes in every checkpoint); a joined one
//! pairs the rows of two generators by key and time (both sides' buffered rows, and which
//! left rows found a partner, in every checkpoint); a CEP one finds falling-then-rising runs
//! per sensor (rows kept for partial matches and the next match number in every checkpoint).

use crate::common;

use common::Rng;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::{anduin, kill_after, output_rows};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "file", type = "reader" {
  param path = "events.csv"
  output name = "fromFile", type = "Event"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 7
  param count = 60000
  param rate = 40000
  output name = "generated", type = "Event"
}
operator name = "both", type = "union" {
  input name = "fromFile"
  input name = "generated"
  output name = "all", type = "Event"
}
operator name = "low", type = "filter" {
  input name = "all"
  param condition = "value < 50"
  output name = "low", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "low"
  param path = "${OUTPUT}"
}
"#;

pub(crate) const WINDOWED: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 11
  param count = 60000
  param rate = 40000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "w", type = "window" {
  input name = "events"
  param kind = "sliding"
  param size = "200ms"
  param slide = "50ms"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, SUM(value) AS total, MAX(value) AS hi"
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "${OUTPUT}"
}
"#;

pub(crate) const JOINED: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "a", type = "generator" {
  param profile = "events"
  param seed = 11
  param count = 60000
  param rate = 40000
  param event_time = "ts"
  output name = "lefts", type = "Event"
}
operator name = "b", type = "generator" {
  param profile = "events"
  param seed = 12
  param count = 60000
  param rate = 40000
  param event_time = "ts"
  output name = "rights", type = "Event"
}
operator name = "j", type = "join" {
  input name = "lefts"
  input name = "rights"
  param kind = "interval"
  param how = "left"
  param on = "lefts.sensor = rights.sensor"
  param left_time = "ts"
  param right_time = "ts"
  param lower = "-1s"
  param upper = "1s"
  output name = "pairs"
}
operator name = "out", type = "writer" {
  input name = "pairs"
  param path = "${OUTPUT}"
}
"#;

pub(crate) const CEP: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 21
  param count = 60000
  param rate = 40000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "p", type = "pattern" {
  input name = "events"
  param partition_by = "sensor"
  param order_by = "ts"
  param pattern = "A B+ C+"
  param define = "B AS value < PREV(value), C AS value > PREV(value)"
  param measures = "MATCH_NUMBER() AS n, A.ts AS a_ts, LAST(C.ts) AS c_ts, COUNT(B.*) AS falls, MIN(B.value) AS low"
  param within = "1500ms"
  param after_match = "skip to next row"
  param rows_per_match = "all"
  output name = "runs"
}
operator name = "out", type = "writer" {
  input name = "runs"
  param path = "${OUTPUT}"
}
"#;

pub(crate) const EVENTS: &str = r#"
type name = "Event" {
  column name = "ts", type = "int"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 200000
  output name = "events", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "events"
  param path = "events.csv"
}
"#;

pub(crate) fn start(dir: &Path, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args([
            "run",
            "q.flow",
            "--var",
            "OUTPUT=out",
            "--checkpoint-dir",
            "ckpt",
            "--checkpoint-every",
            "5000",
            "--batch-size",
            "500",
        ])
        .args(extra)
        .current_dir(dir)
        .args(["--events", "-"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts")
}

#[test]
fn a_killed_run_resumes_to_the_output_of_an_uninterrupted_one() {
    scenario(QUERY, &[1, 2, 3, 4], &[]);
}

#[test]
fn a_killed_windowed_run_resumes_to_the_output_of_an_uninterrupted_one() {
    scenario(WINDOWED, &[5, 6, 7], &[]);
}

#[test]
fn a_killed_parallel_windowed_run_resumes_to_the_output_of_an_uninterrupted_one() {
    scenario(WINDOWED, &[8, 9], &["--parallelism", "3"]);
}

#[test]
fn a_killed_windowed_run_with_its_state_in_the_lsm_backend_resumes_to_the_output_of_an_uninterrupted_one(
) {
    scenario(WINDOWED, &[22], &["--state-backend", "lsm"]);
}

#[test]
fn a_killed_join_resumes_to_the_output_of_an_uninterrupted_one() {
    scenario(JOINED, &[13, 14], &[]);
}

#[test]
fn a_killed_parallel_join_resumes_to_the_output_of_an_uninterrupted_one() {
    scenario(JOINED, &[15], &["--parallelism", "2"]);
}

#[test]
fn a_killed_join_with_its_state_in_the_lsm_backend_resumes_to_the_output_of_an_uninterrupted_one() {
    scenario(JOINED, &[20], &["--state-backend", "lsm"]);
}

#[test]
fn a_killed_cep_query_resumes_to_the_output_of_an_uninterrupted_one() {
    scenario(CEP, &[16, 17], &[]);
}

#[test]
fn a_killed_cep_query_with_its_state_in_the_lsm_backend_resumes_to_the_output_of_an_uninterrupted_one(
) {
    scenario(CEP, &[19], &["--state-backend", "lsm"]);
}

#[test]
fn a_killed_parallel_cep_query_resumes_to_the_output_of_an_uninterrupted_one() {
    scenario(CEP, &[18], &["--parallelism", "2"]);
}

/// Every operator a task, spread over three workers in the process whose channels cross
/// loopback TCP: barriers, watermarks and the end cross the network.
const OVER_TCP: &[&str] = &[
    "--no-chaining",
    "--parallelism",
    "3",
    "--loopback-workers",
    "3",
];

#[test]
fn a_killed_run_with_its_channels_over_tcp_resumes_to_the_output_of_an_uninterrupted_one() {
    scenario(QUERY, &[23], OVER_TCP);
}

#[test]
fn a_killed_windowed_run_with_its_channels_over_tcp_resumes_to_the_output_of_an_uninterrupted_one()
{
    scenario(WINDOWED, &[24, 25], OVER_TCP);
}

#[test]
fn a_killed_join_with_its_channels_over_tcp_resumes_to_the_output_of_an_uninterrupted_one() {
    scenario(JOINED, &[26], OVER_TCP);
}

fn scenario(query: &str, seeds: &[u64], extra: &[&str]) {
    scenario_with(query, seeds, extra, 10_000);
}

/// [`scenario`] of a query whose uninterrupted run writes more than `min_rows` rows.
/// Runs `q.flow` in `dir` with `extra` flags to the end, resuming from the checkpoints in
/// `ckpt` (every 5000 rows, into `out`, as [`start`] takes them).
pub(crate) fn resumed_to_the_end(dir: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        "q.flow",
        "--var",
        "OUTPUT=out",
        "--checkpoint-dir",
        "ckpt",
        "--checkpoint-every",
        "5000",
    ];
    args.extend_from_slice(extra);
    anduin(dir, &args)
}

/// Starts `q.flow` in `dir` (as [`start`] does: checkpoints into `ckpt` every 5000 rows, into
/// `out`) and kills it with SIGKILL two or three times, each after a number of checkpoints and
/// a delay drawn from `seed` (the first after the first checkpoint); then runs it to the end
/// and asserts that it succeeded.
pub(crate) fn killed_then_finished(dir: &Path, seed: u64) {
    let mut rng = Rng(seed);
    let mut killed = 0;
    for round in 0..2 + rng.next(2) {
        let after = if round == 0 { 1 } else { 1 + rng.next(3) };
        if kill_after(start(dir, &[]), after, rng.next(150)) {
            killed += 1;
        }
    }
    assert!(killed >= 1, "seed {seed}: the run was never killed mid-way");
    let out = resumed_to_the_end(dir, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "seed {seed}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub(crate) fn scenario_with(query: &str, seeds: &[u64], extra: &[&str], min_rows: usize) {
    for &seed in seeds {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("events.flow"), EVENTS).expect("query");
        let out = anduin(dir.path(), &["run", "events.flow"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(dir.path().join("q.flow"), query).expect("query");

        // The reference: one run without checkpoints, into a single file.
        let out = anduin(
            dir.path(),
            &["run", "q.flow", "--var", "OUTPUT=reference.csv"],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let expected = output_rows(&dir.path().join("reference.csv"));
        assert!(expected.len() > min_rows, "the query produces enough rows");

        // Kill it two to four times, each time after a random number of checkpoints.
        let mut rng = Rng(seed);
        let kills = 2 + rng.next(3);
        let mut killed = 0;
        for round in 0..kills {
            let drawn = 1 + rng.next(4);
            // The first kill after the first checkpoint, which every run reaches: a later count may
            // outlast what is left of the input (on a fast machine, the whole run).
            let after = if round == 0 { 1 } else { drawn };
            let delay_ms = rng.next(150);
            if kill_after(start(dir.path(), extra), after, delay_ms) {
                killed += 1;
            }
        }
        assert!(killed >= 1, "seed {seed}: the run was never killed mid-way");
        let out = resumed_to_the_end(dir.path(), extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "seed {seed}: {stderr}");
        let got = output_rows(&dir.path().join("out"));
        assert_eq!(
            got.len(),
            expected.len(),
            "seed {seed}: rows lost or duplicated"
        );
        assert!(
            got == expected,
            "seed {seed}: the output differs from the uninterrupted run"
        );

        // Once finished, running again changes nothing.
        let out = anduin(
            dir.path(),
            &[
                "run",
                "q.flow",
                "--var",
                "OUTPUT=out",
                "--checkpoint-dir",
                "ckpt",
            ],
        );
        assert_eq!(out.status.code(), Some(0));
        assert!(String::from_utf8_lossy(&out.stderr).contains("already finished"));
        assert!(output_rows(&dir.path().join("out")) == expected);
    }
}

#[test]
fn a_windowed_run_stopped_with_ctrl_c_resumes_to_the_output_of_an_uninterrupted_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), WINDOWED).expect("query");
    let out = anduin(
        dir.path(),
        &["run", "q.flow", "--var", "OUTPUT=reference.csv"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = output_rows(&dir.path().join("reference.csv"));

    let mut child = start(dir.path(), &[]);
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    while stderr.read_line(&mut line).expect("reads") > 0
        && !line.contains(common::CHECKPOINT_COMPLETED)
    {
        line.clear();
    }
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(interrupted.success());
    let status = child.wait().expect("exits");
    assert_eq!(status.code(), Some(130));
    // The stopped run kept its windows open: no window of the reference is there twice or
    // half-counted once the query has resumed and finished.
    let out = resumed_to_the_end(dir.path(), &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(output_rows(&dir.path().join("out")) == expected);
}
