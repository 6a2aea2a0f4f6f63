//! An integer `SUM` whose total leaves `BIGINT` is an error, never a wrapped total
//! (DataFusion's `SUM` wraps `9223372036854775807 + 1` to `-9223372036854775808`; Flink wraps
//! too). In a window (TUMBLE, HOP with its panes merged, a session joining two sessions, a
//! count window) the query stops with an error naming the operator, the aggregate as written
//! and its `FILE:LINE:COL`, the key and the window, and what to do: the total is no single
//! row's fault, so there is no row to send to the dead letters. Every addition is checked: a
//! total that goes beyond the range and comes back is still an error. In a pattern, a
//! running `SUM` is an expression like any other: the match whose measure overflows goes to
//! the dead letters (or stops the query with `on_error = "fail"`).

use crate::common;

use common::{anduin, anduin_ok, dead_letters, output_rows};

const MAX: i64 = i64::MAX;
const MIN: i64 = i64::MIN;

/// `FILE:LINE:COL` of the first `needle` in `text` (1-based line and character column).
fn place(file: &str, text: &str, needle: &str) -> String {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("`{needle}` in {file}"));
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.chars().rev().take_while(|c| *c != '\n').count() + 1;
    format!("{file}:{line}:{col}")
}

/// A windowed SQL query over `in.csv` (`ts,sensor,value`, seconds after 2024-01-01), with
/// the table-valued function `window`.
fn sql(window: &str) -> String {
    format!(
        "CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts', watermark = '2 seconds');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv', format = 'csv');
INSERT INTO out
SELECT window_start, sensor, SUM(value) AS s, AVG(value) AS a
FROM TABLE({window})
GROUP BY window_start, window_end, sensor;
"
    )
}

const TUMBLE: &str = "TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '10' SECOND)";

/// `(second, sensor, value)` rows as `in.csv`.
fn csv(rows: &[(u32, i64, i64)]) -> String {
    let mut s = String::from("ts,sensor,value\n");
    for (sec, sensor, value) in rows {
        s.push_str(&format!(
            "2024-01-01T00:{:02}:{:02}Z,{sensor},{value}\n",
            sec / 60,
            sec % 60
        ));
    }
    s
}

/// Runs `query` (file `file`) over `input`: it must fail; returns its stderr, after checking
/// that no output row holds the wrapped value.
fn fails(file: &str, query: &str, input: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), input).expect("input");
    std::fs::write(dir.path().join(file), query).expect("query");
    let out = anduin(dir.path(), &["run", file]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let written = dir.path().join("out.csv");
    if written.exists() {
        for row in output_rows(&written) {
            assert!(
                !row.contains(&MIN.to_string()) && !row.contains("-9.2"),
                "a wrapped total was written: {row}"
            );
        }
    }
    assert!(
        !dir.path().join("out.csv.rejected").exists(),
        "an overflowing total is no row's fault: nothing goes to the dead letters"
    );
    stderr
}

/// The error of aggregate `SUM(value)` of `query` (file `file`) overflowing in `place`.
fn overflow_error(file: &str, query: &str, place_text: &str, upward: bool) -> String {
    let at = place(file, query, "SUM(value)");
    let beyond = if upward {
        "above 9223372036854775807, the largest BIGINT"
    } else {
        "below -9223372036854775808, the smallest BIGINT"
    };
    format!("aggregate `s` `SUM(value)` at {at} overflowed BIGINT {place_text}: the total went {beyond}. The query stops: the total is no single row's fault. Add up a wider type instead")
}

#[test]
fn a_tumbling_sum_above_bigint_stops_the_query_naming_the_aggregate_key_and_window() {
    let query = sql(TUMBLE);
    let stderr = fails("q.sql", &query, &csv(&[(0, 1, MAX), (1, 1, 1), (2, 2, 5)]));
    assert!(
        stderr.contains(&overflow_error(
            "q.sql",
            &query,
            "for key sensor = 1 in the window starting at 2024-01-01T00:00:00",
            true
        )),
        "{stderr}"
    );
    assert!(stderr.contains("SUM(CAST(… AS DOUBLE))"), "{stderr}");
}

#[test]
fn a_total_that_goes_above_bigint_and_comes_back_is_still_an_error() {
    let query = sql(TUMBLE);
    let stderr = fails("q.sql", &query, &csv(&[(0, 1, MAX), (1, 1, 1), (2, 1, -1)]));
    assert!(
        stderr.contains(&overflow_error(
            "q.sql",
            &query,
            "for key sensor = 1 in the window starting at 2024-01-01T00:00:00",
            true
        )),
        "{stderr}"
    );
}

#[test]
fn a_sum_below_the_smallest_bigint_is_an_error_too() {
    let query = sql(TUMBLE);
    let stderr = fails("q.sql", &query, &csv(&[(3, 7, MIN), (4, 7, -1)]));
    assert!(
        stderr.contains(&overflow_error(
            "q.sql",
            &query,
            "for key sensor = 7 in the window starting at 2024-01-01T00:00:00",
            false
        )),
        "{stderr}"
    );
}

#[test]
fn a_hop_window_whose_panes_fit_but_whose_merged_total_does_not_stops_the_query() {
    // 10 s windows every 5 s: the panes [0, 5) and [5, 10) each hold one value that fits;
    // only the window [0, 10), which merges both, overflows.
    let query = sql("HOP(TABLE events, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)");
    let stderr = fails("q.sql", &query, &csv(&[(1, 1, MAX), (6, 1, 1), (30, 2, 0)]));
    assert!(
        stderr.contains(&overflow_error(
            "q.sql",
            &query,
            "for key sensor = 1 in the window starting at 2024-01-01T00:00:00",
            true
        )),
        "{stderr}"
    );
}

#[test]
fn the_same_hop_window_with_totals_that_fit_gives_them() {
    let query = sql("HOP(TABLE events, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("in.csv"),
        csv(&[(1, 1, MAX), (6, 1, -1), (7, 1, 1)]),
    )
    .expect("input");
    std::fs::write(dir.path().join("q.sql"), &query).expect("query");
    anduin_ok(dir.path(), &["run", "q.sql"]);
    let sums: Vec<String> = output_rows(&dir.path().join("out.csv"))
        .iter()
        .map(|r| r.split(',').nth(2).expect("s").to_string())
        .collect();
    // [-5, 5): MAX; [0, 10): MAX - 1 + 1 (the pane [5, 10) sums to 0 before the merge);
    // [5, 15): 0.
    let mut expected = vec![MAX.to_string(), MAX.to_string(), "0".to_string()];
    expected.sort();
    let mut sums = sums;
    sums.sort();
    assert_eq!(sums, expected);
}

/// A `.flow` window of `kind_params` over `in.csv`.
fn flow(kind_params: &str) -> String {
    format!(
        r##"type name = "Row" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
operator name = "src", type = "reader" {{
  param path = "in.csv"
  param event_time = "ts"
  param watermark = "20s"
  output name = "rows", type = "Row"
}}
operator name = "w", type = "window" {{
  input name = "rows"
  {kind_params}
  param time = "ts"
  param keys = "sensor"
  param aggregates = """COUNT(*) AS n,
    SUM(value) AS s"""
  output name = "sums"
}}
operator name = "out", type = "writer" {{
  input name = "sums"
  param path = "out.csv"
}}
"##
    )
}

#[test]
fn a_flow_session_that_joins_two_sessions_whose_totals_add_beyond_bigint_stops_the_query() {
    // Sessions [0 s, 6 s) and [10 s, 16 s) of sensor 4 are apart until the row at 5 s joins
    // them: merging their totals overflows.
    let query = flow(r#"param kind = "session" param gap = "6s""#);
    let stderr = fails(
        "q.flow",
        &query,
        &csv(&[(0, 4, MAX), (10, 4, 1), (5, 4, 0)]),
    );
    assert!(stderr.contains("operator \"w\": "), "{stderr}");
    assert!(
        stderr.contains(&overflow_error(
            "q.flow",
            &query,
            "for key sensor = 4 in the session starting at 2024-01-01T00:00:00",
            true
        )),
        "{stderr}"
    );
}

#[test]
fn a_flow_count_window_and_a_global_tumbling_window_stop_the_query_too() {
    let query = flow(r#"param kind = "count" param size = "3""#);
    let stderr = fails("q.flow", &query, &csv(&[(0, 9, MIN), (1, 9, MIN)]));
    assert!(
        stderr.contains(&overflow_error(
            "q.flow",
            &query,
            "for key sensor = 9 in the count window starting at 2024-01-01T00:00:00",
            false
        )),
        "{stderr}"
    );
    let query = flow(r#"param kind = "tumbling" param size = "1m""#)
        .replace("  param keys = \"sensor\"\n", "");
    let stderr = fails("q.flow", &query, &csv(&[(61, 1, MAX), (62, 2, MAX)]));
    assert!(
        stderr.contains(&overflow_error(
            "q.flow",
            &query,
            "in the window starting at 2024-01-01T00:01:00",
            true
        )),
        "{stderr}"
    );
}

const PATTERN: &str = "CREATE TABLE ev (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv', format = 'csv');
INSERT INTO out
SELECT sensor, total
FROM ev
MATCH_RECOGNIZE (
  PARTITION BY sensor
  ORDER BY ts
  MEASURES SUM(A.value) AS total
  ONE ROW PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A+ B)
  DEFINE
    A AS A.value <> 0,
    B AS B.value = 0
);
";

#[test]
fn a_pattern_s_sum_that_overflows_sends_its_match_to_the_dead_letters_or_stops() {
    // Sensor 1's match sums to MAX + 1; sensor 2's to 3.
    let input = csv(&[
        (0, 1, MAX),
        (1, 1, 1),
        (2, 1, 0),
        (3, 2, 1),
        (4, 2, 2),
        (5, 2, 0),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), &input).expect("input");
    std::fs::write(dir.path().join("q.sql"), PATTERN).expect("query");
    anduin_ok(dir.path(), &["run", "q.sql"]);
    assert_eq!(
        output_rows(&dir.path().join("out.csv")),
        vec!["2,3".to_string()]
    );
    let rejected = dead_letters(&dir.path().join("out.csv.rejected"));
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert_eq!(
        rejected[0]["reason"],
        "Arithmetic overflow: the SUM is 9223372036854775808, beyond the range of Int64"
    );
    assert_eq!(rejected[0]["expression"], "SUM(A.value)");
    assert_eq!(rejected[0]["at"], place("q.sql", PATTERN, "SUM(A.value)"));

    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), &input).expect("input");
    std::fs::write(dir.path().join("q.sql"), PATTERN).expect("query");
    let out = anduin(dir.path(), &["run", "q.sql", "--on-error=fail"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("Arithmetic overflow: the SUM is 9223372036854775808"),
        "{stderr}"
    );
}
