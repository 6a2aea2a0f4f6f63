//! Issue 22, point 3, end to end: a CSV whose event times reach `i64::MIN` and `i64::MAX`
//! (as epoch milliseconds in a BIGINT column, and in a TIMESTAMP column beside RFC 3339
//! text), windowed by SQL TUMBLE and HOP. The run exits 0; the rows whose window would not
//! fit in a timestamp are in the dead-letter file with the reason and counted in the summary;
//! every other row is in windows whose bounds are exact (no wrapped `window_start` or
//! `window_end`), the first and last whole windows of the range included.

use crate::common;

use common::{anduin_ok, sorted_rows};

const MIN: i64 = i64::MIN;
const MAX: i64 = i64::MAX;

/// (event time as written in the file, value): value 1 at i64::MIN, 2 in the first whole
/// second of the range, 3 at the epoch, 4 in the last whole second, 5 just after it (its
/// second would end after i64::MAX), 6 at i64::MAX.
fn rows(epoch: &str) -> Vec<(String, i64)> {
    vec![
        (MIN.to_string(), 1),
        ((MIN + 808).to_string(), 2),
        (epoch.to_string(), 3),
        ((MAX - 808).to_string(), 4),
        ((MAX - 807).to_string(), 5),
        (MAX.to_string(), 6),
    ]
}

fn query(ts_type: &str, window: &str) -> String {
    format!(
        "CREATE TABLE events (ts {ts_type}, sensor BIGINT, value BIGINT)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts', watermark = '0 seconds');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv', format = 'csv');
INSERT INTO out
SELECT window_start, window_end, sensor, COUNT(*) AS cnt, MAX(value) AS top
FROM TABLE({window})
GROUP BY window_start, window_end, sensor;
"
    )
}

/// Runs the query over the rows; returns the output rows (sorted) and the dead letters' lines.
fn run(ts_type: &str, epoch: &str, window: &str) -> (Vec<String>, Vec<serde_json::Value>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut csv = String::from("ts,sensor,value\n");
    for (ts, v) in rows(epoch) {
        csv += &format!("{ts},1,{v}\n");
    }
    std::fs::write(dir.path().join("in.csv"), csv).expect("input");
    std::fs::write(dir.path().join("q.sql"), query(ts_type, window)).expect("query");
    let out = anduin_ok(dir.path(), &["run", "q.sql"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("anduin: 3 rejected rows went to out.csv.rejected"),
        "{stderr}"
    );
    let output = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
    let dead = std::fs::read_to_string(dir.path().join("out.csv.rejected"))
        .expect("dead letters")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    (sorted_rows(&output), dead)
}

fn window(start: i64, end: i64, value: i64) -> String {
    format!("{start},{end},1,1,{value}")
}

fn sorted(mut rows: Vec<String>) -> Vec<String> {
    rows.sort();
    rows
}

/// The dead letters hold rows 1, 5 and 6, each with why its window does not fit.
fn check_dead_letters(dead: &[serde_json::Value]) {
    let values: Vec<i64> = dead
        .iter()
        .map(|d| d["row"]["value"].as_i64().expect("the row's value"))
        .collect();
    assert_eq!(values, vec![1, 5, 6], "{dead:?}");
    for d in dead {
        let reason = d["reason"].as_str().expect("a reason");
        assert!(
            reason.starts_with("event time ") && reason.contains("does not fit in a timestamp"),
            "{reason}"
        );
    }
    assert!(
        dead[2]["reason"]
            .as_str()
            .expect("a reason")
            .starts_with("event time 292278994-08-17T07:12:55.807Z (9223372036854775807 ms"),
        "{:?}",
        dead[2]
    );
}

#[test]
fn tumble_puts_the_ends_of_the_range_in_whole_seconds_or_the_dead_letters() {
    let (lo, hi) = (MIN + 808, MAX - 808);
    let expected = sorted(vec![
        window(lo, lo + 1000, 2),
        window(0, 1000, 3),
        window(hi - 999, hi + 1, 4),
    ]);
    let tumble = "TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '1' SECOND)";
    for (ts_type, epoch) in [("BIGINT", "0"), ("TIMESTAMP", "1970-01-01T00:00:00Z")] {
        let (out, dead) = run(ts_type, epoch, tumble);
        assert_eq!(out, expected, "{ts_type}");
        check_dead_letters(&dead);
    }
}

#[test]
fn hop_puts_the_ends_of_the_range_in_whole_windows_or_the_dead_letters() {
    let (lo, hi) = (MIN + 808, MAX - 808);
    let expected = sorted(vec![
        window(lo - 500, lo + 500, 2),
        window(lo, lo + 1000, 2),
        window(-500, 500, 3),
        window(0, 1000, 3),
        window(hi - 999, hi + 1, 4),
        window(hi - 499, hi + 501, 4),
    ]);
    let hop = "HOP(TABLE events, DESCRIPTOR(ts), INTERVAL '500' MILLISECOND, INTERVAL '1' SECOND)";
    for (ts_type, epoch) in [("BIGINT", "0"), ("TIMESTAMP", "1970-01-01T00:00:00Z")] {
        let (out, dead) = run(ts_type, epoch, hop);
        assert_eq!(out, expected, "{ts_type}");
        check_dead_letters(&dead);
    }
}
