//! From the hostile probe of issue 18: the hints of `MATCH_RECOGNIZE`'s `PARTITION BY` and
//! `ORDER BY`. The rewrite suggested for an expression among the tie-breakers named its new
//! column `k` even when the table had a `k` (the rewrite then failed on a duplicate column),
//! and went as one quoted piece that messages cut at 80 characters; a column written in
//! another case than the table's was refused with no word that column names are
//! case-sensitive.

use anduin_spec::parse_sql;

const TABLES: &str =
    "CREATE TABLE ev (ts TIMESTAMP, sensor BIGINT, k BIGINT, K2 BIGINT, \"Site\" BIGINT)
WITH (connector = 'file', path = '${INPUT}', format = 'csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}', format = 'csv');
";

/// A query over ev partitioned by `partition` and ordered by `order`.
fn query(partition: &str, order: &str) -> String {
    format!(
        "INSERT INTO out SELECT * FROM ev MATCH_RECOGNIZE (
  PARTITION BY {partition} ORDER BY {order} MEASURES LAST(B.ts) AS b_ts
  PATTERN (A B+)
  DEFINE B AS B.k < PREV(B.k)
);"
    )
}

/// The first error of `sql` after the tables, as "line:col: message".
fn error(sql: &str) -> String {
    match parse_sql(&format!("{TABLES}{sql}")) {
        Ok(_) => panic!("no error for {sql}"),
        Err(d) => d.0.first().map(|d| d.to_string()).unwrap_or_default(),
    }
}

#[test]
fn the_rewrite_of_an_expression_in_order_by_names_a_column_the_table_does_not_have() {
    let err = error(&query("sensor", "ts, sensor * 1000 + abs(k - 17)"));
    // `k` and `k2` (in any case) are the table's: the new column is `k3`.
    assert!(
        err.contains("`FROM (SELECT *, sensor * 1000 + abs(k - 17) AS k3 FROM ev)`"),
        "{err}"
    );
    assert!(err.contains("`ORDER BY ts, k3`"), "{err}");
    // Each piece is short: the message repeats it whole.
    assert!(!err.contains('…'), "{err}");
}

#[test]
fn a_column_in_another_case_than_the_table_s_is_refused_with_its_case() {
    let err = error(&query("site", "ts"));
    assert!(
        err.contains("PARTITION BY: table `ev` has no column `site`"),
        "{err}"
    );
    assert!(
        err.contains("column names are case-sensitive: write `Site`"),
        "{err}"
    );
    let err = error(&query("sensor", "ts, SENSOR"));
    assert!(
        err.contains("column names are case-sensitive: write `sensor`"),
        "{err}"
    );
    // A column no case matches gets no such hint.
    let err = error(&query("nope", "ts"));
    assert!(err.contains("has no column `nope`"), "{err}");
    assert!(!err.contains("case-sensitive"), "{err}");
}
