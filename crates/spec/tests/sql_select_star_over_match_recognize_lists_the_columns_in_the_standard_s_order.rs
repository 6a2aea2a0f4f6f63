//! `SELECT *` over `MATCH_RECOGNIZE` gives the columns of the row pattern output table in the
//! standard's order, as Trino and Oracle do: for `ONE ROW PER MATCH` the `PARTITION BY`
//! columns then the measures (the pattern operator's own order), for `ALL ROWS PER MATCH`
//! the `PARTITION BY` columns, the `ORDER BY` columns, the measures, then the input's other
//! columns in the input's order — which the lowering spells out in the map over the pattern
//! operator, whose own order (the input's columns, then the measures) `.flow` scripts keep.
//! `AFTER MATCH`, `SUBSET` and the options of all rows per match change none of it; an
//! explicit select list is left as written.

use anduin_spec::{parse_sql, OperatorDef, Spec};

/// `ev`'s columns are not in the standard's order for a match partitioned by `sensor`.
const TABLES: &str = "CREATE TABLE ev (ts TIMESTAMP, sensor BIGINT, site BIGINT, value BIGINT)
WITH (connector = 'file', path = '${INPUT}', format = 'csv', event_time = 'ts', watermark = '2 seconds');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}', format = 'csv');
";

fn spec(sql: &str) -> Spec {
    parse_sql(&format!("{TABLES}{sql}")).unwrap_or_else(|d| panic!("{sql}\n{d}"))
}

/// `SELECT {select}` over a match of `PATTERN (A B+ C)` with `clauses` before the pattern.
fn over(select: &str, clauses: &str) -> String {
    format!(
        "INSERT INTO out SELECT {select} FROM ev MATCH_RECOGNIZE (
  PARTITION BY sensor ORDER BY ts MEASURES LAST(B.ts) AS b_ts
  {clauses}
  PATTERN (A B+ C) SUBSET U = (B, C)
  DEFINE B AS B.value < PREV(B.value), C AS C.value > LAST(B.value)
) AS m;"
    )
}

fn op<'s>(spec: &'s Spec, name: &str) -> &'s OperatorDef {
    spec.operators
        .iter()
        .find(|o| o.name.as_str() == name)
        .unwrap_or_else(|| panic!("no operator {name}"))
}

/// The select list of the map over the pattern operator.
fn select_list(sql: &str) -> String {
    let spec = spec(sql);
    let map = op(&spec, "insert1_select");
    assert_eq!(map.kind.as_str(), "map");
    assert_eq!(map.inputs[0].as_str(), "insert1_pattern");
    map.params
        .iter()
        .find(|p| p.name.as_str() == "columns")
        .map(|p| p.value.as_text().as_str().to_string())
        .expect("a select list")
}

#[test]
fn all_rows_per_match_gives_partition_then_order_columns_then_measures_then_the_other_columns() {
    let standard = "\"sensor\", \"ts\", \"b_ts\", \"site\", \"value\"";
    for rows in [
        "ALL ROWS PER MATCH",
        "ALL ROWS PER MATCH SHOW EMPTY MATCHES",
        "ALL ROWS PER MATCH OMIT EMPTY MATCHES",
        "ALL ROWS PER MATCH WITH UNMATCHED ROWS",
    ] {
        for skip in [
            "",
            "AFTER MATCH SKIP TO NEXT ROW",
            "AFTER MATCH SKIP TO LAST U",
        ] {
            let sql = over("*", &format!("{rows} {skip}"));
            assert_eq!(select_list(&sql), standard, "{sql}");
            let sql = over("m.*", &format!("{rows} {skip}"));
            assert_eq!(select_list(&sql), standard, "{sql}");
        }
    }
    // A tie-breaker of ORDER BY follows the event time, before the measures.
    let sql =
        over("*, 1 AS one", "ALL ROWS PER MATCH").replace("ORDER BY ts", "ORDER BY ts, site DESC");
    assert_eq!(
        select_list(&sql),
        "\"sensor\", \"ts\", \"site\", \"b_ts\", \"value\", 1 AS one"
    );
}

#[test]
fn one_row_per_match_gives_the_partition_columns_then_the_measures() {
    // The pattern operator's own order: `*` passes it on.
    for clauses in [
        "",
        "ONE ROW PER MATCH",
        "ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW",
        "AFTER MATCH SKIP TO FIRST U",
    ] {
        assert_eq!(select_list(&over("*", clauses)), "*", "{clauses}");
    }
    // Into a table of other names, INSERT is positional: sensor then b_ts.
    let sql = format!(
        "CREATE TABLE named (k BIGINT, b TIMESTAMP) WITH (connector = 'file', path = 'n.csv', format = 'csv');
{}",
        over("*", "ONE ROW PER MATCH").replace("INTO out", "INTO named")
    );
    let spec = spec(&sql);
    let renamed = op(&spec, "insert1_insert");
    assert_eq!(
        renamed.params[0].value.as_text().as_str(),
        "\"sensor\" AS \"k\", \"b_ts\" AS \"b\""
    );
}

#[test]
fn an_explicit_select_list_is_left_as_written() {
    let sql = over("value, m.b_ts, sensor", "ALL ROWS PER MATCH");
    assert_eq!(select_list(&sql), "value, b_ts, sensor");
}

#[test]
fn a_subquery_over_all_rows_per_match_has_the_standard_s_columns() {
    // Positional INSERT into a table of other names, through a subquery's `*`.
    let inner = over("*", "ALL ROWS PER MATCH")
        .replace("INSERT INTO out SELECT * FROM ", "")
        .replace(";", "");
    let sql = format!(
        "CREATE TABLE named (p BIGINT, t TIMESTAMP, b TIMESTAMP, s BIGINT, v BIGINT)
WITH (connector = 'file', path = 'n.csv', format = 'csv');
INSERT INTO named SELECT * FROM (SELECT * FROM {inner}) AS q;"
    );
    let spec = spec(&sql);
    let renamed = op(&spec, "insert1_insert");
    assert_eq!(
        renamed.params[0].value.as_text().as_str(),
        "\"sensor\" AS \"p\", \"ts\" AS \"t\", \"b_ts\" AS \"b\", \"site\" AS \"s\", \"value\" AS \"v\""
    );
}
