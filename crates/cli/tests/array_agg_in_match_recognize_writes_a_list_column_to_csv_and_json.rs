//! Issue 18: `array_agg(…)` in MATCH_RECOGNIZE's MEASURES is a list column: the CSV writer
//! prints it as Trino prints an array (`[95, 90]`, quoted as a field holding the delimiter),
//! the JSON writer as a JSON array; RUNNING over the rows so far, FINAL over the whole match,
//! through `SELECT *` and a projection.
//!
//! The input is one customer's orders (gross = totalprice + tax); `PATTERN (A B+ C+)`, B a
//! fall and C a rise of the gross, matches t2–t6 (prices 95 90 92 80 85; B = t3 t4) and t7–t9
//! (85 70 75; B = t8), as worked out by hand in
//! `navigation_in_match_recognize_evaluates_an_expression_at_the_row_it_names.rs`.

use crate::common;

use common::{anduin_ok, output_rows};

const INPUT: &str = "ts,custkey,totalprice,tax
1000,1,100,10
2000,1,95,20
3000,1,90,15
4000,1,92,5
5000,1,80,30
6000,1,85,30
7000,1,85,20
8000,1,70,10
9000,1,75,10
";

const PATTERN: &str = "  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B+ C+)
  DEFINE
    B AS B.totalprice + B.tax < PREV(B.totalprice + B.tax),
    C AS C.totalprice + C.tax > PREV(C.totalprice + C.tax)
)";

/// The output rows (sorted) of `query`, whose sink is `out.<format>`.
fn run(format: &str, query: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), INPUT).expect("input");
    let tables = format!(
        "CREATE TABLE orders (ts BIGINT, custkey BIGINT, totalprice BIGINT, tax BIGINT)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'out.{format}', format = '{format}');
"
    );
    std::fs::write(dir.path().join("q.sql"), format!("{tables}{query}")).expect("query");
    anduin_ok(dir.path(), &["run", "q.sql"]);
    output_rows(&dir.path().join(format!("out.{format}")))
}

const ONE_ROW: &str = "INSERT INTO out
SELECT * FROM orders MATCH_RECOGNIZE (
  PARTITION BY custkey
  ORDER BY ts
  MEASURES
    array_agg(B.totalprice) AS falls,
    array_agg(totalprice + tax) AS gross,
    array_agg(CLASSIFIER()) AS vars,
    array_agg(B.tax) FILTER (WHERE B.tax > 100) AS none
  ONE ROW PER MATCH
";

#[test]
fn one_row_per_match_writes_lists_as_trino_prints_arrays_in_csv() {
    assert_eq!(
        run("csv", &format!("{ONE_ROW}{PATTERN};\n")),
        [
            "1,\"[90, 92]\",\"[115, 105, 97, 110, 115]\",\"[A, B, B, C, C]\",",
            "1,[70],\"[105, 80, 85]\",\"[A, B, C]\",",
        ],
        "custkey, falls, gross, vars, none"
    );
}

#[test]
fn one_row_per_match_writes_lists_as_json_arrays() {
    assert_eq!(
        run("jsonl", &format!("{ONE_ROW}{PATTERN};\n")),
        [
            r#"{"custkey":1,"falls":[70],"gross":[105,80,85],"vars":["A","B","C"],"none":null}"#,
            r#"{"custkey":1,"falls":[90,92],"gross":[115,105,97,110,115],"vars":["A","B","B","C","C"],"none":null}"#,
        ]
    );
}

#[test]
fn all_rows_per_match_writes_the_running_and_the_final_lists() {
    let query = format!(
        "INSERT INTO out
SELECT ts, so_far, whole
FROM orders MATCH_RECOGNIZE (
  PARTITION BY custkey
  ORDER BY ts
  MEASURES
    RUNNING array_agg(B.totalprice) AS so_far,
    FINAL array_agg(totalprice ORDER BY totalprice) AS whole
  ALL ROWS PER MATCH
{PATTERN};
"
    );
    assert_eq!(
        run("csv", &query),
        [
            "2000,,\"[80, 85, 90, 92, 95]\"",
            "3000,[90],\"[80, 85, 90, 92, 95]\"",
            "4000,\"[90, 92]\",\"[80, 85, 90, 92, 95]\"",
            "5000,\"[90, 92]\",\"[80, 85, 90, 92, 95]\"",
            "6000,\"[90, 92]\",\"[80, 85, 90, 92, 95]\"",
            "7000,,\"[70, 75, 85]\"",
            "8000,[70],\"[70, 75, 85]\"",
            "9000,[70],\"[70, 75, 85]\"",
        ],
        "ts, so_far, whole"
    );
}
