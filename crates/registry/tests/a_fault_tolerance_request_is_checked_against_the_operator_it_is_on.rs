//! The QoS params every operator takes (`fault_tolerance`, `replicas`, `pipeline`) are checked
//! against the operator they are on when the query is checked: standby is for stateless
//! operators, checkpoint for stateful ones, hot standby for an operator with one input and an
//! output (its copies must see the same rows in the same order, and a sink's copies would each
//! write), replicas only with hot standby and 2 to 8. Each error points at the value.

use anduin_registry::BuiltinCatalog;

use crate::common;

use common::{check_errors, readings_then};

fn errors(ops: &str) -> String {
    check_errors(&readings_then(ops))
}

fn filter(params: &str) -> String {
    format!(
        r#"operator name = "low", type = "filter" {{
  input name = "readings"
  param condition = "value < 42"
  {params}
  output name = "lows"
}}
operator name = "drop", type = "discard" {{ input name = "lows" }}"#
    )
}

fn window(params: &str) -> String {
    format!(
        r#"operator name = "w", type = "window" {{
  input name = "readings"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param aggregates = "COUNT(*) AS n"
  {params}
  output name = "counts"
}}
operator name = "drop", type = "discard" {{ input name = "counts" }}"#
    )
}

#[test]
fn requests_that_fit_their_operator_pass() {
    for ops in [
        filter(r#"param fault_tolerance = "standby""#),
        filter("param fault_tolerance = \"hot-standby\"\n  param replicas = 3"),
        filter(r#"param pipeline = "split""#),
        window(r#"param fault_tolerance = "checkpoint""#),
        window(r#"param fault_tolerance = "hot-standby""#),
    ] {
        assert_eq!(errors(&ops), "", "{ops}");
    }
}

#[test]
fn standby_of_a_stateful_and_checkpoint_of_a_stateless_operator_are_refused() {
    let e = errors(&window(r#"param fault_tolerance = "standby""#));
    assert!(
        e.contains("a window keeps state: use \"checkpoint\""),
        "{e}"
    );
    let e = errors(&filter(r#"param fault_tolerance = "checkpoint""#));
    assert!(e.contains("a filter keeps none: use \"standby\""), "{e}");
}

#[test]
fn hot_standby_of_a_source_a_sink_or_a_join_is_refused() {
    let e = errors(
        r#"operator name = "copy", type = "generator" {
  param profile = "events"
  param fault_tolerance = "hot-standby"
  output name = "more", type = "Reading"
}
operator name = "drop", type = "discard" { input name = "more" }"#,
    );
    assert!(e.contains("a source is not replicated"), "{e}");
    let e = errors(
        r#"operator name = "drop", type = "discard" {
  input name = "readings"
  param fault_tolerance = "hot-standby"
}"#,
    );
    assert!(e.contains("is a sink"), "{e}");
    let e = errors(
        r#"operator name = "both", type = "union" {
  input name = "readings"
  input name = "readings"
  param fault_tolerance = "hot-standby"
  output name = "all"
}
operator name = "drop", type = "discard" { input name = "all" }"#,
    );
    assert!(
        e.contains("can interleave differently in each replica"),
        "{e}"
    );
    let e = errors(&window(
        "param fault_tolerance = \"hot-standby\"\n  param parallelism = 2",
    ));
    assert!(e.contains("runs each copy as one instance"), "{e}");
}

#[test]
fn replicas_need_hot_standby_and_a_count_from_2_to_8() {
    let e = errors(&filter("param replicas = 2"));
    assert!(
        e.contains("`replicas` is for fault_tolerance = \"hot-standby\""),
        "{e}"
    );
    let e = errors(&filter(
        "param fault_tolerance = \"hot-standby\"\n  param replicas = 9",
    ));
    assert!(e.contains("q.flow:16:20:"), "{e}");
    assert!(e.contains("`replicas` must be 2 to 8, not 9"), "{e}");
    let e = errors(&filter(r#"param pipeline = "merge""#));
    assert!(e.contains("must be one of \"split\""), "{e}");
}

#[test]
fn a_copy_of_a_hot_standby_cannot_be_changed_while_it_runs() {
    let src = readings_then(&filter(r#"param fault_tolerance = "hot-standby""#));
    let spec = anduin_spec::parse_flow(&src).expect("parses");
    let copies = anduin_graph::rewriting::hot_standby_spec(&spec, &BuiltinCatalog)
        .expect("rewrites")
        .expect("asks for hot standby");
    let names: Vec<&str> = copies.operators.iter().map(|o| o.name.as_str()).collect();
    assert!(
        names.contains(&"low")
            && names.contains(&"low_replica_1")
            && names.contains(&"stream-selector_1"),
        "{names:?}"
    );
    let (graph, _) = anduin_graph::check(&copies, &BuiltinCatalog).expect("the copies check");
    for copy in ["low", "low_replica_1"] {
        match anduin_graph::check_change(&graph, &BuiltinCatalog, copy, "condition", "value < 1") {
            Err(anduin_graph::ChangeRejected::Invalid(m)) => {
                assert!(m.contains("is a copy of a hot standby"), "{m}")
            }
            other => panic!("{copy}: {other:?}"),
        }
    }
}

#[test]
fn a_query_name_that_a_copy_would_take_is_refused() {
    let src = readings_then(&format!(
        r#"{}
operator name = "low_replica_1", type = "filter" {{
  input name = "readings"
  param condition = "value > 10"
  output name = "highs"
}}
operator name = "drop_highs", type = "discard" {{ input name = "highs" }}"#,
        filter(r#"param fault_tolerance = "hot-standby""#)
    ));
    let spec = anduin_spec::parse_flow(&src).expect("parses");
    let e = anduin_graph::rewriting::hot_standby_spec(&spec, &BuiltinCatalog)
        .expect_err("the name is a copy's")
        .to_string();
    assert!(
        e.contains("the name \"low_replica_1\" is one the copies"),
        "{e}"
    );
}

/// A stream selector written by hand over `a` and `b` (two filters' conditions).
fn selector_over(a: &str, b: &str) -> String {
    format!(
        r#"operator name = "f1", type = "filter" {{
  input name = "readings"
  param condition = "{a}"
  output name = "s1"
}}
operator name = "f2", type = "filter" {{
  input name = "readings"
  param condition = "{b}"
  output name = "s2"
}}
operator name = "pick", type = "stream-selector" {{
  input name = "s1"
  input name = "s2"
  output name = "picked"
}}
operator name = "drop", type = "discard" {{ input name = "picked" }}"#
    )
}

/// From the hostile probe of hot standby: a selector forwards one input's rows as if they
/// were any other's, and a checkpoint gives a lost input's producer its twin's state — so its
/// inputs must be copies of one operator.
#[test]
fn a_stream_selector_over_operators_that_are_not_copies_is_refused() {
    assert_eq!(errors(&selector_over("value < 42", "value < 42")), "");
    let e = errors(&selector_over("value < 42", "value > 42"));
    assert!(
        e.contains(
            r#"operator "pick" (stream-selector): its inputs must be copies of one operator"#
        ) && e.contains(r#""f1" and "f2" differ"#),
        "{e}"
    );
}
