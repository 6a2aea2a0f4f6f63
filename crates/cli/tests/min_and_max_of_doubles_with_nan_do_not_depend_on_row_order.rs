//! Issue 22, point 9, end to end: SQL `MIN` and `MAX` over a CSV's doubles holding NaN, ±0
//! and ±∞ give SQL's order's extremes (NaN above +∞, -0 below +0) whatever the order of the
//! rows: MIN over {1.5, 0, -0, NaN, inf} is -0, and [1.5, NaN] and [NaN, 1.5] both give
//! MIN 1.5 and MAX NaN.

use crate::common;

use common::anduin_ok;

const QUERY: &str = "CREATE TABLE events (ts BIGINT, k BIGINT, v DOUBLE)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts', watermark = '0 seconds');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv', format = 'csv');
INSERT INTO out
SELECT k, MIN(v) AS lo, MAX(v) AS hi
FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY window_start, window_end, k;
";

/// The output of the query over rows (key, value) at times 1, 2, … ms.
fn run(rows: &[(i64, &str)]) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut csv = String::from("ts,k,v\n");
    for (t, (k, v)) in rows.iter().enumerate() {
        csv += &format!("{},{k},{v}\n", t + 1);
    }
    std::fs::write(dir.path().join("in.csv"), csv).expect("input");
    std::fs::write(dir.path().join("q.sql"), QUERY).expect("query");
    anduin_ok(dir.path(), &["run", "q.sql"]);
    std::fs::read_to_string(dir.path().join("out.csv")).expect("output")
}

#[test]
fn min_and_max_of_doubles_with_nan_do_not_depend_on_row_order() {
    let expected = "k,lo,hi\n1,-0.0,NaN\n2,1.5,NaN\n3,-inf,-inf\n";
    let rows = [
        (1, "1.5"),
        (1, "0"),
        (1, "-0"),
        (1, "NaN"),
        (1, "inf"),
        (2, "1.5"),
        (2, "NaN"),
        (3, "-inf"),
    ];
    assert_eq!(run(&rows), expected);
    let mut reversed = rows;
    reversed.reverse();
    let out = run(&reversed);
    // Keys come out in order of first appearance: compare the rows.
    let mut lines: Vec<&str> = out.lines().collect();
    lines[1..].sort_unstable();
    assert_eq!(lines.join("\n") + "\n", expected);
}
