//! `anduin ctl set` gives a running pattern new DEFINE conditions at the epoch it reports:
//! the checkpoint of that epoch records where the generator was (`P` rows produced), and the
//! output is exactly that of the old conditions over the first `P` generated rows followed by
//! that of the new ones over the rest, each run on its own over a file of those rows (the
//! partial matches open at the switch are dropped). A refused change (a condition that does
//! not type-check) changes nothing and says where in the value it is wrong. Killed with
//! SIGKILL after the change and resumed, the query keeps the new conditions (its params say
//! so) and the output is the same. The generator is paced until the change is made (after
//! some thousand rows), then sped up to its end (its rate is adjustable too), so that the run
//! ends by itself.

use crate::common;

use std::io::BufReader;
use std::path::Path;
use std::process::Command;

use anduin_checkpoint::Store;
use common::{anduin_ok, ctl, output_rows, stdout_ok, ChildGuard};

/// How many rows the generator makes.
const COUNT: u64 = 60_000;

const OLD: &str = "B AS B.value < PREV(B.value), C AS C.value > A.value";
const NEW: &str = "B AS B.value < PREV(B.value), C AS C.value >= A.value";

/// The pattern over the rows of `source` (an operator block with output `raw`), with
/// conditions `${DEFINE}`, into `${OUTPUT}`.
fn query(source: &str) -> String {
    format!(
        r#"
type name = "R" {{
  column name = "ts", type = "int"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
{source}
operator name = "p", type = "pattern" {{
  input name = "raw"
  param partition_by = "sensor"
  param order_by = "ts"
  param pattern = "A B+ C"
  param define = "${{DEFINE}}"
  param measures = "A.ts AS a_ts, LAST(C.ts) AS c_ts, COUNT(B.*) AS bs"
  output name = "matches"
}}
operator name = "out", type = "writer" {{
  input name = "matches"
  param path = "${{OUTPUT}}"
}}
"#
    )
}

/// The generator, slow, with event time.
const GENERATED: &str = r#"
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = "${COUNT}"
  param rate = 2000
  param event_time = "ts"
  param watermark = "100ms"
  output name = "raw", type = "R"
}"#;

/// The rows of a file, with event time.
const READ: &str = r#"
operator name = "in", type = "reader" {
  param path = "${INPUT}"
  param event_time = "ts"
  param watermark = "100ms"
  output name = "raw", type = "R"
}"#;

/// Every generated row, into `all.csv`.
const ALL: &str = r#"
type name = "R" {
  column name = "ts", type = "int"
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
/// address its API serves.
fn start(dir: &Path) -> (ChildGuard, String, BufReader<std::process::ChildStderr>) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_anduin"));
    c.args(["run", "q.flow", "--checkpoint-dir", "ck", "-q"])
        .args(["--checkpoint-interval", "1h"])
        .args(["--var", &format!("COUNT={COUNT}")])
        .args(["--var", &format!("DEFINE={OLD}")])
        .args(["--var", "OUTPUT=out.csv"])
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", dir.join("rt"))
        .env_remove("RUST_LOG");
    common::start_with_api(c)
}

/// The rows the generator produced, in order, with their header: `COUNT` of them.
fn generated(d: &Path) -> (String, Vec<String>) {
    std::fs::write(d.join("all.flow"), ALL).expect("writes");
    let count = format!("COUNT={COUNT}");
    anduin_ok(d, &["run", "all.flow", "--var", &count, "-q", "--no-api"]);
    let text = std::fs::read_to_string(d.join("all.csv")).expect("all.csv");
    let mut lines = text.lines().map(str::to_string);
    let header = lines.next().expect("a header");
    (header, lines.collect())
}

/// The matches of the conditions `define` over `rows` (a file of them, read on its own).
fn matches(d: &Path, name: &str, header: &str, rows: &[String], define: &str) -> Vec<String> {
    let input = format!("{name}.csv");
    let mut text = format!("{header}\n");
    for r in rows {
        text.push_str(r);
        text.push('\n');
    }
    std::fs::write(d.join(&input), text).expect("writes");
    std::fs::write(d.join("ref.flow"), query(READ)).expect("writes");
    let output = format!("{name}_matches.csv");
    anduin_ok(
        d,
        &[
            "run",
            "ref.flow",
            "--var",
            &format!("INPUT={input}"),
            "--var",
            &format!("OUTPUT={output}"),
            "--var",
            &format!("DEFINE={define}"),
            "-q",
            "--no-api",
        ],
    );
    output_rows(&d.join(output))
}

fn switch_and_check(kill: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("q.flow"), query(GENERATED)).expect("writes");
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    let (run, api, _stderr) = start(d);
    let client = anduin_api::Client::new(&api, None).expect("an address");
    let produced = |client: &anduin_api::Client, at_least: u64| {
        let m = client.metrics("q").expect("metrics");
        m.instances
            .iter()
            .any(|i| i.operator == "gen" && i.rows_out >= at_least)
    };
    common::wait_until("rows before the switch", || produced(&client, 4000));

    // A refused change changes nothing.
    let bad = ctl(d, &api, &["set", "q", "p", "define", "B AS B.valeu < 1"]);
    assert_ne!(bad.status.code(), Some(0));
    let message = String::from_utf8_lossy(&bad.stderr);
    assert!(
        message.contains("p.define:1:8: unknown column `valeu`"),
        "{message}"
    );

    let applied = stdout_ok(&ctl(d, &api, &["set", "q", "p", "define", NEW]));
    let epoch: u64 = applied
        .split("applied at epoch ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|e| e.parse().ok())
        .unwrap_or_else(|| panic!("an epoch in {applied:?}"));
    // A checkpoint after the change, so that the change's own is complete.
    stdout_ok(&ctl(d, &api, &["checkpoint", "q"]));
    let switch = common::produced(d, epoch);
    common::wait_until("rows after the switch", || produced(&client, switch + 500));
    let (run, api, _stderr) = if kill {
        // SIGKILL: the resumed run keeps the change.
        drop(run);
        let (run, api, stderr) = start(d);
        let params = stdout_ok(&ctl(d, &api, &["params", "q", "p"]));
        assert!(params.contains(NEW), "{params}");
        (run, api, stderr)
    } else {
        (run, api, _stderr)
    };
    // To the end of the input, fast.
    stdout_ok(&ctl(d, &api, &["set", "q", "gen", "rate", "1e9"]));
    let mut run = run;
    let status = run.0.wait().expect("the run ends");
    assert_eq!(status.code(), Some(0), "the bounded query ends by itself");

    let store = Store::open(d.join("ck")).expect("opens");
    assert!(store.epochs().expect("lists").len() >= 2);
    let (header, every) = generated(d);
    assert_eq!(every.len() as u64, COUNT);
    let switch = usize::try_from(switch).expect("a position");
    assert!(
        switch >= 4000 && switch + 500 <= every.len(),
        "switch {switch}"
    );
    let mut expected = matches(d, "before", &header, &every[..switch], OLD);
    let after = matches(d, "after", &header, &every[switch..], NEW);
    assert!(
        expected.len() > 20 && after.len() > 20,
        "matches on both sides: {} and {}",
        expected.len(),
        after.len()
    );
    expected.extend(after);
    expected.sort();
    let unchanged = matches(d, "unchanged", &header, &every, OLD);
    assert_ne!(expected, unchanged, "the change makes a difference");
    assert_eq!(output_rows(&d.join("out.csv")), expected);
}

#[test]
fn the_output_switches_conditions_at_the_reported_epoch() {
    switch_and_check(false);
}

#[test]
fn a_change_survives_kill_9_and_resume() {
    switch_and_check(true);
}
