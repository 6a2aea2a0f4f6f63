//! A lookup join whose side table is read with `idle_timeout` (stdin, kept open) and pauses
//! before its end: the side is idle for a while, but a lookup join takes it as ended only
//! when its input is exhausted (stdin closed), so every stream row is joined with the whole
//! side table, from SQL as from `.flow`, with a window between the side and the join (which
//! passes the side's exhaustion on once it has fired), and with the join's instances on two
//! workers (the side's end crossing loopback TCP). (Stdin cannot be checkpointed; with checkpoints,
//! the side's end reaching the join before the end of the whole input is what
//! `a_lookup_joins_state_is_its_side_table_whatever_the_length_of_the_stream` shows, and
//! through stateful operators `a_lookup_joins_side_behind_stateful_operators_ends_when_its_source_is_read`.)
//!
//! Deterministic without sleeps: the test writes the side's rows only after the side source
//! has said (a debug line) that it is idle, and the rest only after it has gone idle again
//! after reading the first part; a join that took idleness for the end would have joined the
//! stream with the first part only (and then failed on the rest).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use crate::common::{self, ChildGuard};

const FLOW: &str = r#"
type name = "Reading" {
  column name = "k", type = "int"
  column name = "v", type = "int"
}
type name = "Label" {
  column name = "ts", type = "timestamp"
  column name = "id", type = "int"
  column name = "label", type = "string"
}
operator name = "readings", type = "reader" {
  param path = "stream.csv"
  output name = "r", type = "Reading"
}
operator name = "labels", type = "reader" {
  param path = "-"
  param event_time = "ts"
  param idle_timeout = "20ms"
  output name = "l", type = "Label"
}
operator name = "j", type = "lookup_join" {
  input name = "r"
  input name = "l"
  param on = "r.k = l.id"
  output name = "joined"
}
operator name = "out", type = "writer" {
  input name = "joined"
  param path = "out.csv"
}
"#;

const SQL: &str = "
CREATE TABLE readings (k BIGINT, v BIGINT) WITH (connector = 'file', path = 'stream.csv');
CREATE TABLE labels (ts TIMESTAMP, id BIGINT, label VARCHAR)
WITH (connector = 'file', path = '-', event_time = 'ts', idle_timeout = '20ms');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv');
INSERT INTO out SELECT r.k, r.v, l.label
FROM readings AS r JOIN labels FOR SYSTEM_TIME AS OF PROCTIME() AS l ON r.k = l.id;
";

/// [`SQL`] with a window between the side and the join (a view): the window holds its rows
/// until its input is exhausted, and is not told so at the side's idleness either.
const SQL_WINDOWED: &str = "
CREATE TABLE readings (k BIGINT, v BIGINT) WITH (connector = 'file', path = 'stream.csv');
CREATE TABLE labels (ts TIMESTAMP, id BIGINT, label VARCHAR)
WITH (connector = 'file', path = '-', event_time = 'ts', idle_timeout = '20ms');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv');
CREATE VIEW per_minute AS
SELECT id, MAX(label) AS label
FROM TABLE(TUMBLE(TABLE labels, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end, id;
INSERT INTO out SELECT r.k, r.v, l.label
FROM readings AS r JOIN per_minute FOR SYSTEM_TIME AS OF PROCTIME() AS l ON r.k = l.id;
";

/// The side's rows, read in two parts with a pause between: key 1 has a row in each.
const FIRST: &str = "1000,1,a\n1001,2,b\n";
const REST: &str = "1002,3,c\n1003,1,a2\n";

/// Runs `query` (file `name`, with `extra` args) with the side written to stdin in two parts,
/// each after the side source went idle; the output's rows `k,v,label`, sorted.
fn run(name: &str, query: &str, extra: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(name), query).expect("query");
    std::fs::write(
        dir.path().join("stream.csv"),
        "k,v\n1,10\n2,20\n3,30\n4,40\n1,11\n",
    )
    .expect("stream");
    let mut child = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["run", name])
            .args(extra)
            .current_dir(dir.path())
            .env("RUST_LOG", "anduin_runtime::source_task=debug")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("anduin starts"),
    );
    let mut stdin = child.0.stdin.take().expect("stdin");
    let mut log = Log {
        lines: BufReader::new(child.0.stderr.take().expect("stderr")).lines(),
        seen: String::new(),
        idle: 0,
    };
    stdin.write_all(b"ts,id,label\n").expect("header");
    stdin.flush().expect("flush");
    // No row yet: the side goes idle.
    log.until_idle(1);
    stdin.write_all(FIRST.as_bytes()).expect("first part");
    stdin.flush().expect("flush");
    // Its rows make it active, then idle again: the first part is read, the rest is not.
    log.until_idle(2);
    stdin.write_all(REST.as_bytes()).expect("the rest");
    drop(stdin);
    // The rest of the log, to the run's end.
    for line in log.lines.by_ref().map_while(Result::ok) {
        log.seen.push_str(&line);
        log.seen.push('\n');
    }
    let status = child.0.wait().expect("waits");
    assert!(status.success(), "the run succeeds:\n{}", log.seen);
    let text = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
    common::sorted_rows(&text)
}

/// The run's stderr, read as it comes.
struct Log {
    lines: std::io::Lines<BufReader<std::process::ChildStderr>>,
    seen: String,
    /// How many times the side source said it went idle.
    idle: usize,
}

impl Log {
    /// Reads until the side source has said `n` times that it went idle.
    fn until_idle(&mut self, n: usize) {
        while self.idle < n {
            let line = self
                .lines
                .next()
                .unwrap_or_else(|| {
                    panic!("the run ended before the side went idle:\n{}", self.seen)
                })
                .expect("a line");
            if line.contains("idleness changed")
                && line.contains("source=labels")
                && line.contains("idle=true")
            {
                self.idle += 1;
            }
            self.seen.push_str(&line);
            self.seen.push('\n');
        }
    }
}

/// Every stream row with every side row of its key, the first part's and the rest's.
fn expected() -> Vec<String> {
    let mut rows: Vec<String> = ["1,10,a", "1,10,a2", "1,11,a", "1,11,a2", "2,20,b", "3,30,c"]
        .iter()
        .map(|r| r.to_string())
        .collect();
    rows.sort();
    rows
}

/// The output's rows cut to `k,v,label` (the `.flow` join also writes the side's `ts` and
/// `id`).
fn k_v_label(rows: Vec<String>) -> Vec<String> {
    let mut cut: Vec<String> = rows
        .iter()
        .map(|r| {
            let c: Vec<&str> = r.split(',').collect();
            format!("{},{},{}", c[0], c[1], c[c.len() - 1])
        })
        .collect();
    cut.sort();
    cut
}

#[test]
fn a_lookup_joins_side_that_goes_idle_before_its_end_is_still_joined_whole() {
    assert_eq!(k_v_label(run("q.flow", FLOW, &[])), expected(), ".flow");
    assert_eq!(k_v_label(run("q.sql", SQL, &[])), expected(), "SQL");
    // Through a window: key 1's row of the window of both parts (the greater label).
    assert_eq!(
        k_v_label(run("q.sql", SQL_WINDOWED, &[])),
        ["1,10,a2", "1,11,a2", "2,20,b", "3,30,c"],
        "SQL, the side through a window"
    );
    // Two join instances on two workers: the side's end crosses the network to one of them.
    let spread = ["--parallelism", "2", "--loopback-workers", "2"];
    assert_eq!(
        k_v_label(run("q.flow", FLOW, &spread)),
        expected(),
        ".flow over the network data plane"
    );
}
