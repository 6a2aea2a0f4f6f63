//! Flink's `SET 'table.exec.state.ttl' = '…';` before the query gives every updating
//! operator (regular join, GROUP BY without a window, OVER, top-N) the state time-to-live as
//! `param state_ttl`, in milliseconds; no other operator gets it. Another key, a bad
//! duration, or a SET after an INSERT are refused at their position.

use anduin_spec::{parse_sql, Spec, Value};

const TABLES: &str = "
CREATE TABLE o (ts TIMESTAMP, item BIGINT, qty BIGINT) WITH (connector = 'file', path = 'o.csv');
CREATE TABLE s (ts TIMESTAMP, item BIGINT, level BIGINT) WITH (connector = 'file', path = 's.csv');
CREATE TABLE out WITH (connector = 'discard');
CREATE TABLE out2 WITH (connector = 'discard');
";

const QUERY: &str = "
INSERT INTO out SELECT o.item, COUNT(*) AS n FROM o JOIN s ON o.item = s.item GROUP BY o.item;
INSERT INTO out2 SELECT item, qty FROM o WHERE qty > 1;";

fn ttls(spec: &Spec) -> Vec<(String, String)> {
    spec.operators
        .iter()
        .filter_map(|o| {
            o.param("state_ttl").map(|p| match &p.value {
                Value::String(t) => (o.kind.as_str().to_string(), t.as_str().to_string()),
                other => (o.kind.as_str().to_string(), format!("{other:?}")),
            })
        })
        .collect()
}

#[test]
fn a_leading_set_gives_the_join_and_the_aggregate_their_state_ttl() {
    let spec = parse_sql(&format!(
        "SET 'table.exec.state.ttl' = '1 h';{TABLES}{QUERY}"
    ))
    .unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(
        ttls(&spec),
        [
            ("regular_join".to_string(), "3600000ms".to_string()),
            ("aggregate".to_string(), "3600000ms".to_string())
        ]
    );
    let none = parse_sql(&format!("{TABLES}{QUERY}")).unwrap_or_else(|d| panic!("{d}"));
    assert!(ttls(&none).is_empty());
    let zero = parse_sql(&format!("SET 'table.exec.state.ttl' = '0';{TABLES}{QUERY}"))
        .unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(ttls(&zero).first().map(|t| t.1.as_str()), Some("0ms"));
}

#[test]
fn another_key_a_bad_duration_or_a_set_after_an_insert_is_refused_where_it_stands() {
    let refused = |sql: String| parse_sql(&sql).expect_err("refused").to_string();
    let e = refused(format!(
        "SET 'table.exec.mini-batch.enabled' = 'true';{TABLES}{QUERY}"
    ));
    assert!(
        e.contains("1:5")
            && e.contains("`SET 'table.exec.mini-batch.enabled'` is not supported")
            && e.contains("--state-ttl"),
        "{e}"
    );
    let e = refused(format!(
        "SET 'table.exec.state.ttl' = 'an hour';{TABLES}{QUERY}"
    ));
    assert!(e.contains("1:30") && e.contains("takes a duration"), "{e}");
    let e = refused(format!(
        "{TABLES}{QUERY}\nSET 'table.exec.state.ttl' = '1 h';"
    ));
    assert!(e.contains("must come before the first INSERT"), "{e}");
}
