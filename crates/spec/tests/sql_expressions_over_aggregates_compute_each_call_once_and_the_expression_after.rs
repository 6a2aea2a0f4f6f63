//! Expressions over aggregates (issue 17): each aggregate call in a select item or HAVING is
//! one column of the window or aggregate operator (the item's own column when the select list
//! computes that call, a hidden `__agg1`, `__having1`, … otherwise, each call once); the map
//! after the operator computes the expression over those columns and the keys, and a
//! windowed HAVING is a filter between them.

use anduin_spec::{parse_sql, OperatorDef, Spec, Value};

const T: &str =
    "CREATE TABLE t (ts TIMESTAMP, k BIGINT, a BIGINT, b BIGINT) WITH (connector = 'file', path = 't.csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'o.csv', mode = 'changelog');
";

fn spec(insert: &str) -> Spec {
    parse_sql(&format!("{T}{insert}")).unwrap_or_else(|d| panic!("{insert}\n{d}"))
}

fn param(spec: &Spec, op: &str, name: &str) -> String {
    let op: &OperatorDef = spec
        .operators
        .iter()
        .find(|o| o.name.as_str() == op)
        .unwrap_or_else(|| panic!("no operator {op}"));
    match &op.param(name).expect("the param").value {
        Value::String(t) => t.as_str().to_string(),
        other => format!("{other:?}"),
    }
}

#[test]
fn a_window_computes_each_call_once_and_filters_and_maps_its_results() {
    let s = spec(
        "INSERT INTO out SELECT window_start, k, SUM(a) / COUNT(*) AS avg_a, MAX(b) - MIN(b) AS spread, COUNT(*) AS n, k * 2 AS k2
FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY window_start, window_end, k HAVING COUNT(*) > 1 AND SUM(b) > 0;",
    );
    let kinds: Vec<&str> = s.operators.iter().map(|o| o.kind.as_str()).collect();
    assert_eq!(kinds, ["reader", "window", "filter", "map", "writer"]);
    assert_eq!(
        param(&s, "insert1_window", "aggregates"),
        "COUNT(*) AS n, SUM(a) AS \"__agg1\", MAX(b) AS \"__agg2\", MIN(b) AS \"__agg3\", SUM(b) AS \"__having1\""
    );
    assert_eq!(
        param(&s, "insert1_having", "condition"),
        "\"n\" > 1 AND \"__having1\" > 0"
    );
    assert_eq!(
        param(&s, "insert1_select", "columns"),
        "window_start, k, \"__agg1\" / \"n\" AS \"avg_a\", \"__agg2\" - \"__agg3\" AS \"spread\", \"n\", k * 2 AS \"k2\""
    );
}

#[test]
fn a_group_by_without_a_window_computes_its_expressions_in_the_map_after_it() {
    let s = spec(
        "INSERT INTO out SELECT q.k, MAX(q.b) - MIN(q.b), k % 7 + COUNT(*) AS x FROM t AS q GROUP BY q.k HAVING MAX(b) - MIN(b) > 2;",
    );
    assert_eq!(
        param(&s, "insert1_group", "aggregates"),
        "MAX(q.b) AS \"__agg1\", MIN(q.b) AS \"__agg2\", COUNT(*) AS \"__agg3\", MAX(b) AS \"__having1\", MIN(b) AS \"__having2\""
    );
    assert_eq!(
        param(&s, "insert1_group", "having"),
        "\"__having1\" - \"__having2\" > 2"
    );
    assert_eq!(
        param(&s, "insert1_select", "columns"),
        "k, \"__agg1\" - \"__agg2\" AS \"MAX(q.b) - MIN(q.b)\", k % 7 + \"__agg3\" AS \"x\""
    );
}

#[test]
fn a_column_neither_grouped_nor_aggregated_in_an_expression_is_refused_where_it_is() {
    for (insert, col) in [
        ("INSERT INTO out SELECT k, SUM(a) + b AS x FROM t GROUP BY k;", 36),
        (
            "INSERT INTO out SELECT window_start, k, MAX(a) - b AS x FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, k;",
            50,
        ),
        ("INSERT INTO out SELECT k, COUNT(*) AS n FROM t GROUP BY k HAVING a > 1;", 66),
    ] {
        let d = parse_sql(&format!("{T}{insert}")).expect_err(insert);
        let e = &d.0[0];
        assert_eq!((e.pos.line, e.pos.col), (3, col), "{insert}: {}", e.message);
        assert!(
            e.message.contains("is neither grouped by nor aggregated"),
            "{insert}: {}",
            e.message
        );
    }
}

/// The script's own aggregates count as aggregates in an expression and in HAVING, called in
/// any case, quoted or not.
#[test]
fn the_script_s_own_aggregate_is_computed_by_the_operator_in_an_expression() {
    let s = spec(
        "CREATE AGGREGATE \"Mean\"(x BIGINT) RETURNS DOUBLE LANGUAGE javascript AS $$ $$;
INSERT INTO out SELECT k, \"Mean\"(a) * 2 AS m2 FROM t GROUP BY k HAVING MEAN(b) > 1;",
    );
    assert_eq!(
        param(&s, "insert1_group", "aggregates"),
        "\"Mean\"(a) AS \"__agg1\", MEAN(b) AS \"__having1\""
    );
    assert_eq!(
        param(&s, "insert1_select", "columns"),
        "k, \"__agg1\" * 2 AS \"m2\""
    );
}

/// HAVING may name a select item's alias (Flink refuses it; DataFusion and MySQL read it):
/// the alias stands for the item's expression, whose calls the select list computes already.
/// A name the GROUP BY groups by is that column; inside an aggregate a name is a column.
#[test]
fn having_reads_a_select_alias_as_the_expression_it_names() {
    let s = spec(
        "INSERT INTO out SELECT k, COUNT(*) AS n, MAX(b) - MIN(b) AS spread FROM t GROUP BY k HAVING n > 1 AND spread > 2;",
    );
    assert_eq!(
        param(&s, "insert1_group", "aggregates"),
        "COUNT(*) AS n, MAX(b) AS \"__agg1\", MIN(b) AS \"__agg2\""
    );
    assert_eq!(
        param(&s, "insert1_group", "having"),
        "(\"n\") > 1 AND (\"__agg1\" - \"__agg2\") > 2"
    );
    let windowed = spec(
        "INSERT INTO out SELECT window_start, k, SUM(a) * 2 AS s2 FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, k HAVING s2 > 10;",
    );
    assert_eq!(
        param(&windowed, "insert1_having", "condition"),
        "(\"__agg1\" * 2) > 10"
    );
    // A name inside an aggregate's argument stays a column (of the input, which the
    // aggregate operator then checks), and a grouped name is the key, alias or not.
    let s = spec(
        "INSERT INTO out SELECT k, COUNT(*) AS n FROM t GROUP BY k HAVING SUM(n) > 1 AND k > 0;",
    );
    assert_eq!(
        param(&s, "insert1_group", "aggregates"),
        "COUNT(*) AS n, SUM(n) AS \"__having1\""
    );
    assert_eq!(
        param(&s, "insert1_group", "having"),
        "\"__having1\" > 1 AND k > 0"
    );
}
