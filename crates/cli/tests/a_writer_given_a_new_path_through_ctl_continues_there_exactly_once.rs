//! `anduin ctl set QUERY WRITER path NEW` re-targets a running writer (the paper's
//! re-targeted writer, for files): every row before the barrier that carries the change is in
//! the old output, every row after it in the new one, each exactly once. The generator's
//! `events` profile numbers its rows by their timestamps (`1700000000000 + i`), so the
//! outputs read one after the other must hold rows 0, 1, 2, … with no gap and no repeat.
//! - Without checkpoints: a file, then stdout (`-`), then another file.
//! - With checkpoints: a directory of parts, then another, split exactly where the change's
//!   checkpoint says the generator was; also after `kill -9` and a resume, which keeps the
//!   new path.
//! - Refused (and changing nothing): an input, another writer's output, the writer's own
//!   current or earlier output, the dead-letter or query file, a read-only directory, a file
//!   where a directory of parts belongs, and an output that another run holds.

use crate::common;

use std::io::{BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};

use anduin_checkpoint::Store;
use common::{start_with_api, stdout_ok, wait_until, ChildGuard, SLOW_GENERATOR};

const QUERY: &str = r#"
type name = "R" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param rate = 3000
  output name = "raw", type = "R"
}
operator name = "out", type = "writer" {
  input name = "raw"
  param path = "${OUT}"
}
"#;

/// [`QUERY`] with a second branch: a reader of `in.csv` into a writer of `side.csv`.
const TWO_BRANCHES: &str = r#"
type name = "R" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param rate = 3000
  output name = "raw", type = "R"
}
operator name = "out", type = "writer" {
  input name = "raw"
  param path = "old.csv"
}
operator name = "in", type = "reader" {
  param path = "in.csv"
  output name = "read", type = "R"
}
operator name = "side", type = "writer" {
  input name = "read"
  param path = "side.csv"
}
"#;

/// The first timestamp of the `events` profile: row `i` has `TS0 + i`.
const TS0: u64 = 1_700_000_000_000;

/// A running query, its API's address, its stderr (kept open) and, if piped, its stdout
/// read to the end on a thread.
struct Run {
    guard: ChildGuard,
    api: String,
    _stderr: BufReader<std::process::ChildStderr>,
    stdout: Option<std::thread::JoinHandle<Vec<u8>>>,
}

/// Starts `anduin run FILE ARGS` in `dir` and waits for the address of its API.
fn start(dir: &Path, file: &str, args: &[&str], pipe_stdout: bool) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_anduin"));
    command
        .args(["run", file, "-q"])
        .args(args)
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", dir.join("rt"))
        .env_remove("RUST_LOG")
        .stdout(if pipe_stdout {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    let (mut guard, api, stderr) = start_with_api(command);
    let stdout = guard.0.stdout.take().map(|mut s| {
        std::thread::spawn(move || {
            let mut all = Vec::new();
            s.read_to_end(&mut all).expect("reads stdout");
            all
        })
    });
    Run {
        guard,
        api,
        _stderr: stderr,
        stdout,
    }
}

/// The rows operator `op` of query `q` has received so far, once the query is served.
fn rows_in(api: &str, op: &str) -> Option<u64> {
    let client = anduin_api::Client::new(api, None).expect("an address");
    let m = client.metrics("q").ok()?;
    Some(
        m.instances
            .iter()
            .filter(|i| i.operator == op)
            .map(|i| i.rows_in)
            .sum(),
    )
}

/// Waits until the writer has received `more` rows beyond what it has now.
fn wait_for_rows(api: &str, more: u64) {
    let mut now = None;
    wait_until("the query to be served", || {
        now = rows_in(api, "out");
        now.is_some()
    });
    let now = now.expect("served");
    wait_until("rows at the writer", || {
        rows_in(api, "out").is_some_and(|n| n >= now + more)
    });
}

/// Sets `out.path` to `path`; returns the epoch of the barrier that carried the change.
fn set_path(dir: &Path, api: &str, path: &str) -> u64 {
    let applied = stdout_ok(&common::ctl(dir, api, &["set", "q", "out", "path", path]));
    applied
        .split("applied at epoch ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|e| e.parse().ok())
        .unwrap_or_else(|| panic!("an epoch in {applied:?}"))
}

/// Sets `out.path` to `path`, which must be refused with a message containing `why`.
fn refused(dir: &Path, api: &str, path: &str, why: &str) {
    let out = common::ctl(dir, api, &["set", "q", "out", "path", path]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{path} must be refused");
    assert!(stderr.contains("out.path: "), "{path}: {stderr}");
    assert!(stderr.contains(why), "{path}: expected {why:?} in {stderr}");
}

/// Stops the run through the API and waits for it to end with success.
fn stop(dir: &Path, run: Run) -> Vec<u8> {
    stdout_ok(&common::ctl(dir, &run.api, &["stop", "q"]));
    let mut guard = run.guard;
    let status = guard.0.wait().expect("the run ends");
    assert_eq!(status.code(), Some(0), "stopped through the API: success");
    run.stdout
        .map(|h| h.join().expect("stdout read"))
        .unwrap_or_default()
}

/// The data rows of CSV text (after its header line).
fn rows_of_text(text: &str) -> Vec<String> {
    text.lines().skip(1).map(str::to_string).collect()
}

/// The row numbers (from the timestamps) of `rows`.
fn numbers(rows: &[String]) -> Vec<u64> {
    rows.iter()
        .map(|l| {
            let ts: u64 = l
                .split(',')
                .next()
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(|| panic!("a timestamp in {l:?}"));
            ts - TS0
        })
        .collect()
}

/// Asserts that `outputs`, one after the other, hold rows `0..n` once each, in order, and
/// that each holds at least one; returns where each starts, and `n`.
fn assert_consecutive(outputs: &[(&str, Vec<String>)]) -> (Vec<u64>, u64) {
    let mut next = 0;
    let mut starts = Vec::new();
    for (name, rows) in outputs {
        assert!(!rows.is_empty(), "{name} holds no row");
        let got = numbers(rows);
        let expected: Vec<u64> = (next..next + got.len() as u64).collect();
        assert!(
            got == expected,
            "{name} must hold rows {next}.. in order, once each; it starts {:?}",
            &got[..got.len().min(5)]
        );
        starts.push(next);
        next += got.len() as u64;
    }
    (starts, next)
}

fn setup(query: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), query).expect("writes");
    std::fs::create_dir(dir.path().join("rt")).expect("a runtime dir");
    dir
}

#[test]
fn without_checkpoints_a_file_then_stdout_then_another_file_hold_every_row_once() {
    let dir = setup(QUERY);
    let d = dir.path();
    let run = start(d, "q.flow", &["--var", "OUT=old.csv"], true);
    wait_for_rows(&run.api, 300);
    set_path(d, &run.api, "-");
    wait_for_rows(&run.api, 300);
    set_path(d, &run.api, "new.csv");
    wait_for_rows(&run.api, 300);
    let params = stdout_ok(&common::ctl(d, &run.api, &["params", "q", "out"]));
    assert!(params.contains("new.csv"), "{params}");
    let stdout = stop(d, run);
    let printed = rows_of_text(&String::from_utf8(stdout).expect("text"));
    assert_consecutive(&[
        ("old.csv", common::rows_in_order(&d.join("old.csv"))),
        ("stdout", printed),
        ("new.csv", common::rows_in_order(&d.join("new.csv"))),
    ]);
}

fn with_checkpoints(kill: bool) {
    let dir = setup(QUERY);
    let d = dir.path();
    let args = [
        "--var",
        "OUT=old",
        "--checkpoint-dir",
        "ck",
        "--checkpoint-interval",
        "1h",
    ];
    let run = start(d, "q.flow", &args, false);
    wait_for_rows(&run.api, 300);
    std::fs::write(d.join("a-file"), "x").expect("writes");
    refused(d, &run.api, "a-file", "is a file");
    let epoch = set_path(d, &run.api, "new");
    // A checkpoint after the change, so that the change's own checkpoint is complete.
    stdout_ok(&common::ctl(d, &run.api, &["checkpoint", "q"]));
    let switch = common::produced(d, epoch);
    wait_for_rows(&run.api, 300);
    let run = if kill {
        // SIGKILL; the resumed run writes on in the new directory.
        drop(run);
        let run = start(d, "q.flow", &args, false);
        wait_for_rows(&run.api, 300);
        let params = stdout_ok(&common::ctl(d, &run.api, &["params", "q", "out"]));
        assert!(params.contains("new"), "{params}");
        run
    } else {
        run
    };
    stop(d, run);
    let (starts, total) = assert_consecutive(&[
        ("old", common::rows_in_order(&d.join("old"))),
        ("new", common::rows_in_order(&d.join("new"))),
    ]);
    assert_eq!(
        starts[1], switch,
        "the new directory starts where the change's checkpoint says"
    );
    let store = Store::open(d.join("ck")).expect("opens");
    let last = store
        .epochs()
        .expect("lists")
        .into_iter()
        .max()
        .expect("a checkpoint");
    assert_eq!(
        total,
        common::produced(d, last.0),
        "every row produced is written"
    );
}

#[test]
fn a_resumed_run_refuses_every_path_the_writer_had_before_the_kill() {
    let dir = setup(QUERY);
    let d = dir.path();
    let args = [
        "--var",
        "OUT=old",
        "--checkpoint-dir",
        "ck",
        "--checkpoint-interval",
        "1h",
    ];
    let run = start(d, "q.flow", &args, false);
    wait_for_rows(&run.api, 100);
    set_path(d, &run.api, "mid");
    wait_for_rows(&run.api, 100);
    set_path(d, &run.api, "new");
    stdout_ok(&common::ctl(d, &run.api, &["checkpoint", "q"]));
    // SIGKILL; the manifest must still know `mid`, not only the latest path.
    drop(run);
    let run = start(d, "q.flow", &args, false);
    wait_for_rows(&run.api, 100);
    for earlier in ["old", "mid", "new"] {
        refused(d, &run.api, earlier, "an output this operator was given");
    }
    stop(d, run);
    let (_, total) = assert_consecutive(&[
        ("old", common::rows_in_order(&d.join("old"))),
        ("mid", common::rows_in_order(&d.join("mid"))),
        ("new", common::rows_in_order(&d.join("new"))),
    ]);
    assert!(total > 0);
}

#[test]
fn with_checkpoints_the_directories_split_at_the_changes_checkpoint() {
    with_checkpoints(false);
}

#[test]
fn with_checkpoints_the_new_path_survives_kill_9_and_resume() {
    with_checkpoints(true);
}

#[test]
fn a_path_that_run_would_refuse_or_that_another_run_holds_is_refused_and_changes_nothing() {
    let dir = setup(TWO_BRANCHES);
    let d = dir.path();
    std::fs::write(
        d.join("in.csv"),
        "ts,sensor,value\n1700000000000,1,2\n1700000000001,3,4\n",
    )
    .expect("writes");
    std::fs::write(d.join("slow.flow"), SLOW_GENERATOR).expect("writes");
    let ro = d.join("ro");
    std::fs::create_dir(&ro).expect("a directory");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let run = start(d, "q.flow", &[], false);
    wait_for_rows(&run.api, 300);

    refused(d, &run.api, "in.csv", "an input of operator \"in\"");
    refused(d, &run.api, "side.csv", "an output of operator \"side\"");
    refused(d, &run.api, "old.csv", "an output this operator was given");
    refused(d, &run.api, "old.csv.rejected", "the dead-letter file");
    refused(d, &run.api, "q.flow", "the query file");
    refused(d, &run.api, "ro/new.csv", "not a writable directory");
    refused(
        d,
        &run.api,
        "missing/new.csv",
        "cannot write to `missing/new.csv`",
    );

    // Another run holds `taken.csv`.
    let other = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args([
                "run",
                "slow.flow",
                "--var",
                "OUTPUT=taken.csv",
                "--no-api",
                "-q",
            ])
            .current_dir(d)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("anduin runs"),
    );
    // Made once its path lock is taken.
    wait_until("the other run to lock its output", || {
        d.join("taken.csv").exists()
    });
    refused(d, &run.api, "taken.csv", "in use by another anduin run");
    drop(other);

    wait_for_rows(&run.api, 300);
    set_path(d, &run.api, "new.csv");
    wait_for_rows(&run.api, 300);
    refused(d, &run.api, "old.csv", "an output this operator was given");
    refused(d, &run.api, "new.csv", "an output this operator was given");
    stop(d, run);
    assert_consecutive(&[
        ("old.csv", common::rows_in_order(&d.join("old.csv"))),
        ("new.csv", common::rows_in_order(&d.join("new.csv"))),
    ]);
    assert_eq!(common::rows_in_order(&d.join("side.csv")).len(), 2);
}
