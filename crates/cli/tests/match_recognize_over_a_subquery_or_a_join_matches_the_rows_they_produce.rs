//! Issue 18: `MATCH_RECOGNIZE` over a subquery, `FROM (SELECT … FROM t WHERE …) [AS s]
//! MATCH_RECOGNIZE (…)`, and over a join in parentheses, `FROM (a JOIN b ON …)
//! MATCH_RECOGNIZE (…)`, as a Trino or Oracle user writes them (Trino's `relationPrimary` is a
//! table, a `(query)` or a `(relation)`). The pattern matches the rows the subquery or the join
//! produces: its filter, its computed columns, the joined table's columns.
//!
//! The input, one customer's orders (gross = totalprice + tax):
//!
//! | ts | totalprice | tax | gross |
//! |---:|-----------:|----:|------:|
//! | 1  | 100        | 10  | 110   |
//! | 2  | 95         | 20  | 115   |
//! | 3  | 90         | 15  | 105   |
//! | 4  | 92         | 5   | 97    |
//! | 5  | 80         | 30  | 110   |
//! | 6  | 85         | 30  | 115   |
//! | 7  | 85         | 20  | 105   |
//! | 8  | 70         | 10  | 80    |
//! | 9  | 75         | 10  | 85    |
//!
//! `PATTERN (A B+ C+)`, B a fall and C a rise of the gross. Over all rows: A = t2, B = t3 t4,
//! C = t5 t6 (t7 ends C+); then A = t7, B = t8, C = t9. Over the rows with `tax < 30` (t5 and
//! t6 left out): 110, 115, 105, 97, 105, 80, 85: A = t2, B = t3 t4, C = t7 (80 ends C+); then
//! from t8, B fails at t9. Worked out by hand.

use crate::common;

use common::{anduin_ok, output_rows};

const ORDERS: &str = "ts,custkey,totalprice,tax
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

const PATTERN: &str = "  PATTERN (A B+ C+)
  DEFINE
    B AS B.gross < PREV(B.gross),
    C AS C.gross > PREV(C.gross)
)";

fn run(tables: &str, query: &str, files: &[(&str, &str)]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("input");
    }
    std::fs::write(dir.path().join("q.sql"), format!("{tables}{query}")).expect("query");
    anduin_ok(dir.path(), &["run", "q.sql"]);
    output_rows(&dir.path().join("out.csv"))
}

const ORDERS_TABLE: &str =
    "CREATE TABLE orders (ts BIGINT, custkey BIGINT, totalprice BIGINT, tax BIGINT)
WITH (connector = 'file', path = 'orders.csv', format = 'csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv', format = 'csv');
";

#[test]
fn a_pattern_over_a_subquery_matches_its_filtered_and_computed_rows() {
    let query = format!(
        "INSERT INTO out
SELECT * FROM (
  SELECT ts, custkey, totalprice + tax AS gross FROM orders WHERE tax < 30
) AS o MATCH_RECOGNIZE (
  PARTITION BY o.custkey
  ORDER BY ts
  MEASURES FIRST(A.ts) AS start_ts, LAST(C.ts) AS end_ts, LAST(B.gross) AS bottom, COUNT(*) AS n
  ONE ROW PER MATCH
{PATTERN};
"
    );
    assert_eq!(
        run(ORDERS_TABLE, &query, &[("orders.csv", ORDERS)]),
        ["1,2000,7000,97,4"],
        "custkey, start_ts, end_ts, bottom, n"
    );
    // The same pattern without the subquery's WHERE finds the matches over all rows.
    let unfiltered = query.replace(" WHERE tax < 30", "");
    assert_eq!(
        run(ORDERS_TABLE, &unfiltered, &[("orders.csv", ORDERS)]),
        ["1,2000,6000,97,5", "1,7000,9000,80,3"],
        "custkey, start_ts, end_ts, bottom, n"
    );
}

#[test]
fn all_rows_per_match_over_a_subquery_outputs_its_partition_and_order_columns_the_measures_then_its_other_columns(
) {
    let query = format!(
        "INSERT INTO out
SELECT * FROM (SELECT ts, custkey, totalprice + tax AS gross FROM orders WHERE tax < 30)
MATCH_RECOGNIZE (
  PARTITION BY custkey
  ORDER BY ts
  MEASURES CLASSIFIER() AS label
  ALL ROWS PER MATCH
{PATTERN};
"
    );
    // `*` is the standard's order (Trino's): PARTITION BY, ORDER BY, the measures, the rest.
    assert_eq!(
        run(ORDERS_TABLE, &query, &[("orders.csv", ORDERS)]),
        [
            "1,2000,A,115",
            "1,3000,B,105",
            "1,4000,B,97",
            "1,7000,C,105"
        ],
        "custkey, ts, label, gross"
    );
}

#[test]
fn a_pattern_over_a_join_matches_the_joined_rows() {
    // The tax comes from a second stream, joined on the customer and the time.
    let prices = "ts,custkey,totalprice\n".to_string()
        + &ORDERS
            .lines()
            .skip(1)
            .map(|l| l.rsplit_once(',').map_or(l, |(head, _)| head).to_string() + "\n")
            .collect::<String>();
    let taxes = "ts,custkey,tax\n".to_string()
        + &ORDERS
            .lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                format!("{},{},{}\n", f[0], f[1], f[3])
            })
            .collect::<String>();
    let tables = "CREATE TABLE prices (ts BIGINT, custkey BIGINT, totalprice BIGINT)
WITH (connector = 'file', path = 'prices.csv', format = 'csv', event_time = 'ts');
CREATE TABLE taxes (ts BIGINT, custkey BIGINT, tax BIGINT)
WITH (connector = 'file', path = 'taxes.csv', format = 'csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv', format = 'csv');
";
    let query = "INSERT INTO out
SELECT * FROM (prices JOIN taxes ON prices.custkey = taxes.custkey AND prices.ts = taxes.ts)
MATCH_RECOGNIZE (
  PARTITION BY custkey
  ORDER BY ts
  MEASURES FIRST(A.ts) AS start_ts, LAST(C.ts) AS end_ts, LAST(B.totalprice + B.tax) AS bottom
  ONE ROW PER MATCH
  PATTERN (A B+ C+)
  DEFINE
    B AS B.totalprice + B.tax < PREV(B.totalprice + B.tax),
    C AS C.totalprice + C.tax > PREV(C.totalprice + C.tax)
);
";
    assert_eq!(
        run(
            tables,
            query,
            &[("prices.csv", &prices), ("taxes.csv", &taxes)]
        ),
        ["1,2000,6000,97", "1,7000,9000,80"],
        "custkey, start_ts, end_ts, bottom"
    );
}

#[test]
fn a_pattern_over_a_regular_join_is_refused_naming_the_join_that_makes_its_input_updating() {
    let dir = tempfile::tempdir().expect("tempdir");
    let query = "CREATE TABLE prices (ts BIGINT, custkey BIGINT, totalprice BIGINT)
WITH (connector = 'file', path = 'prices.csv', format = 'csv', event_time = 'ts');
CREATE TABLE taxes (ts BIGINT, custkey BIGINT, tax BIGINT)
WITH (connector = 'file', path = 'taxes.csv', format = 'csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv', format = 'csv');
INSERT INTO out
SELECT * FROM (prices LEFT JOIN taxes ON prices.custkey = taxes.custkey)
MATCH_RECOGNIZE (
  ORDER BY ts MEASURES FIRST(A.ts) AS start_ts PATTERN (A B+)
  DEFINE B AS B.totalprice < PREV(B.totalprice)
);
";
    std::fs::write(dir.path().join("q.sql"), query).expect("query");
    let out = common::anduin(dir.path(), &["check", "q.sql"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("a row pattern over an updating stream is not supported yet")
            && stderr.contains("(regular_join) at 7:33"),
        "{stderr}"
    );
}
