//! Reading stdin, writing stdout, and stopping a query that would run forever with Ctrl-C or
//! SIGTERM, each named.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use common::repo;

const PIPE: &str = r#"
type name = "Reading" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "in", type = "reader" {
  param path = "-"
  output name = "readings", type = "Reading"
}
operator name = "low", type = "filter" {
  input name = "readings"
  param condition = "value < 42"
  output name = "low", type = "Reading"
}
operator name = "out", type = "writer" {
  input name = "low"
  param path = "-"
  param format = "jsonl"
  param timestamp_format = "rfc3339"
}
"#;

/// `-q` leaves out the summary and the progress line, not where the run's API is (`anduin ctl`
/// needs it; docs/cli.md says so): a quiet run's stderr is the `api: http://…` line alone,
/// and with `--no-api` nothing.
#[test]
fn a_quiet_run_prints_only_where_its_api_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("pipe.flow"), PIPE).expect("query");
    for (extra, api) in [(None, true), (Some("--no-api"), false)] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["run", "pipe.flow", "-q"])
            .args(extra)
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(b"ts,sensor,value\n1700000000000,1,10\n")
            .expect("writes");
        let out = child.wait_with_output().expect("finishes");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        if api {
            assert!(
                matches!(lines.as_slice(), [l] if l.starts_with("api: http://127.0.0.1:")),
                "{stderr}"
            );
        } else {
            assert!(lines.is_empty(), "{stderr}");
        }
    }
}

#[test]
fn a_query_reads_stdin_and_writes_stdout() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("pipe.flow"), PIPE).expect("query");
    let mut child = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(["run", "pipe.flow", "--quiet"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"ts,sensor,value\n1700000000000,1,10\n1700000000001,2,50\n1700000000002,3,41\n")
        .expect("writes");
    let out = child.wait_with_output().expect("finishes");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\"ts\":\"2023-11-14T22:13:20.000Z\",\"sensor\":1,\"value\":10}\n{\"ts\":\"2023-11-14T22:13:20.002Z\",\"sensor\":3,\"value\":41}\n"
    );
}

#[test]
fn ctrl_c_stops_an_unbounded_query_cleanly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(["run", "examples/generate.flow", "--var", "COUNT=100000000"])
        .current_dir(repo())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    // Wait until the query is producing (its first output line), then interrupt it.
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("a first line");
    assert!(first.starts_with("{\"ts\":\""), "{first}");
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).expect("reads the rest");
    let out = child.wait_with_output().expect("exits");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("stopped by Ctrl-C"), "{stderr}");
    // Every line printed is whole: the stop let in-flight rows through and flushed.
    for line in rest.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("whole JSON lines");
    }
}

#[test]
fn sigterm_stops_an_unbounded_query_cleanly_and_is_named() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(["run", "examples/generate.flow", "--var", "COUNT=100000000"])
        .current_dir(repo())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("a first line");
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).expect("reads the rest");
    let out = child.wait_with_output().expect("exits");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("stopping on SIGTERM"), "{stderr}");
    assert!(stderr.contains("stopped by SIGTERM"), "{stderr}");
    assert!(!stderr.contains("Ctrl-C ("), "{stderr}");
}
