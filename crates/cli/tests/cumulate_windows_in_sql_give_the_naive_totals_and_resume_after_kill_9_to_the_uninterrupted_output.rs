//! `CUMULATE` windows (issue 17), as Flink's: `TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts),
//! step, size))` gives, from each multiple of `size`, the windows `[s, s + step)`,
//! `[s, s + 2·step)`, … `[s, s + size)`, each fired when the watermark passes its end. Over
//! seeded random rows, some of them late (behind the watermark when they come, one row per
//! batch), the SQL query writes the naive totals of the rows on time; and a windowed query over
//! cumulating windows killed with SIGKILL at seeded moments resumes from its checkpoints to
//! the output of an uninterrupted run.

use crate::common;

use std::collections::BTreeMap;

use common::{anduin_ok, Rng};

/// A row: `ts, k, a, b`.
type Row = (i64, i64, i64, i64);

/// `n` rows from `seed`, 1 to 120 ms apart, about one in seven up to 1.5 s behind.
fn input(seed: u64, n: usize) -> Vec<Row> {
    let mut rng = Rng(seed);
    let mut ts = 1_767_225_600_000_i64;
    (0..n)
        .map(|_| {
            ts += 1 + rng.next(120) as i64;
            let behind = if rng.next(7) == 0 {
                rng.next(1500) as i64
            } else {
                0
            };
            let k = rng.next(4) as i64;
            let a = rng.next(101) as i64 - 50;
            let b = rng.next(101) as i64;
            (ts - behind, k, a, b)
        })
        .collect()
}

/// The rows on time: a row counts if its time is at or after the watermark before it (the
/// largest time so far less `delay`), as a window with no allowed lateness takes them.
fn on_time(rows: &[Row], delay: i64) -> (Vec<Row>, usize) {
    let mut watermark = i64::MIN;
    let mut kept = Vec::new();
    for r in rows {
        if r.0 >= watermark {
            kept.push(*r);
        }
        watermark = watermark.max(r.0 - delay);
    }
    let late = rows.len() - kept.len();
    (kept, late)
}

/// Per cumulating window (`step`, up to `size`) and key:
/// `start,end,k,COUNT(*),SUM(a),MAX(b) - MIN(b)`, sorted.
fn naive(rows: &[Row], step: i64, size: i64) -> Vec<String> {
    let mut windows: BTreeMap<(i64, i64, i64), Vec<(i64, i64)>> = BTreeMap::new();
    for (ts, k, a, b) in rows {
        let start = ts.div_euclid(size) * size;
        let mut end = ts.div_euclid(step) * step + step;
        while end <= start + size {
            windows.entry((start, end, *k)).or_default().push((*a, *b));
            end += step;
        }
    }
    let mut out: Vec<String> = windows
        .into_iter()
        .map(|((s, e, k), v)| {
            let sum: i64 = v.iter().map(|(a, _)| a).sum();
            let max = v.iter().map(|(_, b)| *b).max().expect("a row");
            let min = v.iter().map(|(_, b)| *b).min().expect("a row");
            format!("{s},{e},{k},{},{sum},{}", v.len(), max - min)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_cumulate_window_in_sql_writes_the_naive_totals_of_each_growing_window() {
    for (seed, step_s, size_s) in [(1_u64, 1, 4), (2, 2, 6), (3, 1, 1)] {
        let rows = input(seed, 300);
        let dir = tempfile::tempdir().expect("tempdir");
        let csv: String = std::iter::once("ts,k,a,b\n".to_string())
            .chain(rows.iter().map(|(t, k, a, b)| format!("{t},{k},{a},{b}\n")))
            .collect();
        std::fs::write(dir.path().join("in.csv"), csv).expect("input");
        std::fs::write(
            dir.path().join("q.sql"),
            format!(
                "CREATE TABLE t (ts TIMESTAMP, k BIGINT, a BIGINT, b BIGINT)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts', watermark = '500 ms');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv', format = 'csv');
INSERT INTO o SELECT window_start, window_end, k, COUNT(*) AS n, SUM(a) AS total, MAX(b) - MIN(b) AS spread
FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '{step_s}' SECOND, INTERVAL '{size_s}' SECOND))
GROUP BY window_start, window_end, k;"
            ),
        )
        .expect("query");
        let out = anduin_ok(
            dir.path(),
            &["run", "q.sql", "--no-api", "--batch-size", "1"],
        );
        let (kept, late) = on_time(&rows, 500);
        assert!(late > 10, "seed {seed}: some rows are late ({late})");
        let summary = String::from_utf8_lossy(&out.stderr);
        assert!(
            summary.contains(&format!("late_rows {late}")),
            "seed {seed}: {late} late rows counted: {summary}"
        );
        let text = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
        let mut got: Vec<String> = text.lines().skip(1).map(str::to_string).collect();
        got.sort();
        assert_eq!(
            got,
            naive(&kept, step_s * 1000, size_s * 1000),
            "seed {seed}, CUMULATE step {step_s} s up to {size_s} s"
        );
    }
}

#[test]
fn a_killed_cumulate_window_resumes_to_the_output_of_an_uninterrupted_one() {
    use super::a_killed_run_resumes_to_the_output_of_an_uninterrupted_one::{
        scenario_with, WINDOWED,
    };
    let sliding = "param kind = \"sliding\"\n  param size = \"200ms\"\n  param slide = \"50ms\"";
    assert!(WINDOWED.contains(sliding), "the windowed scenario's query");
    let cumulating = WINDOWED.replace(
        sliding,
        "param kind = \"cumulate\"\n  param size = \"200ms\"\n  param step = \"50ms\"",
    );
    scenario_with(&cumulating, &[31, 32], &[], 10_000);
}
