//! `FROM (SELECT … FROM t WHERE …) [AS s] MATCH_RECOGNIZE (…)` and `FROM (a JOIN b ON …)
//! MATCH_RECOGNIZE (…)`, as a Trino or Oracle user writes them: the subquery or the join is
//! lowered as in any FROM and the pattern reads its stream; errors inside it keep their
//! places; a table function before MATCH_RECOGNIZE is refused at its place.

use anduin_spec::{parse_sql, OperatorDef, Spec, Value};

const TABLES: &str = "CREATE TABLE ev (ts TIMESTAMP, sensor BIGINT, site BIGINT, value BIGINT)
WITH (connector = 'file', path = '${INPUT}', format = 'csv', event_time = 'ts', watermark = '2 seconds');
CREATE TABLE sites (ts TIMESTAMP, site BIGINT, region BIGINT)
WITH (connector = 'file', path = 'sites.csv', format = 'csv', event_time = 'ts', watermark = '2 seconds');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}', format = 'csv');
";

/// The pattern's clauses after `input`.
fn over(input: &str) -> String {
    format!(
        "INSERT INTO out SELECT * FROM {input} MATCH_RECOGNIZE (
  PARTITION BY sensor ORDER BY ts MEASURES LAST(B.ts) AS b_ts, COUNT(B.*) AS n
  PATTERN (A B+)
  DEFINE B AS B.value < PREV(B.value)
);"
    )
}

fn spec(sql: &str) -> Spec {
    parse_sql(&format!("{TABLES}{sql}")).unwrap_or_else(|d| panic!("{sql}\n{d}"))
}

fn op<'s>(spec: &'s Spec, kind: &str) -> &'s OperatorDef {
    spec.operators
        .iter()
        .find(|o| o.kind.as_str() == kind)
        .unwrap_or_else(|| panic!("no {kind} operator"))
}

fn param(op: &OperatorDef, name: &str) -> Option<String> {
    op.params
        .iter()
        .find(|p| p.name.as_str() == name)
        .map(|p| match &p.value {
            Value::String(t) => t.as_str().to_string(),
            other => panic!("param {name} is not a string: {other:?}"),
        })
}

/// The operators of `spec` as (kind, name, input).
fn graph(spec: &Spec) -> Vec<(String, String, String)> {
    spec.operators
        .iter()
        .map(|o| {
            (
                o.kind.as_str().to_string(),
                o.name.as_str().to_string(),
                o.inputs
                    .first()
                    .map(|i| i.as_str().to_string())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

/// Where `needle` first occurs in `script`, as "line:col".
fn place(script: &str, needle: &str) -> String {
    let at = script
        .find(needle)
        .unwrap_or_else(|| panic!("no `{needle}`"));
    let before = &script[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.chars().rev().take_while(|c| *c != '\n').count() + 1;
    format!("{line}:{col}")
}

/// The first error of `sql` after the tables, as "line:col: message".
fn error(sql: &str) -> String {
    match parse_sql(&format!("{TABLES}{sql}")) {
        Ok(_) => panic!("no error for {sql}"),
        Err(d) => d.0.first().map(|d| d.to_string()).unwrap_or_default(),
    }
}

#[test]
fn a_pattern_over_a_subquery_reads_the_subquery_s_filtered_and_mapped_rows() {
    let spec = spec(&over(
        "(SELECT ts, sensor, value * 2 AS value FROM ev WHERE site = 1)",
    ));
    let g = graph(&spec);
    let kinds: Vec<&str> = g.iter().map(|(k, _, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        ["reader", "filter", "map", "pattern", "map", "writer"],
        "{g:?}"
    );
    let map = &spec.operators[2];
    assert_eq!(
        param(map, "columns").as_deref(),
        Some("ts, sensor, value * 2 AS value")
    );
    let pattern = op(&spec, "pattern");
    assert_eq!(pattern.inputs[0].as_str(), map.name.as_str());
    assert_eq!(param(pattern, "partition_by").as_deref(), Some("sensor"));
    assert_eq!(param(pattern, "order_by").as_deref(), Some("ts"));
}

#[test]
fn a_subquery_s_alias_names_its_operators_and_may_qualify_the_partition_columns() {
    let spec = spec(
        &over("(SELECT * FROM ev WHERE value > 0) AS s")
            .replace("PARTITION BY sensor", "PARTITION BY s.sensor"),
    );
    let g = graph(&spec);
    assert!(
        g.iter()
            .any(|(k, n, _)| k == "filter" && n == "insert1_s_where"),
        "{g:?}"
    );
    assert_eq!(
        param(op(&spec, "pattern"), "partition_by").as_deref(),
        Some("sensor")
    );
    // Without AS, and over several lines.
    let spec = self::spec(&over("(\n  SELECT *\n  FROM ev\n  WHERE value > 0\n) s"));
    let input = op(&spec, "pattern").inputs[0].as_str();
    assert!(input.starts_with("insert1_s_"), "{input}");
}

#[test]
fn a_pattern_over_a_subquery_orders_by_the_subquery_s_time_column() {
    let e = error(&over("(SELECT ts AS t, sensor, value FROM ev)"));
    assert!(
        e.contains("ORDER BY: the subquery has no column `ts` (columns: t, sensor, value)"),
        "{e}"
    );
    let spec = spec(&over("(SELECT ts AS t, sensor, value FROM ev)").replace("BY ts", "BY t"));
    assert_eq!(
        param(op(&spec, "pattern"), "order_by").as_deref(),
        Some("t")
    );
}

#[test]
fn errors_inside_the_subquery_keep_their_places_in_the_script() {
    for (input, at, message) in [
        (
            "(SELECT ts, sensor, value FROM ev WHERE value >)",
            ")",
            "syntax error",
        ),
        (
            "(SELECT ts, sensor, value FROM nowhere)",
            "nowhere",
            "nowhere",
        ),
        (
            "(SELECT DISTINCT ts, sensor, value FROM ev)",
            "SELECT DISTINCT",
            "SELECT DISTINCT is not supported yet",
        ),
    ] {
        let sql = over(input);
        let script = format!("{TABLES}{sql}");
        let offset = script.find(input).expect("the input") + input.find(at).expect("at");
        let before = &script[..offset];
        let line = before.matches('\n').count() + 1;
        let col = before.chars().rev().take_while(|c| *c != '\n').count() + 1;
        let e = error(&sql);
        assert!(
            e.starts_with(&format!("{line}:{col}: ")) && e.contains(message),
            "{sql}\n  got {e}\n  expected {line}:{col}: …{message}…"
        );
    }
}

#[test]
fn a_subquery_holding_a_pattern_over_a_subquery_lowers_both() {
    let inner = over("(SELECT * FROM ev WHERE value > 0)")
        .replace("INSERT INTO out SELECT * FROM ", "")
        .replace(");", ")");
    let sql = format!(
        "INSERT INTO out SELECT * FROM (SELECT sensor, b_ts AS ts, n AS value FROM {inner}) MATCH_RECOGNIZE (
  ORDER BY ts MEASURES COUNT(*) AS k PATTERN (X Y) DEFINE Y AS Y.value > X.value);"
    );
    let spec = spec(&sql);
    let patterns: Vec<&OperatorDef> = spec
        .operators
        .iter()
        .filter(|o| o.kind.as_str() == "pattern")
        .collect();
    assert_eq!(patterns.len(), 2, "{:?}", graph(&spec));
    assert_eq!(param(patterns[1], "pattern").as_deref(), Some("X Y"));
}

#[test]
fn a_pattern_over_a_parenthesized_join_reads_the_joined_rows() {
    let spec = spec(&over(
        "(ev JOIN sites ON ev.site = sites.site AND ev.ts BETWEEN sites.ts - INTERVAL '1' MINUTE AND sites.ts)",
    ));
    let g = graph(&spec);
    let kinds: Vec<&str> = g.iter().map(|(k, _, _)| k.as_str()).collect();
    assert!(kinds.contains(&"join"), "{g:?}");
    let pattern = op(&spec, "pattern");
    let feeder = g
        .iter()
        .find(|(_, n, _)| n == pattern.inputs[0].as_str())
        .expect("the pattern's input");
    assert!(feeder.1.starts_with("insert1_subquery1"), "{g:?}");
}

#[test]
fn a_pattern_over_a_table_function_is_refused_at_its_parenthesis() {
    let sql = over("TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' SECOND))");
    let script = format!("{TABLES}{sql}");
    let e = error(&sql);
    let at = place(&script, "(TUMBLE");
    assert!(
        e.starts_with(&format!("{at}: ")) && e.contains("MATCH_RECOGNIZE over a table function"),
        "{e}"
    );
}
