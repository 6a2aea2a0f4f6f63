//! Issue 18: `listagg(…) WITHIN GROUP (ORDER BY …)` (Trino's and Oracle's form; `string_agg`
//! too) in MATCH_RECOGNIZE's MEASURES joins the strings in the order of its keys, not of the
//! rows in the match; RUNNING over the rows so far, FINAL over the whole match.
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

const TABLES: &str =
    "CREATE TABLE orders (ts BIGINT, custkey BIGINT, totalprice BIGINT, tax BIGINT)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv', format = 'csv');
";

const PATTERN: &str = "  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B+ C+)
  DEFINE
    B AS B.totalprice + B.tax < PREV(B.totalprice + B.tax),
    C AS C.totalprice + C.tax > PREV(C.totalprice + C.tax)
)";

fn run(query: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), INPUT).expect("input");
    std::fs::write(dir.path().join("q.sql"), query).expect("query");
    anduin_ok(dir.path(), &["run", "q.sql"]);
    output_rows(&dir.path().join("out.csv"))
}

#[test]
fn one_row_per_match_joins_the_strings_in_the_order_of_their_keys() {
    let query = format!(
        "{TABLES}INSERT INTO out
SELECT * FROM orders MATCH_RECOGNIZE (
  PARTITION BY custkey
  ORDER BY ts
  MEASURES
    listagg(CAST(totalprice AS VARCHAR), ';') WITHIN GROUP (ORDER BY totalprice) AS prices,
    LISTAGG(CAST(B.totalprice AS VARCHAR), '/') WITHIN GROUP (ORDER BY B.totalprice DESC) AS falls,
    string_agg(CAST(tax AS VARCHAR), ';' ORDER BY tax DESC, ts) AS taxes
  ONE ROW PER MATCH
{PATTERN};
"
    );
    assert_eq!(
        run(&query),
        // (Sorted.)
        [
            "1,70;75;85,70,20;10;10",
            "1,80;85;90;92;95,92/90,30;30;20;15;5"
        ],
        "custkey, prices, falls, taxes"
    );
}

#[test]
fn all_rows_per_match_orders_the_running_and_the_final_strings() {
    let query = format!(
        "{TABLES}INSERT INTO out
SELECT ts, so_far, whole
FROM orders MATCH_RECOGNIZE (
  PARTITION BY custkey
  ORDER BY ts
  MEASURES
    RUNNING listagg(CAST(totalprice AS VARCHAR), ';') WITHIN GROUP (ORDER BY totalprice) AS so_far,
    FINAL listagg(CAST(totalprice AS VARCHAR), ';') WITHIN GROUP (ORDER BY totalprice DESC) AS whole
  ALL ROWS PER MATCH
{PATTERN};
"
    );
    assert_eq!(
        run(&query),
        [
            "2000,95,95;92;90;85;80",
            "3000,90;95,95;92;90;85;80",
            "4000,90;92;95,95;92;90;85;80",
            "5000,80;90;92;95,95;92;90;85;80",
            "6000,80;85;90;92;95,95;92;90;85;80",
            "7000,85,85;75;70",
            "8000,70;85,85;75;70",
            "9000,70;75;85,85;75;70",
        ],
        "ts, so_far, whole"
    );
}

#[test]
fn a_constant_separator_joins_as_its_value_and_a_per_row_one_is_refused_at_its_place() {
    let query = format!(
        "{TABLES}INSERT INTO out
SELECT * FROM orders MATCH_RECOGNIZE (
  PARTITION BY custkey
  ORDER BY ts
  MEASURES
    listagg(CAST(totalprice AS VARCHAR), ',' || ' ') WITHIN GROUP (ORDER BY totalprice) AS prices
  ONE ROW PER MATCH
{PATTERN};
"
    );
    assert_eq!(
        run(&query),
        ["1,\"70, 75, 85\"", "1,\"80, 85, 90, 92, 95\""],
        "custkey, prices (quoted: they hold the separator's comma)"
    );
    // The separator read from each row: Oracle and DB2 want a constant, Trino a literal.
    let per_row = query.replace("',' || ' '", "CAST(A.tax AS VARCHAR)");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.sql"), per_row).expect("query");
    let out = common::anduin(dir.path(), &["check", "q.sql"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("q.sql:9:47: the separator of LISTAGG must be the same for every match: `CAST(A.tax AS VARCHAR)` reads a row's column"),
        "{stderr}"
    );
}
