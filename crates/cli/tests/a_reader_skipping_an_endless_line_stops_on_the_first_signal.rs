//! From the hostile probe of issue 22: a reader that skips a line too long to keep (here
//! `/dev/zero`, a line that never ends) emits no row for as long as it skips, and the first
//! SIGTERM must still stop the run, as it does a run that emits rows. (It went unnoticed for
//! 13 minutes: the reader looped past its deadline, where the runtime checks for a stop.)

use crate::common;

use std::process::{Command, Stdio};

use common::{repo, wait_until, ChildGuard};

#[test]
fn a_reader_skipping_an_endless_line_stops_on_the_first_signal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let events = dir.path().join("events.jsonl");
    let child = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args([
            "run",
            "examples/q1.flow",
            "--var",
            "INPUT=/dev/zero",
            "--var",
        ])
        .arg(format!("OUTPUT={}", dir.path().join("out.csv").display()))
        .arg("--events")
        .arg(&events)
        .current_dir(repo())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let mut child = ChildGuard(child);
    // The signal handler is in place before the tasks start.
    wait_until("the run's tasks to start", || {
        std::fs::read_to_string(&events).is_ok_and(|e| e.contains("task_started"))
    });
    let status = Command::new("kill")
        .args(["-TERM", &child.pid().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let mut exited = None;
    wait_until("the run to stop on the first SIGTERM", || {
        exited = child.0.try_wait().expect("waits");
        exited.is_some()
    });
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.0.stderr.as_mut().expect("stderr"), &mut stderr)
        .expect("reads");
    assert_eq!(exited.and_then(|s| s.code()), Some(143), "{stderr}");
    assert!(stderr.contains("stopped by SIGTERM"), "{stderr}");
}

#[test]
fn a_query_writing_to_dev_null_sends_its_dead_letters_to_stderr_not_beside_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("in.csv"),
        "ts,sensor,value\n1700000000000,1,5\n1700000000001,2,oops\n",
    )
    .expect("input");
    let out = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(["run"])
        .arg(repo().join("examples/q1.flow"))
        .args(["--var", "INPUT=in.csv", "--var", "OUTPUT=/dev/null"])
        .current_dir(dir.path())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(r#"rejected: {"line":3"#),
        "the malformed record is on stderr: {stderr}"
    );
    assert!(!std::path::Path::new("/dev/null.rejected").exists());
}
