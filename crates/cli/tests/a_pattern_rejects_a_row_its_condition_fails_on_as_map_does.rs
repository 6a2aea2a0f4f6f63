//! Issue 22, point 7, for the `pattern` operator (CEP, MATCH_RECOGNIZE): an expression fails
//! on a row as it does in a `map` (a division or `%` by zero, an integer overflow, a CAST that
//! does not fit), with the same message, instead of giving NULL. A row on which a DEFINE
//! condition fails goes to the dead letters, with the condition, its place in the query (in
//! the `.flow` or the `.sql` file) and the row's values, and the matches are those of the input
//! without that row; a match whose measure fails has its output row sent to the dead letters
//! (shown as the match's last row) and the other matches are emitted. With
//! `on_error = "fail"` (the param, or `anduin run --on-error fail`) the query stops, naming
//! the expression and its place.

use crate::common;

use common::{anduin, anduin_ok, dead_letters, output_rows};

/// Two sensors. Sensor 1: A (t0), B (t1), a row on which B's condition divides by zero (t2,
/// `d = 0`), B (t3), C (t4): one match, A B B C, as if t2 had never come. Sensor 2: A B C
/// whose measure `q` divides by zero (`LAST(B.value) = 4`), then A B C with `q = 25`.
const INPUT: &str = "ts,sensor,value,d
1700000000000,1,1,1
1700000000001,1,4,2
1700000000002,1,6,0
1700000000003,1,6,1
1700000000004,1,0,1
1700000000010,2,1,1
1700000000011,2,4,1
1700000000012,2,0,1
1700000000013,2,1,1
1700000000014,2,8,2
1700000000015,2,0,1
";

const FLOW: &str = r#"type name = "Row" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
  column name = "d", type = "int"
}
operator name = "src", type = "reader" {
  param path = "in.csv"
  param event_time = "ts"
  output name = "rows", type = "Row"
}
operator name = "p", type = "pattern" {
  input name = "rows"
  param partition_by = "sensor"
  param order_by = "ts"
  param pattern = "A B+ C"
  param define = "A AS A.value = 1"
  param define = "B AS B.value / B.d >= 2"
  param define = "C AS C.value = 0"
  param measures = """FIRST(A.ts) AS start_ts, COUNT(B.*) AS bs,
    100 / (LAST(B.value) - 4) AS q"""EXTRA
  output name = "matches"
}
operator name = "out", type = "writer" {
  input name = "matches"
  param path = "out.csv"
}
"#;

const SQL: &str = "CREATE TABLE ev (ts TIMESTAMP, sensor BIGINT, value BIGINT, d BIGINT)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv', format = 'csv');
INSERT INTO out
SELECT sensor, start_ts, bs, q
FROM ev
MATCH_RECOGNIZE (
  PARTITION BY sensor
  ORDER BY ts
  MEASURES
    FIRST(A.ts) AS start_ts,
    COUNT(B.*) AS bs,
    100 / (LAST(B.value) - 4) AS q
  ONE ROW PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B+ C)
  DEFINE
    A AS A.value = 1,
    B AS B.value / B.d >= 2,
    C AS C.value = 0
);
";

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

fn setup(file: &str, query: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), INPUT).expect("input");
    std::fs::write(dir.path().join(file), query).expect("query");
    dir
}

/// Runs `file` (`query`) and checks the matches and both dead-letter entries (of the pattern
/// operator named `operator`, if given: SQL names its operators itself).
fn the_row_and_the_match_go_to_the_dead_letters(file: &str, query: &str, operator: Option<&str>) {
    let dir = setup(file, query);
    let out = anduin_ok(dir.path(), &["run", file]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("2 rejected rows went to out.csv.rejected"),
        "{stderr}"
    );
    assert_eq!(
        output_rows(&dir.path().join("out.csv")),
        vec![
            "1,1700000000000,2,50".to_string(),
            "2,1700000000013,1,25".to_string()
        ],
        "sensor 1 matches A B B C without the row at t2; sensor 2's first match is rejected"
    );
    let rejected = dead_letters(&dir.path().join("out.csv.rejected"));
    assert_eq!(rejected.len(), 2, "{rejected:?}");

    let condition = &rejected[0];
    let name = condition["operator"].as_str().expect("an operator");
    assert!(operator.is_none_or(|o| o == name), "{condition}");
    assert_eq!(condition["reason"], "Divide by zero error");
    assert_eq!(condition["expression"], "B.value / B.d >= 2");
    assert_eq!(condition["at"], place(file, query, "B.value / B.d"));
    assert_eq!(
        condition["row"],
        serde_json::json!({"ts": "2023-11-14T22:13:20.002", "sensor": 1, "value": 6, "d": 0})
    );
    assert!(condition.get("line").is_none(), "{condition}");

    let measure = &rejected[1];
    assert_eq!(measure["operator"], name);
    assert_eq!(measure["reason"], "Divide by zero error");
    assert_eq!(measure["expression"], "100 / (LAST(B.value) - 4)");
    assert_eq!(measure["at"], place(file, query, "100 / (LAST"));
    // The match's last row (C, at t12 of sensor 2).
    assert_eq!(
        measure["row"],
        serde_json::json!({"ts": "2023-11-14T22:13:20.012", "sensor": 2, "value": 0, "d": 1})
    );
}

#[test]
fn a_flow_pattern_rejects_the_row_its_condition_fails_on_and_the_match_its_measure_fails_on() {
    the_row_and_the_match_go_to_the_dead_letters("q.flow", &FLOW.replace("EXTRA", ""), Some("p"));
}

#[test]
fn a_sql_match_recognize_rejects_them_too_at_their_places_in_the_sql_file() {
    the_row_and_the_match_go_to_the_dead_letters("q.sql", SQL, None);
}

#[test]
fn with_on_error_fail_the_pattern_stops_naming_the_condition_and_its_place() {
    let failing = FLOW.replace("EXTRA", "\n  param on_error = \"fail\"");
    let plain = FLOW.replace("EXTRA", "");
    for (file, query, flag) in [
        ("q.flow", failing.as_str(), None),
        ("q.flow", plain.as_str(), Some("--on-error=fail")),
        ("q.sql", SQL, Some("--on-error=fail")),
    ] {
        let dir = setup(file, query);
        let mut args = vec!["run", file];
        args.extend(flag);
        let out = anduin(dir.path(), &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        let at = place(file, query, "B.value / B.d");
        assert!(
            stderr.contains(&format!(
                "condition of `B` `B.value / B.d >= 2` failed at {at} on a row: Divide by zero error (the query stops because of `on_error = \"fail\"`"
            )),
            "{file} {flag:?}: {stderr}"
        );
        assert!(!dir.path().join("out.csv.rejected").exists());
    }
}

/// Rows of `ts,a,b,f,s` on which an expression fails for some and not for others.
const MIXED: &str = "ts,a,b,f,s
1700000000000,5,0,1.5,12
1700000000001,-9223372036854775808,-1,NaN,x1
1700000000002,9223372036854775807,1,-1.0, 7
1700000000003,7,3,1e30,-3
1700000000004,-7,2,0.0,
";

fn mixed_query(operator: &str, expr: &str) -> String {
    let op = match operator {
        "map" => format!(
            "operator name = \"op\", type = \"map\" {{\n  input name = \"rows\"\n  param columns = \"ts, {expr} AS q\"\n  output name = \"qs\"\n}}"
        ),
        _ => format!(
            "operator name = \"op\", type = \"pattern\" {{\n  input name = \"rows\"\n  param order_by = \"ts\"\n  param pattern = \"A\"\n  param rows_per_match = \"all\"\n  param measures = \"{expr} AS q\"\n  output name = \"qs\"\n}}"
        ),
    };
    format!(
        r#"type name = "Row" {{
  column name = "ts", type = "timestamp"
  column name = "a", type = "int"
  column name = "b", type = "int"
  column name = "f", type = "float"
  column name = "s", type = "string"
}}
operator name = "src", type = "reader" {{
  param path = "in.csv"
  param event_time = "ts"
  output name = "rows", type = "Row"
}}
{op}
operator name = "out", type = "writer" {{
  input name = "qs"
  param path = "out.csv"
}}
"#
    )
}

/// Pairs of texts: (ts, q) of output rows, or (ts, reason) of rejected rows.
type Pairs = Vec<(String, String)>;

/// (ts, q) of each output row, and (ts, reason) of each rejected row, of `operator`
/// computing `expr` on [`MIXED`].
fn results(operator: &str, expr: &str) -> (Pairs, Pairs) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), MIXED).expect("input");
    std::fs::write(dir.path().join("q.flow"), mixed_query(operator, expr)).expect("query");
    anduin_ok(dir.path(), &["run", "q.flow"]);
    let written = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
    let mut rows: Pairs = written
        .lines()
        .skip(1)
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            (
                cells[0].to_string(),
                cells.last().expect("a column").to_string(),
            )
        })
        .collect();
    rows.sort();
    let rejected_path = dir.path().join("out.csv.rejected");
    let mut rejected: Pairs = if rejected_path.exists() {
        dead_letters(&rejected_path)
            .iter()
            .map(|r| {
                (
                    r["row"]["ts"].as_str().expect("ts").to_string(),
                    r["reason"].as_str().expect("reason").to_string(),
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    rejected.sort();
    (rows, rejected)
}

#[test]
fn a_measure_gives_what_a_map_gives_for_the_same_expression_and_fails_where_it_fails() {
    for expr in [
        "a / b",
        "a % b",
        "a + b",
        "a - b",
        "a * 2",
        "-a",
        "f / 0.0",
        "f % 0.0",
        "a / 0.0",
        "CAST(f AS BIGINT)",
        "CAST(s AS BIGINT)",
        "CAST(s AS DOUBLE)",
    ] {
        let map = results("map", expr);
        let pattern = results("pattern", expr);
        assert_eq!(pattern, map, "{expr}: (pattern, map)");
    }
    let (_, rejected) = results("pattern", "a / b");
    assert_eq!(
        rejected,
        vec![
            (
                "2023-11-14T22:13:20".to_string(),
                "Divide by zero error".to_string()
            ),
            (
                "2023-11-14T22:13:20.001".to_string(),
                "Arithmetic overflow: Overflow happened on: -9223372036854775808 / -1".to_string()
            ),
        ]
    );
}
