//! `anduin ctl` lists a window's `allowed_lateness` among its adjustable params (a duration,
//! `0s` unless the query sets one), refuses a value that is not a duration with its place in
//! the value (`w.allowed_lateness:1:…`) and a param a window cannot change naming the one it
//! can, and applies a new lateness at an epoch it reports. Stopped and resumed from its last
//! checkpoint, the run still has the new lateness (its params and history say so). What the
//! output then holds is checked against a reference in anduin-runtime's
//! `a_window_s_lateness_changed_while_it_runs_applies_from_one_barrier_on`, where the point of
//! the change is under the test's control.

use crate::common;

use std::io::BufReader;
use std::path::Path;
use std::process::Command;

use common::{ctl, stdout_ok, ChildGuard};

const QUERY: &str = r#"
type name = "R" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param rate = 2000
  param event_time = "ts"
  output name = "raw", type = "R"
}
operator name = "w", type = "window" {
  input name = "raw"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n"
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "out.csv"
}
"#;

/// Starts the query (resuming from `ck` if it holds a checkpoint) and returns it with the
/// address its API serves.
fn start(dir: &Path) -> (ChildGuard, String, BufReader<std::process::ChildStderr>) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_anduin"));
    c.args(["run", "q.flow", "--checkpoint-dir", "ck", "-q"])
        .args(["--checkpoint-interval", "1h"])
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", dir.join("rt"))
        .env_remove("RUST_LOG");
    common::start_with_api(c)
}

fn stop(dir: &Path, api: &str, mut run: ChildGuard) {
    stdout_ok(&ctl(dir, api, &["stop", "q"]));
    let status = run.0.wait().expect("the run ends");
    assert_eq!(status.code(), Some(0), "stopped through the API: success");
}

#[test]
fn a_lateness_set_through_ctl_applies_and_survives_a_resume() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("q.flow"), QUERY).expect("writes");
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    let (run, api, _stderr) = start(d);

    let params = stdout_ok(&ctl(d, &api, &["params", "q", "w"]));
    assert!(params.contains("allowed_lateness"), "{params}");
    assert!(params.contains("duration"), "{params}");
    assert!(params.contains("0s"), "{params}");

    let bad = ctl(d, &api, &["set", "q", "w", "allowed_lateness", "soon"]);
    assert_ne!(bad.status.code(), Some(0));
    let message = String::from_utf8_lossy(&bad.stderr);
    assert!(message.contains("w.allowed_lateness:1:"), "{message}");
    assert!(message.contains("duration"), "{message}");
    let bad = ctl(d, &api, &["set", "q", "w", "size", "2s"]);
    assert_ne!(bad.status.code(), Some(0));
    let message = String::from_utf8_lossy(&bad.stderr);
    assert!(
        message.contains("can change: allowed_lateness"),
        "{message}"
    );

    let applied = stdout_ok(&ctl(d, &api, &["set", "q", "w", "allowed_lateness", "3s"]));
    assert!(applied.contains("applied at epoch "), "{applied}");
    let params = stdout_ok(&ctl(d, &api, &["params", "q", "w"]));
    assert!(params.contains("3s"), "{params}");
    stop(d, &api, run);

    let (run, api, _stderr) = start(d);
    let params = stdout_ok(&ctl(d, &api, &["params", "q", "w"]));
    assert!(params.contains("3s"), "{params}");
    let history = stdout_ok(&ctl(d, &api, &["history", "q"]));
    assert!(
        history.contains("allowed_lateness") && history.contains("3s"),
        "{history}"
    );
    stop(d, &api, run);
}
