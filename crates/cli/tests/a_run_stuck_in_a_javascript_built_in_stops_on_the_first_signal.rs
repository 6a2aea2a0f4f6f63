//! Issue 21, from the hostile probe: a JavaScript function stuck in one built-in call that
//! never returns (QuickJS cannot interrupt it) held its operator, so the first SIGTERM, which
//! stops a run once every operator has processed what was read, did not stop it. A call still
//! running a second after the run is asked to stop is now abandoned, naming the function,
//! and the run ends.

use crate::common;

use std::process::{Command, Stdio};

use common::{repo, wait_until, ChildGuard};

/// The CPU time, in clock ticks, of the process's JavaScript engine threads
/// (`anduin-udf-js`): it grows only while a call runs.
fn engine_cpu(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.trim() == "anduin-udf-js")
        })
        .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
        .filter_map(|stat| {
            // After the command's `)`: state is field 3, utime field 14.
            let rest = stat.rsplit_once(')')?.1;
            rest.split_whitespace().nth(11)?.parse::<u64>().ok()
        })
        .sum()
}

#[test]
fn a_run_stuck_in_a_javascript_built_in_stops_on_the_first_signal() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("q.sql"),
        "CREATE FUNCTION stuck(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$
  const s = 'a'.repeat(1 << 22);
  return s.indexOf('a'.repeat(1 << 21) + 'b') + x
$$;
CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '${INPUT}');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}');
INSERT INTO out SELECT customer, stuck(amount) AS r FROM orders;",
    )
    .expect("query");
    let child = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(["run", "q.sql", "--no-api", "--var"])
        .arg(format!(
            "INPUT={}",
            repo().join("data/orders.csv").display()
        ))
        .args(["--var", "OUTPUT=out.csv"])
        .current_dir(dir.path())
        // The 10 s backstop would stop the call too: far off, so that only the signal does.
        .env("ANDUIN_UDF_BACKSTOP", "1h")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let mut child = ChildGuard(child);
    let pid = child.pid();
    // A fifth of a second of an engine's CPU: a call is running, with the signal handler in
    // place (installed before the run's tasks start).
    wait_until("the function's call to run", || engine_cpu(pid) >= 20);
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
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
    assert_eq!(exited.and_then(|s| s.code()), Some(1), "{stderr}");
    assert!(stderr.contains("stopping on SIGTERM"), "{stderr}");
    assert!(
        stderr.contains(
            "function `stuck` was still running 1s after the run was asked to stop, and was abandoned"
        ),
        "{stderr}"
    );
}
