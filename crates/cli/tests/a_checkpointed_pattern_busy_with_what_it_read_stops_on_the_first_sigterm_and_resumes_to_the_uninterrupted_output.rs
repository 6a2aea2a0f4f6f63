//! Issue 18, from the hostile probe: with checkpoints, the first SIGTERM did not stop a
//! `MATCH_RECOGNIZE` busy with the rows it had read (`A B* C`, `B` nearly every row): the
//! pattern gave up after a stop only without checkpoints, so it matched every row still
//! waiting before the run could end — minutes on 150 000 rows. Now it gives up a second
//! after the stop with checkpoints too, and no checkpoint takes that work for done (the one
//! that would say the query finished fails): the run ends on the one signal, and a run
//! resumed from its last checkpoint writes what an uninterrupted run writes, no row lost and
//! none twice.
//!
//! Two layouts: the pattern fused with its source, stopped in the middle of the file (it gives
//! up at the end of its input, after the stop's last checkpoint, which keeps the rows it gave
//! up: the resumed run goes on from there), and the pattern in a task of its own, stopped once
//! the source has read the whole file (it gives up draining what it was sent, before the last
//! checkpoint, which would say the query finished and fails: the resumed run starts over).
//!
//! In both, what the stopped run committed stays as it is: the resumed run adds parts and
//! changes none (probe39: the file writer after a pattern that gave up, in a task of its own,
//! committed its pending part at the end of its input, and the resumed run wrote that part
//! again under the same name).

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{anduin, output_rows, wait_until, ChildGuard};

/// Every row starts a match that ends at the next `C`: `GAP` partial matches in flight, each
/// row costs them all. The watermark lags 12 000 rows behind, so that a stop always finds that
/// many rows still to match (seconds of work, more than the second of grace).
const QUERY: &str = "CREATE TABLE t (p BIGINT, ts BIGINT, v BIGINT, pad VARCHAR)
WITH (connector = 'file', path = '${INPUT}', format = 'csv', event_time = 'ts', watermark = '12 seconds');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}', format = 'csv');
INSERT INTO out
SELECT * FROM t MATCH_RECOGNIZE (
  PARTITION BY p ORDER BY ts
  MEASURES FIRST(ts) AS f, LAST(ts) AS l, COUNT(*) AS c
  ONE ROW PER MATCH
  AFTER MATCH SKIP TO NEXT ROW
  PATTERN (A B* C)
  DEFINE B AS v >= 0, C AS v < 0
);";

const ROWS: u64 = 21_000;
/// Every GAP-th row is a `C`.
const GAP: u64 = 300;

/// One partition, one row a millisecond, each padded with `pad` characters: with 300, the
/// reader reads the file in pieces of about 3000 rows (a megabyte each); with 1, at once.
fn input(pad: usize) -> String {
    let pad = "x".repeat(pad);
    let mut csv = String::from("p,ts,v,pad\n");
    for ts in 1..=ROWS {
        let v = if ts % GAP == 0 { -1 } else { 1 };
        csv.push_str(&format!("1,{ts},{v},{pad}\n"));
    }
    csv
}

/// The arguments of a checkpointed run of `q.sql` in `layout`, into `out-NAME`, with its
/// checkpoints in `ckpt-NAME`.
fn args(name: &str, layout: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "run",
        "q.sql",
        "--no-api",
        "--var",
        &format!("OUTPUT=out-{name}"),
        "--checkpoint-dir",
        &format!("ckpt-{name}"),
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.extend(layout.iter().map(|a| a.to_string()));
    args
}

/// The parts committed in output directory `out` (those whose names do not start with a
/// dot), by name, with their content.
fn committed(out: &Path) -> BTreeMap<String, String> {
    let Ok(entries) = std::fs::read_dir(out) else {
        return BTreeMap::new();
    };
    entries
        .map(|e| e.expect("entry").path())
        .filter_map(|p| {
            let name = p.file_name()?.to_string_lossy().to_string();
            let content = std::fs::read_to_string(&p).expect("part");
            (!name.starts_with('.')).then_some((name, content))
        })
        .collect()
}

/// Requires every checkpoint that `--events` file `events` says began to have ended there,
/// completed or failed (probe40 L8: the stop's last checkpoint, which a run whose pattern gave
/// up cannot complete, was left `checkpoint_started` with no outcome).
fn every_checkpoint_has_an_outcome(name: &str, events: &Path) {
    let text = std::fs::read_to_string(events).expect("events");
    let mut open = std::collections::BTreeSet::new();
    for line in text.lines() {
        let e: serde_json::Value = serde_json::from_str(line).expect("an event per line");
        let epoch = e["epoch"].as_u64();
        match (e["event"].as_str(), epoch) {
            (Some("checkpoint_started"), Some(epoch)) => {
                open.insert(epoch);
            }
            (Some("checkpoint_completed" | "checkpoint_failed"), Some(epoch)) => {
                open.remove(&epoch);
            }
            _ => {}
        }
    }
    assert!(
        open.is_empty(),
        "{name}: checkpoints {open:?} began and never ended: {text}"
    );
}

/// Runs the query in `layout`, sends one SIGTERM once its events (`--events`) show `progress`,
/// and requires the run to end on it, saying the pattern gave up; then resumes it to the end
/// and requires `expected`, the rows of an uninterrupted run, with every part the stopped run
/// committed unchanged.
fn stopped_then_resumed(
    dir: &Path,
    name: &str,
    layout: &[&str],
    progress: &str,
    expected: &[String],
) {
    let events = dir.join(format!("events-{name}.jsonl"));
    let child = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(args(name, layout))
        .arg("--events")
        .arg(&events)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let mut child = ChildGuard(child);
    wait_until(&format!("{name}: {progress}"), || {
        std::fs::read_to_string(&events).is_ok_and(|e| e.contains(progress))
    });
    // One signal only: the run ends on it, or the failsafe of `wait_until` fails the test.
    let stderr = child.stop_on_one_sigterm(name);
    // It gave up the rows still to match, for the resumed run to match them.
    assert!(
        stderr.contains("run again with the same checkpoints, the query matches them"),
        "{name}: {stderr}"
    );
    every_checkpoint_has_an_outcome(name, &events);
    let before = committed(&dir.join(format!("out-{name}")));

    let args = args(name, layout);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = anduin(dir, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
    let after = committed(&dir.join(format!("out-{name}")));
    for (part, content) in &before {
        assert!(
            after.get(part) == Some(content),
            "{name}: part {part}, committed by the stopped run, changed when the run resumed"
        );
    }
    let got = output_rows(&dir.join(format!("out-{name}")));
    assert_eq!(got.len(), expected.len(), "{name}: rows lost or twice");
    assert!(
        got == expected,
        "{name}: the output differs from the uninterrupted run's"
    );
}

#[test]
fn a_checkpointed_pattern_busy_with_what_it_read_stops_on_the_first_sigterm_and_resumes_to_the_uninterrupted_output(
) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("padded.csv"), input(300)).expect("input");
    std::fs::write(dir.path().join("plain.csv"), input(1)).expect("input");
    std::fs::write(dir.path().join("q.sql"), QUERY).expect("query");
    let out = anduin(
        dir.path(),
        &[
            "run",
            "q.sql",
            "--no-api",
            "--var",
            "INPUT=plain.csv",
            "--var",
            "OUTPUT=reference.csv",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = output_rows(&dir.path().join("reference.csv"));
    assert_eq!(
        expected.len() as u64,
        ROWS - 1,
        "a match from every row but the last"
    );

    // A checkpoint completed (one every 2000 rows): the source, which reads a piece of the file
    // at a time and waits for the pattern fused after it, is in the middle of the file.
    stopped_then_resumed(
        dir.path(),
        "fused",
        &["--var", "INPUT=padded.csv", "--checkpoint-every", "2000"],
        r#""event":"checkpoint_completed""#,
        &expected,
    );
    // The last checkpoint began, the first (none is due before): the source has sent every
    // row to the pattern's task, which is matching them.
    stopped_then_resumed(
        dir.path(),
        "apart",
        &[
            "--var",
            "INPUT=plain.csv",
            "--no-chaining",
            "--checkpoint-interval",
            "1h",
        ],
        r#""last":true"#,
        &expected,
    );
}
