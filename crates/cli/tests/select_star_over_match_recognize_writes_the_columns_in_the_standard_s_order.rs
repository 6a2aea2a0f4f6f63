//! Issue 18: `SELECT *` over `MATCH_RECOGNIZE` writes the columns of the row pattern output
//! table in the order of the standard, of Trino and of Oracle. With `ALL ROWS PER MATCH`: the
//! `PARTITION BY` columns, the `ORDER BY` columns, the measures, then the input's other
//! columns in the input's order; with `ONE ROW PER MATCH`: the `PARTITION BY` columns, then
//! the measures. `AFTER MATCH` and `SUBSET` change neither.
//!
//! The input's columns are in none of these orders: `value, ts, sensor, seq`.
//!
//! | ts   | sensor | seq | value |
//! |-----:|-------:|----:|------:|
//! | 1000 | 1      | 1   | 10    |
//! | 1500 | 2      | 6   | 5     |
//! | 2000 | 1      | 2   | 8     |
//! | 2500 | 2      | 7   | 3     |
//! | 3000 | 1      | 3   | 6     |
//! | 3500 | 2      | 8   | 4     |
//! | 4000 | 1      | 4   | 9     |
//! | 5000 | 1      | 5   | 12    |
//!
//! `PATTERN (A B+ C)`, B a fall and C a rise of the value. Sensor 1: A = 1000, B = 2000 3000,
//! C = 4000; from 5000 (after the match, or from its last U row 4000: no fall after it) no
//! other match, and 5000 is in none. Sensor 2: A = 1500, B = 2500, C = 3500. Worked out by
//! hand.

use crate::common;

use common::{anduin_ok, output_rows};

const READINGS: &str = "value,ts,sensor,seq
10,1000,1,1
5,1500,2,6
8,2000,1,2
3,2500,2,7
6,3000,1,3
4,3500,2,8
9,4000,1,4
12,5000,1,5
";

const TABLES: &str = "CREATE TABLE readings (value BIGINT, ts BIGINT, sensor BIGINT, seq BIGINT)
WITH (connector = 'file', path = 'readings.csv', format = 'csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv', format = 'csv');
";

/// `SELECT * FROM readings MATCH_RECOGNIZE (…)` with `measures` and `rows` (the rows per
/// match and the skip).
fn query(measures: &str, rows: &str) -> String {
    format!(
        "{TABLES}INSERT INTO out
SELECT * FROM readings MATCH_RECOGNIZE (
  PARTITION BY sensor
  ORDER BY ts, seq
  MEASURES {measures}
  {rows}
  PATTERN (A B+ C)
  SUBSET U = (B, C)
  DEFINE
    B AS B.value < PREV(B.value),
    C AS C.value > PREV(C.value)
);
"
    )
}

/// The header line of the output and its rows, sorted.
fn run(query: &str) -> (String, Vec<String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("readings.csv"), READINGS).expect("input");
    std::fs::write(dir.path().join("q.sql"), query).expect("query");
    anduin_ok(dir.path(), &["run", "q.sql"]);
    let out = dir.path().join("out.csv");
    let text = std::fs::read_to_string(&out).expect("output");
    let header = text.lines().next().unwrap_or_default().to_string();
    (header, output_rows(&out))
}

const ALL_ROWS: [&str; 7] = [
    "1,1000,1,A,10",
    "1,2000,2,B,8",
    "1,3000,3,B,6",
    "1,4000,4,C,9",
    "2,1500,6,A,5",
    "2,2500,7,B,3",
    "2,3500,8,C,4",
];

#[test]
fn all_rows_per_match_writes_partition_then_order_columns_then_measures_then_the_other_columns() {
    for rows in [
        "ALL ROWS PER MATCH",
        "ALL ROWS PER MATCH AFTER MATCH SKIP TO LAST U",
    ] {
        let (header, written) = run(&query("CLASSIFIER() AS label", rows));
        assert_eq!(header, "sensor,ts,seq,label,value", "{rows}");
        assert_eq!(written, ALL_ROWS, "{rows}");
    }
}

#[test]
fn all_rows_per_match_with_unmatched_rows_writes_them_in_the_same_order_with_null_measures() {
    let (header, written) = run(&query(
        "CLASSIFIER() AS label",
        "ALL ROWS PER MATCH WITH UNMATCHED ROWS",
    ));
    assert_eq!(header, "sensor,ts,seq,label,value");
    let mut expected = ALL_ROWS.to_vec();
    expected.insert(4, "1,5000,5,,12");
    assert_eq!(written, expected);
}

#[test]
fn one_row_per_match_writes_the_partition_columns_then_the_measures() {
    for rows in [
        "ONE ROW PER MATCH",
        "ONE ROW PER MATCH AFTER MATCH SKIP TO LAST U",
    ] {
        let (header, written) = run(&query(
            "FIRST(A.ts) AS start_ts, LAST(U.value) AS last_u",
            rows,
        ));
        assert_eq!(header, "sensor,start_ts,last_u", "{rows}");
        assert_eq!(written, ["1,1000,9", "2,1500,4"], "{rows}");
    }
}
