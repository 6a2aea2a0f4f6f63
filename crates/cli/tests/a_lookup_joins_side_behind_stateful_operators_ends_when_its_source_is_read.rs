//! A lookup join's side table that passes through stateful operators — a window, a
//! keep-first deduplication, an OVER window, a pattern (each holding rows until event time
//! ends) — ends when its source has been read to its end, not when event time ends: each
//! operator, told that its input is exhausted, emits what the end of event time would (its
//! open windows, its waiting rows, its partial matches ended) and says that its output is
//! exhausted too. With checkpoints an exhausted source completes its event time only at the
//! last checkpoint, after every source is done; here the stream is a named pipe whose writer
//! pauses, so the joins must join every stream row with the whole side while it waits. They
//! waited for that end before, and never joined until the stream ended. In `.flow`, and in
//! SQL with the side a view (a subquery cannot take FOR SYSTEM_TIME AS OF; a GROUP BY
//! without a window makes an updating stream, which a lookup join refuses).

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{output_rows, start_with_api, wait_until_or_show};

const QUERY: &str = r#"
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
  param path = "side.csv"
  param event_time = "ts"
  output name = "l", type = "Label"
}
operator name = "per_minute", type = "window" {
  input name = "l"
  param kind = "tumbling"
  param size = "60s"
  param time = "ts"
  param keys = "id"
  param aggregates = "COUNT(*) AS n, MAX(label) AS label"
  output name = "w"
}
operator name = "first", type = "top_n" {
  input name = "l"
  param keys = "id"
  param order = "ts"
  param limit = 1
  param time = "ts"
  output name = "d"
}
operator name = "running", type = "over" {
  input name = "l"
  param keys = "id"
  param time = "ts"
  param frame = "rows unbounded"
  param aggregates = "COUNT(*) AS n"
  output name = "o"
}
operator name = "runs", type = "pattern" {
  input name = "l"
  param partition_by = "id"
  param order_by = "ts"
  param pattern = "A+"
  param define = "A AS id > 0"
  param measures = "COUNT(*) AS n, LAST(A.label) AS last_label"
  output name = "p"
}
operator name = "jw", type = "lookup_join" {
  input name = "r"
  input name = "w"
  param on = "r.k = w.id"
  output name = "rw"
}
operator name = "jd", type = "lookup_join" {
  input name = "r"
  input name = "d"
  param on = "r.k = d.id"
  output name = "rd"
}
operator name = "jo", type = "lookup_join" {
  input name = "r"
  input name = "o"
  param on = "r.k = o.id"
  output name = "ro"
}
operator name = "jp", type = "lookup_join" {
  input name = "r"
  input name = "p"
  param on = "r.k = p.id"
  output name = "rp"
}
operator name = "out_w", type = "writer" {
  input name = "rw"
  param path = "w.csv"
}
operator name = "out_d", type = "writer" {
  input name = "rd"
  param path = "d.csv"
}
operator name = "out_o", type = "writer" {
  input name = "ro"
  param path = "o.csv"
}
operator name = "out_p", type = "writer" {
  input name = "rp"
  param path = "p.csv"
}
"#;

/// The query of [`QUERY`] in SQL, each side a view.
const SQL: &str = "
CREATE TABLE readings (k BIGINT, v BIGINT) WITH (connector = 'file', path = 'stream.csv');
CREATE TABLE labels (ts TIMESTAMP, id BIGINT, label VARCHAR)
WITH (connector = 'file', path = 'side.csv', event_time = 'ts');
CREATE TABLE out_w WITH (connector = 'file', path = 'w.csv');
CREATE TABLE out_d WITH (connector = 'file', path = 'd.csv');
CREATE TABLE out_o WITH (connector = 'file', path = 'o.csv');
CREATE TABLE out_p WITH (connector = 'file', path = 'p.csv');
CREATE VIEW per_minute AS
SELECT window_start, id, COUNT(*) AS n, MAX(label) AS label
FROM TABLE(TUMBLE(TABLE labels, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end, id;
CREATE VIEW first_label AS
SELECT id, label FROM (
  SELECT ts, id, label, ROW_NUMBER() OVER (PARTITION BY id ORDER BY ts) AS rn FROM labels
) WHERE rn = 1;
CREATE VIEW running AS
SELECT ts, id, label,
  COUNT(*) OVER (PARTITION BY id ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n
FROM labels;
CREATE VIEW runs AS
SELECT * FROM labels MATCH_RECOGNIZE (
  PARTITION BY id ORDER BY ts
  MEASURES COUNT(*) AS n, LAST(A.label) AS last_label
  ONE ROW PER MATCH
  PATTERN (A+)
  DEFINE A AS id > 0
);
INSERT INTO out_w SELECT r.k, r.v, w.label
FROM readings AS r JOIN per_minute FOR SYSTEM_TIME AS OF PROCTIME() AS w ON r.k = w.id;
INSERT INTO out_d SELECT r.k, r.v, d.label
FROM readings AS r JOIN first_label FOR SYSTEM_TIME AS OF PROCTIME() AS d ON r.k = d.id;
INSERT INTO out_o SELECT r.k, r.v, o.n
FROM readings AS r JOIN running FOR SYSTEM_TIME AS OF PROCTIME() AS o ON r.k = o.id;
INSERT INTO out_p SELECT r.k, r.v, p.last_label
FROM readings AS r JOIN runs FOR SYSTEM_TIME AS OF PROCTIME() AS p ON r.k = p.id;
";

/// The side: ids 1, 2, 3 in the first minute, id 1 again in the second.
const SIDE: &str = "ts,id,label\n1000,1,a\n2000,2,b\n3000,3,c\n61000,1,a2\n";

/// The stream, all written before the writer pauses (key 4 has no side row).
const STREAM: &str = "k,v\n1,10\n2,20\n3,30\n4,40\n";

fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.to_string_lossy().as_bytes()).expect("a path");
    // SAFETY: a valid NUL-terminated path; mkfifo only reads it.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo {}", path.display());
}

/// The rows of `file` cut to the stream's `k,v` and the last column, sorted.
fn k_v_last(file: &std::path::Path) -> Vec<String> {
    let mut rows: Vec<String> = output_rows(file)
        .iter()
        .map(|r| {
            let c: Vec<&str> = r.split(',').collect();
            format!("{},{},{}", c[0], c[1], c[c.len() - 1])
        })
        .collect();
    rows.sort();
    rows
}

/// Runs `query` (file `name`) with checkpoints, the stream's writer pausing until each of
/// `joins` (the lookup joins behind the window, the deduplication, the OVER window and the
/// pattern) has joined every stream row with its whole side; then checks the outputs.
fn run(name: &str, query: &str, joins: [&str; 4]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    std::fs::write(d.join(name), query).expect("query");
    std::fs::write(d.join("side.csv"), SIDE).expect("side");
    let fifo = d.join("stream.csv");
    mkfifo(&fifo);
    // The writer: the whole stream, then it holds the pipe open until told. The reader opens
    // the pipe twice (a check while the query is built, then to read): a write that meets the
    // check's open before it closes stays in the pipe for the reading one.
    let (go_on, told) = crossbeam_channel::bounded::<()>(1);
    let writer = std::thread::spawn(move || {
        let _pipe = loop {
            let mut pipe = std::fs::OpenOptions::new()
                .write(true)
                .open(&fifo)
                .expect("the pipe opens");
            if pipe.write_all(STREAM.as_bytes()).is_ok() {
                break pipe;
            }
        };
        let _ = told.recv();
    });
    let mut command = Command::new(env!("CARGO_BIN_EXE_anduin"));
    command
        .args(["run", name, "-q", "--checkpoint-store", "ckpt"])
        .current_dir(d)
        .env("XDG_RUNTIME_DIR", d.join("rt"))
        .env_remove("RUST_LOG")
        .stdout(Stdio::null());
    let (run, api, _stderr) = start_with_api(command);
    let client = anduin_api::Client::new(&api, None).expect("an address");
    let query = name.trim_end_matches(".flow").trim_end_matches(".sql");
    let rows_out = |operator: &str| {
        client.metrics(query).map_or(0, |m| {
            m.instances
                .iter()
                .filter(|i| i.operator == operator)
                .map(|i| i.rows_out)
                .sum::<u64>()
        })
    };
    let metrics = || format!("{:#?}", client.metrics(query));
    // While the stream's writer pauses (the stream has not ended, so neither has event time),
    // each join joins every stream row with the whole side.
    for (join, rows) in joins.into_iter().zip([4, 3, 4, 3]) {
        wait_until_or_show(
            &format!("{name}: lookup join {join} to join the stream with its side, ended"),
            || rows_out(join) == rows,
            metrics,
        );
    }
    go_on.send(()).expect("the writer waits");
    writer.join().expect("the writer wrote");
    let out = run.wait_output();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Key 1 has a window in each minute, labels a and a2.
    assert_eq!(
        k_v_last(&d.join("w.csv")),
        ["1,10,a", "1,10,a2", "2,20,b", "3,30,c"],
        "{name}"
    );
    // The first row of each id.
    assert_eq!(
        k_v_last(&d.join("d.csv")),
        ["1,10,a", "2,20,b", "3,30,c"],
        "{name}"
    );
    // Each side row with its running count.
    assert_eq!(
        k_v_last(&d.join("o.csv")),
        ["1,10,1", "1,10,2", "2,20,1", "3,30,1"],
        "{name}"
    );
    // One greedy run of each id, ended with the side: its last label.
    assert_eq!(
        k_v_last(&d.join("p.csv")),
        ["1,10,a2", "2,20,b", "3,30,c"],
        "{name}"
    );
}

#[test]
fn a_lookup_joins_side_behind_stateful_operators_ends_when_its_source_is_read() {
    run("q.flow", QUERY, ["jw", "jd", "jo", "jp"]);
    let joins = [
        "insert1_join",
        "insert2_join",
        "insert3_join",
        "insert4_join",
    ];
    run("q.sql", SQL, joins);
}
