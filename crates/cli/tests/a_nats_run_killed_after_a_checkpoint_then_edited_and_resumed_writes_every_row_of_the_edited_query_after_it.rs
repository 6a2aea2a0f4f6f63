//! A run killed after a checkpoint, its query edited in a way the checkpoint still fits
//! (another filter), and resumed from that checkpoint, writes every row of the edited query
//! after the checkpoint. Its sink numbers those rows from the count the checkpoint kept, which
//! the killed run had given to the rows it wrote after the checkpoint: in the same lineage
//! they would get the killed run's ids and the stream would drop them as duplicates,
//! silently. The edited query draws a new lineage, and the killed run's rows after the
//! checkpoint stay beside the edited query's. A run of a query the checkpoint does not fit is
//! refused before it takes the lineage, and leaves it as it was. The same holds when only a
//! function the query declares is edited (an inline JavaScript body: the query's text is
//! otherwise the same, and so is its plan).

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::nats::NatsServer;
use common::{anduin, wait_until, ChildGuard, CHECKPOINT_COMPLETED};

fn query(condition: &str) -> String {
    format!(
        r#"
type name = "Event" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
operator name = "in", type = "nats" {{
  param server = "${{SERVER}}"
  param stream = "EVENTS"
  param bounded = false
  output name = "events", type = "Event"
}}
operator name = "picked", type = "filter" {{
  input name = "events"
  param condition = "{condition}"
  output name = "picked", type = "Event"
}}
operator name = "out", type = "nats" {{
  input name = "picked"
  param server = "${{SERVER}}"
  param stream = "OUT"
  param subject = "out"
}}
"#
    )
}

/// The SQL query, whose filter is a JavaScript function returning `condition` of `v`.
fn sql_query(condition: &str) -> String {
    format!(
        r#"
CREATE FUNCTION pick(v BIGINT) RETURNS BOOLEAN LANGUAGE javascript AS $$ return {condition}; $$;
CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'nats', server = '${{SERVER}}', stream = 'EVENTS', format = 'csv');
CREATE TABLE out
WITH (connector = 'nats', server = '${{SERVER}}', stream = 'OUT', subject = 'out', format = 'csv');
INSERT INTO out SELECT * FROM events WHERE pick(value);
"#
    )
}

fn value(row: &str) -> u32 {
    row.rsplit(',')
        .next()
        .and_then(|v| v.parse().ok())
        .expect("a value")
}

/// Input rows, and the rows read between checkpoints: one checkpoint, after about 7 000.
const ROWS: u64 = 10_000;
const CHECKPOINT_EVERY: usize = 7_000;

/// How many rows of the input the source had read at checkpoint 1: the sequence of the next
/// message it recorded, less one.
fn read_at_checkpoint(dir: &std::path::Path) -> usize {
    let manifest =
        std::fs::read_to_string(dir.join("ckpt/chk-00000001/MANIFEST.json")).expect("checkpoint 1");
    let at = ["\"next\":", "\\\"next\\\":"]
        .iter()
        .find_map(|key| manifest.find(key).map(|i| i + key.len()))
        .expect("the source's position");
    let next: String = manifest[at..]
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    next.parse::<usize>().expect("a sequence") - 1
}

#[test]
fn a_nats_run_killed_after_a_checkpoint_then_edited_and_resumed_writes_every_row_of_the_edited_query_after_it(
) {
    killed_edited_resumed(
        ["low.flow", "high.flow"],
        [query("value < 50"), query("value >= 50")],
    );
}

#[test]
fn a_nats_run_killed_after_a_checkpoint_then_its_javascript_function_edited_writes_every_row_after_it(
) {
    killed_edited_resumed(
        ["low.sql", "high.sql"],
        [sql_query("v < 50"), sql_query("v >= 50")],
    );
}

/// Runs `queries[0]` (picking values below 50) in file `files[0]`, kills it after its
/// checkpoint, then resumes from it with `queries[1]` (picking the others).
fn killed_edited_resumed(files: [&'static str; 2], queries: [String; 2]) {
    let [low_file, high_file] = files;
    let [low_query, high_query] = queries;
    let window = Duration::from_secs(120);
    let server = NatsServer::start();
    server.stream("EVENTS", &["events"], window);
    server.stream("OUT", &["out"], window);
    let input: Vec<String> = (0..ROWS)
        .map(|i| format!("{},{},{}", 1_700_000_000_000 + i, i % 7, (i * 53) % 100))
        .collect();
    server.publish("events", &input);
    let var = format!("SERVER={}", server.url);
    let dir = tempfile::tempdir().expect("tempdir");
    let every = CHECKPOINT_EVERY.to_string();
    let args = |q: &'static str| {
        vec![
            "run",
            q,
            "--var",
            var.as_str(),
            "--checkpoint-dir",
            "ckpt",
            "--checkpoint-every",
            every.as_str(),
            "--batch-size",
            "100",
            "--name",
            "q",
        ]
    };

    // The first run reads the whole stream and waits for more (not bounded): one checkpoint,
    // after 7 000 rows, and every row it picks written, the last 3 000 rows' after it.
    std::fs::write(dir.path().join(low_file), low_query).expect("query");
    let start = |q: &'static str| {
        ChildGuard(
            Command::new(env!("CARGO_BIN_EXE_anduin"))
                .args(args(q))
                .args(["--events", "-"])
                .current_dir(dir.path())
                .env_remove("RUST_LOG")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("starts"),
        )
    };
    let mut child = start(low_file);
    let stderr = BufReader::new(child.0.stderr.take().expect("stderr"));
    let (completed, checkpoints) = std::sync::mpsc::channel();
    // Reads stderr to its end, so that the run never blocks on it.
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if line.contains(CHECKPOINT_COMPLETED) {
                let _ = completed.send(());
            }
        }
    });
    let low: Vec<String> = input.iter().filter(|r| value(r) < 50).cloned().collect();
    wait_until("every row of the first run in the output stream", || {
        server.count("OUT") >= low.len() as u64
    });
    checkpoints
        .recv_timeout(Duration::from_secs(60))
        .expect("the first run's checkpoint completed");
    assert!(
        child.0.try_wait().expect("waits").is_none(),
        "the run is still running when killed"
    );
    let _ = child.0.kill();
    let _ = child.0.wait();
    let killed = server.read("OUT");
    assert!(killed == low, "the killed run wrote every row it picked");
    let lineage = || std::fs::read_to_string(dir.path().join("ckpt/lineage")).expect("kept");
    let drawn_first = lineage();

    // A query the checkpoint does not fit (another column) is refused, the lineage untouched.
    std::fs::write(
        dir.path().join("wider.flow"),
        query("value < 50").replace(
            r#"column name = "value", type = "int""#,
            r#"column name = "value", type = "int"
  column name = "note", type = "string""#,
        ),
    )
    .expect("query");
    let out = anduin(dir.path(), &args("wider.flow"));
    assert_eq!(out.status.code(), Some(1), "refused");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot restore checkpoint 1"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(lineage(), drawn_first, "a refused run leaves the lineage");

    // Edited: the other half of the values, resumed from the checkpoint. A last row, which
    // both queries pick, tells when the resumed run has written everything before it.
    let last = format!("{},0,99", 1_700_000_000_000 + ROWS);
    server.publish("events", std::slice::from_ref(&last));
    std::fs::write(dir.path().join(high_file), high_query).expect("query");
    let mut resumed = start(high_file);
    let stderr = BufReader::new(resumed.0.stderr.take().expect("stderr"));
    let said = std::thread::spawn(move || {
        stderr
            .lines()
            .map_while(Result::ok)
            .filter(|l| l.starts_with("anduin:"))
            .collect::<Vec<_>>()
            .join("\n")
    });
    wait_until("the last row in the output stream", || {
        server.read("OUT").last() == Some(&last)
    });
    let _ = resumed.0.kill();
    let _ = resumed.0.wait();
    let stderr = said.join().expect("stderr read");
    let read = read_at_checkpoint(dir.path());
    assert!(
        (CHECKPOINT_EVERY..input.len()).contains(&read),
        "checkpoint 1 after {read} rows"
    );
    let mut expected: Vec<String> = input[read..]
        .iter()
        .filter(|r| value(r) >= 50)
        .cloned()
        .collect();
    expected.push(last);
    let got = server.read("OUT");
    assert_eq!(
        got.len(),
        killed.len() + expected.len(),
        "rows of the edited query after the checkpoint dropped as duplicates of the killed run's"
    );
    assert!(
        got[killed.len()..] == expected[..],
        "every row of the edited query after the checkpoint, in order"
    );
    assert!(
        stderr.contains(
            "the query or its parallelism changed since the lineage was drawn: a new lineage"
        ),
        "{stderr}"
    );
    assert_ne!(
        lineage(),
        drawn_first,
        "a new lineage, kept for the edited query"
    );
}
