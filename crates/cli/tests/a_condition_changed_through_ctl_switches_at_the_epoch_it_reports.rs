//! `anduin ctl set` changes a running filter's condition at the epoch it reports: the
//! checkpoint of that epoch records where the generator was (`P` rows produced), and the
//! output is exactly the first `P` generated rows filtered by the old condition followed by
//! the rest filtered by the new one — computed from a second run that writes every
//! generated row. Refused changes (a condition that does not parse, a param that cannot
//! change) change nothing. Killed with SIGKILL after the change and resumed, the query keeps
//! the new condition (its params and history say so) and the output is the same.

use crate::common;

use std::io::BufReader;
use std::path::Path;
use std::process::Command;

use anduin_checkpoint::Store;
use common::{ctl, stdout_ok, ChildGuard};

/// Every row of the generator above, `${COUNT}` of them, unfiltered.
const ALL: &str = r#"
type name = "R" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = "${COUNT}"
  output name = "raw", type = "R"
}
operator name = "out", type = "writer" {
  input name = "raw"
  param path = "all.csv"
}
"#;

/// Starts the query (resuming from `ck` if it holds a checkpoint) and returns it with the
/// address its API serves, read from the `api:` line it prints.
fn start(dir: &Path) -> (ChildGuard, String, BufReader<std::process::ChildStderr>) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_anduin"));
    c.args(["run", "q.flow", "--checkpoint-dir", "ck", "-q"])
        .args(["--checkpoint-interval", "1h"])
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", dir.join("rt"))
        .env_remove("RUST_LOG");
    common::start_with_api(c)
}

fn value_of(line: &str) -> i64 {
    line.rsplit(',')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("a value in {line:?}"))
}

fn switch_and_check(kill: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(
        d.join("q.flow"),
        common::generated_filtered(3000, "value < 42"),
    )
    .expect("writes");
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    let (run, api, _stderr) = start(d);

    // Refused changes change nothing.
    let bad = common::ctl(d, &api, &["set", "q", "low", "condition", "value <"]);
    assert_ne!(bad.status.code(), Some(0));
    let message = String::from_utf8_lossy(&bad.stderr);
    assert!(message.contains("low.condition:1:"), "{message}");
    let bad = common::ctl(d, &api, &["set", "q", "low", "on_error", "fail"]);
    assert_ne!(bad.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("can change: condition"));

    let applied = stdout_ok(&ctl(
        d,
        &api,
        &["set", "q", "low", "condition", "value >= 42"],
    ));
    let epoch: u64 = applied
        .split("applied at epoch ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|e| e.parse().ok())
        .unwrap_or_else(|| panic!("an epoch in {applied:?}"));

    // A checkpoint after the change (so the change's own is complete), and rows after it.
    stdout_ok(&ctl(d, &api, &["checkpoint", "q"]));
    let switch = common::produced(d, epoch);
    let client = anduin_api::Client::new(&api, None).expect("an address");
    common::wait_until("rows after the switch", || {
        let m = client.metrics("q").expect("metrics");
        m.instances
            .iter()
            .any(|i| i.operator == "gen" && i.rows_out >= switch + 300)
    });
    let (run, api, _stderr) = if kill {
        // SIGKILL: the resumed run keeps the change.
        drop(run);
        let (run, api, stderr) = start(d);
        let client = anduin_api::Client::new(&api, None).expect("an address");
        common::wait_until("rows after the resume", || {
            let m = client.metrics("q").expect("metrics");
            m.instances
                .iter()
                .any(|i| i.operator == "gen" && i.rows_out >= 300)
        });
        let params = stdout_ok(&ctl(d, &api, &["params", "q", "low"]));
        assert!(params.contains("value >= 42"), "{params}");
        let history = stdout_ok(&ctl(d, &api, &["history", "q"]));
        assert!(history.contains("value >= 42"), "{history}");
        (run, api, stderr)
    } else {
        (run, api, _stderr)
    };
    let mut run = run;
    stdout_ok(&ctl(d, &api, &["stop", "q"]));
    let status = run.0.wait().expect("the run ends");
    assert_eq!(status.code(), Some(0), "stopped through the API: success");

    let store = Store::open(d.join("ck")).expect("opens");
    let last = store
        .epochs()
        .expect("lists")
        .into_iter()
        .max()
        .expect("a checkpoint");
    let total = common::produced(d, last.0);
    assert!(
        switch > 0 && switch + 300 <= total,
        "switch {switch} of {total}"
    );

    std::fs::write(d.join("all.flow"), ALL).expect("writes");
    let count = format!("COUNT={total}");
    let all = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(["run", "all.flow", "--var", &count, "-q", "--no-api"])
        .current_dir(d)
        .output()
        .expect("runs");
    assert!(
        all.status.success(),
        "{}",
        String::from_utf8_lossy(&all.stderr)
    );
    let every = common::rows_in_order(&d.join("all.csv"));
    assert_eq!(every.len() as u64, total);
    let expected: Vec<String> = every
        .iter()
        .enumerate()
        .filter(|(i, l)| {
            if (*i as u64) < switch {
                value_of(l) < 42
            } else {
                value_of(l) >= 42
            }
        })
        .map(|(_, l)| l.clone())
        .collect();
    assert_eq!(common::rows_in_order(&d.join("out.csv")), expected);
}

#[test]
fn the_output_switches_conditions_at_the_reported_epoch() {
    switch_and_check(false);
}

#[test]
fn a_change_survives_kill_9_and_resume() {
    switch_and_check(true);
}
