//! Issue 21, aggregates: `CREATE AGGREGATE … LANGUAGE javascript` (RisingWave's functions:
//! `create_state`, `accumulate`, `merge`, `finish`), and `… LANGUAGE wasm` (the example
//! module `examples/udfs/int_avg.wat`, its state a 16-byte struct), in a SQL GROUP BY over
//! windows give, in every window and key, what the built-in aggregate gives — SUM, COUNT, AVG, MAX, on seeded
//! random rows with NULLs and negative values, out of order within the watermark's delay —
//! over tumbling windows (one state per window and key), sliding ones (the states of panes
//! merged) and sessions (states merged when a late row bridges two sessions), with the rows
//! in batches of a few rows, so that states are read and written back between batches.

use crate::common;

use std::path::Path;

use common::{anduin, repo, Rng};

const AGGREGATES: &str = r#"
CREATE AGGREGATE js_sum(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$
export function create_state() { return null; }
export function accumulate(s, x) { return s === null ? x : s + x; }
export function merge(a, b) { return a === null ? b : b === null ? a : a + b; }
$$;
CREATE AGGREGATE js_count(BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$
export function create_state() { return 0; }
export function accumulate(n, x) { return n + 1; }
export function merge(a, b) { return a + b; }
$$;
CREATE AGGREGATE js_avg(x BIGINT) RETURNS DOUBLE LANGUAGE javascript AS $$
export function create_state() { return { sum: 0, n: 0 }; }
export function accumulate(s, x) { s.sum += x; s.n += 1; return s; }
export function merge(a, b) { return { sum: a.sum + b.sum, n: a.n + b.n }; }
export function finish(s) { return s.n == 0 ? null : s.sum / s.n; }
$$;
CREATE AGGREGATE js_max(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$
export function create_state() { return []; }
export function accumulate(s, x) { return s.length == 0 || x > s[0] ? [x] : s; }
export function merge(a, b) { return a.length == 0 ? b : b.length == 0 ? a : [Math.max(a[0], b[0])]; }
export function finish(s) { return s.length == 0 ? null : s[0]; }
$$;
CREATE AGGREGATE int_avg(x BIGINT) RETURNS DOUBLE LANGUAGE wasm AS 'int_avg.wat';
CREATE AGGREGATE js_merges(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$
export function create_state() { return 0; }
export function accumulate(m, x) { return m; }
export function merge(a, b) { return a + b + 1; }
$$;
CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'file', path = 'events.csv', event_time = 'ts', watermark = '3 seconds');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv');
"#;

/// Seeded rows `ts,sensor,value`: times with random gaps (so that sessions form and break),
/// each up to 2.5 s before its place in order (within the watermark's 3 s delay: none is
/// late), five sensors, values from -1000 to 999 or NULL (one in eight).
fn events(seed: u64, rows: usize) -> String {
    let mut rng = Rng(seed);
    let mut at: i64 = 1_700_000_000_000;
    let mut text = String::from("ts,sensor,value\n");
    for _ in 0..rows {
        at += rng.next(700) as i64;
        let ts = at - rng.next(2500) as i64;
        let sensor = rng.next(5);
        let value = if rng.next(8) == 0 {
            String::new()
        } else {
            (rng.next(2000) as i64 - 1000).to_string()
        };
        text.push_str(&format!("{ts},{sensor},{value}\n"));
    }
    text
}

/// Runs `window` (a `FROM TABLE(…)`) with the JavaScript aggregates and the built-in ones
/// side by side; each output row's two halves must agree. Returns the number of rows
/// (windows and keys) and of the merges of two states they took (`js_merges`).
fn agree(dir: &Path, seed: u64, window: &str) -> (usize, u64) {
    std::fs::write(dir.join("events.csv"), events(seed, 3000)).expect("events");
    std::fs::copy(
        repo().join("examples/udfs/int_avg.wat"),
        dir.join("int_avg.wat"),
    )
    .expect("the example module");
    std::fs::write(
        dir.join("q.sql"),
        format!(
            "{AGGREGATES}
INSERT INTO out
SELECT window_start, sensor,
  js_sum(value) AS a1, js_count(value) AS a2, js_avg(value) AS a3, js_max(value) AS a4,
  SUM(value) AS b1, COUNT(value) AS b2, AVG(CAST(value AS DOUBLE)) AS b3, MAX(value) AS b4,
  js_merges(value) AS m, int_avg(value) AS w
FROM TABLE({window})
GROUP BY window_start, window_end, sensor;"
        ),
    )
    .expect("query");
    let out = anduin(dir, &["run", "q.sql", "--no-api", "--batch-size", "7"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "seed {seed}, {window}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("late_rows 0"),
        "seed {seed}: no row is late: {stderr}"
    );
    let written = std::fs::read_to_string(dir.join("out.csv")).expect("output");
    let mut lines = written.lines();
    assert_eq!(
        lines.next(),
        Some("window_start,sensor,a1,a2,a3,a4,b1,b2,b3,b4,m,w")
    );
    let (mut rows, mut merges) = (0, 0);
    for line in lines {
        let cols: Vec<&str> = line.split(',').collect();
        assert_eq!(cols.len(), 12, "{line}");
        assert_eq!(
            cols[2..6],
            cols[6..10],
            "seed {seed}, {window}: the JavaScript aggregates differ from the built-in ones in {line}"
        );
        // The WebAssembly average has no NULL to give: 0 / 0 where AVG gives NULL.
        let wasm = if cols[8].is_empty() { "NaN" } else { cols[8] };
        assert_eq!(
            cols[11], wasm,
            "seed {seed}, {window}: the WebAssembly average differs from the built-in one in {line}"
        );
        rows += 1;
        merges += cols[10].parse::<u64>().expect("a count");
    }
    (rows, merges)
}

#[test]
fn in_tumbling_windows() {
    let dir = tempfile::tempdir().expect("tempdir");
    for seed in [3, 17] {
        let (rows, merges) = agree(
            dir.path(),
            seed,
            "TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '5' SECOND)",
        );
        assert!(rows > 300, "seed {seed}: {rows} windows and keys");
        // A window's one pane takes its state as it is, when the window fires as when its
        // state is checkpointed: its aggregates need no `merge`.
        assert_eq!(merges, 0, "seed {seed}");
    }
}

#[test]
fn in_sliding_windows_whose_panes_merge() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (rows, merges) = agree(
        dir.path(),
        29,
        "HOP(TABLE events, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND)",
    );
    assert!(rows > 1000, "{rows} windows and keys");
    assert!(merges > 1000, "{merges} merges");
}

#[test]
fn in_session_windows_that_merge_as_they_meet() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (rows, merges) = agree(
        dir.path(),
        41,
        "SESSION(TABLE events, DESCRIPTOR(ts), INTERVAL '2' SECOND)",
    );
    assert!(rows > 100, "{rows} sessions");
    assert!(merges > 10, "{merges} merges");
}
