//! A change to a running operator's param is checked as `anduin check` checks the query:
//! the param must be one its type can change while running, an expression must compile and
//! type-check against the operator's input (errors located in the value, `OPERATOR.PARAM:1:COL`),
//! a number must be in range, a window's lateness a duration, and a map must keep its output
//! columns. A valid change passes.

use anduin_graph::{check_change, ChangeRejected, LogicalGraph};
use anduin_operator_api::Bound;
use anduin_registry::BuiltinCatalog;

const QUERY: &str = r#"
type name = "Reading" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param rate = 100
  output name = "readings", type = "Reading"
}
operator name = "low", type = "filter" {
  input name = "readings"
  param condition = "readings.value < 42"
  output name = "lowReadings", type = "Reading"
}
operator name = "twice", type = "map" {
  input name = "lowReadings"
  param columns = "ts, sensor, value * 2 AS doubled"
  output name = "doubled"
}
operator name = "drop", type = "discard" {
  input name = "doubled"
}
operator name = "per_sensor", type = "window" {
  input name = "readings"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n"
  output name = "counts"
}
operator name = "drop_counts", type = "discard" {
  input name = "counts"
}
"#;

fn graph() -> LogicalGraph<Bound> {
    let spec = anduin_spec::parse_flow(QUERY).expect("parses");
    anduin_graph::check(&spec, &BuiltinCatalog)
        .expect("checks")
        .0
}

fn invalid(operator: &str, param: &str, value: &str) -> String {
    match check_change(&graph(), &BuiltinCatalog, operator, param, value) {
        Err(ChangeRejected::Invalid(message)) => message,
        other => panic!("{operator}.{param} = {value:?} must be invalid: {other:?}"),
    }
}

#[test]
fn valid_changes_pass() {
    let g = graph();
    for (op, param, value) in [
        ("low", "condition", "value < 30"),
        ("low", "condition", "readings.sensor = 3 AND value >= 10"),
        ("twice", "columns", "ts, sensor, value * 3 AS doubled"),
        ("gen", "rate", "5000"),
        ("gen", "rate", "0.5"),
        ("per_sensor", "allowed_lateness", "5s"),
        ("per_sensor", "allowed_lateness", "0s"),
        ("per_sensor", "allowed_lateness", "1.5 minutes"),
    ] {
        check_change(&g, &BuiltinCatalog, op, param, value)
            .unwrap_or_else(|e| panic!("{op}.{param} = {value:?}: {e:?}"));
    }
}

#[test]
fn an_expression_error_is_located_in_the_value() {
    let m = invalid("low", "condition", "value < 30 AND colour = 'red'");
    assert!(m.starts_with("low.condition:1:16: "), "{m}");
    assert!(m.contains("colour"), "{m}");
    let m = invalid("low", "condition", "value + 1");
    assert!(m.starts_with("low.condition:1:"), "{m}");
    assert!(m.contains("must be true or false"), "{m}");
    let m = invalid("low", "condition", "value <");
    assert!(m.starts_with("low.condition:1:"), "{m}");
}

#[test]
fn a_map_must_keep_its_output_columns() {
    let m = invalid("twice", "columns", "ts, sensor, value * 2 AS tripled");
    assert!(m.contains("same columns"), "{m}");
    let m = invalid("twice", "columns", "ts, sensor");
    assert!(m.contains("same columns"), "{m}");
    let m = invalid("twice", "columns", "ts, sensor, value * 2.5 AS doubled");
    assert!(m.contains("same columns"), "{m}");
}

#[test]
fn a_rate_out_of_range_or_not_a_number_is_refused() {
    for bad in ["0", "-5", "fast", "1e13"] {
        let m = invalid("gen", "rate", bad);
        assert!(m.starts_with("gen.rate:"), "{m}");
    }
}

#[test]
fn a_lateness_that_is_not_a_duration_is_refused() {
    for bad in ["soon", "5", "-1s", "2 parsecs", ""] {
        let m = invalid("per_sensor", "allowed_lateness", bad);
        assert!(m.starts_with("per_sensor.allowed_lateness:1:"), "{m}");
        assert!(m.contains("duration"), "{m}");
    }
}

#[test]
fn a_param_that_cannot_change_while_running_is_named_with_those_that_can() {
    let g = graph();
    match check_change(&g, &BuiltinCatalog, "low", "on_error", "fail") {
        Err(ChangeRejected::NotAdjustable { adjustable, exists }) => {
            assert_eq!(adjustable, vec!["condition"]);
            assert!(exists);
        }
        other => panic!("{other:?}"),
    }
    match check_change(&g, &BuiltinCatalog, "per_sensor", "size", "2s") {
        Err(ChangeRejected::NotAdjustable { adjustable, exists }) => {
            assert_eq!(adjustable, vec!["allowed_lateness"]);
            assert!(exists);
        }
        other => panic!("{other:?}"),
    }
    match check_change(&g, &BuiltinCatalog, "low", "colour", "x") {
        Err(ChangeRejected::NotAdjustable { exists, .. }) => assert!(!exists),
        other => panic!("{other:?}"),
    }
    match check_change(&g, &BuiltinCatalog, "drop", "anything", "x") {
        Err(ChangeRejected::NotAdjustable { adjustable, .. }) => assert!(adjustable.is_empty()),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        check_change(&g, &BuiltinCatalog, "nobody", "condition", "x"),
        Err(ChangeRejected::UnknownOperator)
    );
}

/// A CASE of `n` WHEN branches over `value`.
fn case(n: usize) -> String {
    let whens: Vec<String> = (0..n)
        .map(|i| format!("WHEN value = {i} THEN true"))
        .collect();
    format!("CASE {} ELSE false END", whens.join(" "))
}

#[test]
fn a_long_case_is_checked_on_a_small_stack_or_refused_past_the_limit() {
    // The API checks changes on threads with 2 MiB of stack, as tokio's blocking pool has.
    let checked = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let g = graph();
            let ok = check_change(&g, &BuiltinCatalog, "low", "condition", &case(128));
            let refused = check_change(&g, &BuiltinCatalog, "low", "condition", &case(129));
            (ok, refused)
        })
        .expect("a thread")
        .join()
        .expect("no stack overflow");
    checked.0.expect("128 branches are accepted");
    match checked.1 {
        Err(ChangeRejected::Invalid(m)) => {
            assert!(m.starts_with("low.condition:1:"), "{m}");
            assert!(m.contains("more than 128 WHEN branches"), "{m}");
        }
        other => panic!("129 branches must be refused: {other:?}"),
    }
}

#[test]
fn a_window_lowered_from_sql_takes_a_lateness_too() {
    let sql = "CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts', watermark = '2 seconds');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv', format = 'csv');
INSERT INTO out
SELECT window_start, sensor, COUNT(*) AS cnt
FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY window_start, window_end, sensor;";
    let spec = anduin_spec::parse_sql(sql).expect("parses");
    let (g, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("checks");
    let window = g
        .nodes
        .iter()
        .find(|n| n.kind() == "window")
        .expect("the TUMBLE is a window")
        .name()
        .to_string();
    check_change(&g, &BuiltinCatalog, &window, "allowed_lateness", "3s").expect("a duration");
    match check_change(&g, &BuiltinCatalog, &window, "allowed_lateness", "3") {
        Err(ChangeRejected::Invalid(m)) => {
            assert!(
                m.starts_with(&format!("{window}.allowed_lateness:1:")),
                "{m}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_partitioned_writer_keeps_its_path_and_a_plain_one_may_change_it() {
    let writers = |partition: &str| {
        format!(
            r#"{QUERY}
operator name = "out", type = "writer" {{
  input name = "readings"
  param path = "out"
  {partition}
}}"#
        )
    };
    let check = |src: &str| {
        let spec = anduin_spec::parse_flow(src).expect("parses");
        let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("checks");
        check_change(&graph, &BuiltinCatalog, "out", "path", "elsewhere")
    };
    assert_eq!(check(&writers("")), Ok(()));
    match check(&writers(r#"param partition_by = "sensor""#)) {
        Err(ChangeRejected::Invalid(m)) => {
            assert!(m.contains("is a partitioned writer"), "{m}")
        }
        other => panic!("refused: {other:?}"),
    }
}
