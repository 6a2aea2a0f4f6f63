//! Spreading a pattern's partial matches over several instances (paper §4.4, issue 15) gives
//! the answer of one instance only where its matches are independent of each other: under
//! `after_match = "skip to next row"`, without unmatched rows, `MATCH_NUMBER()`, or a
//! condition that can fail on a row that would go to the dead letters. Anything else is
//! refused, naming the reason: when the query is checked (`overflow_instances`), when the
//! runtime asks an instance to spread, and when a change would make a spread pattern one of
//! those.

use crate::common;

use anduin_operator_api::{ControlError, OperatorError, SpreadRole};

fn query(params: &str) -> String {
    format!(
        r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "value", type = "int" }}
operator name = "g", type = "generator" {{ output name = "in", type = "T" }}
operator name = "op", type = "pattern" {{
  input name = "in"
  param partition_by = "k" param order_by = "ts" param pattern = "A B+ C"
  param define = "B AS value < PREV(value)"
  {params}
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    )
}

/// Each way a pattern's matches depend on each other, and what the refusal must say.
const UNSPREADABLE: &[(&str, &str)] = &[
    ("", "after_match \"skip past last row\""),
    (
        r#"param after_match = "skip past last row""#,
        "a match suppresses the later matches that overlap it",
    ),
    (
        r#"param after_match = "skip to last B""#,
        "spreading needs after_match = \"skip to next row\"",
    ),
    (
        r#"param after_match = "skip to first C""#,
        "after_match \"skip to first …\"",
    ),
    (
        r#"param after_match = "skip to next row" param rows_per_match = "all with unmatched""#,
        "\"all with unmatched\": whether a row is in no match depends on every partial match",
    ),
    (
        r#"param after_match = "skip to next row" param measures = "MATCH_NUMBER() AS m""#,
        "a measure uses MATCH_NUMBER()",
    ),
    (
        r#"param after_match = "skip to next row" param define = "C AS MATCH_NUMBER() < 3""#,
        "a condition (define) uses MATCH_NUMBER()",
    ),
    (
        r#"param after_match = "skip to next row" param define = "C AS value / (value - 3) > 1""#,
        "set on_error = \"fail\"",
    ),
];

#[test]
fn the_check_refuses_overflow_instances_where_matches_depend_on_each_other_and_says_why() {
    for (params, why) in UNSPREADABLE {
        let errors =
            common::check_errors(&query(&format!("{params}\n  param overflow_instances = 3")));
        assert!(
            errors.contains(why) && errors.contains("overflow_instances"),
            "{params}: expected a refusal saying {why:?}, got:\n{errors}"
        );
        // Without the param the same query runs as one instance.
        let errors = common::check_errors(&query(params));
        assert!(errors.is_empty(), "{params}:\n{errors}");
    }
}

#[test]
fn spreadable_overflow_params_check_and_bad_ones_are_refused_saying_why() {
    for params in [
        r#"param after_match = "skip to next row" param overflow_instances = 3 param max_partial_matches = 100000"#,
        r#"param after_match = "skip to next row" param within = "5s" param rows_per_match = "all" param overflow_instances = 2"#,
        // Copies of several instances each: instance i of each hands to instance i of the next.
        r#"param after_match = "skip to next row" param overflow_instances = 2 param parallelism = 2"#,
        // A condition that can fail, with on_error = "fail": the query stops either way.
        r#"param after_match = "skip to next row" param define = "C AS value / (value - 3) > 1" param on_error = "fail" param overflow_instances = 2"#,
    ] {
        let errors = common::check_errors(&query(params));
        assert!(errors.is_empty(), "{params}: {errors}");
    }
    for (params, why) in [
        ("param overflow_instances = 0", "must be at least 1"),
        (
            r#"param after_match = "skip to next row" param overflow_instances = 65"#,
            "must be at most 64, found 65",
        ),
        (
            r#"param after_match = "skip to next row" param overflow_instances = 2 param max_partial_matches = 0"#,
            "must be at least 1, found 0 (param `max_partial_matches`",
        ),
    ] {
        let errors = common::check_errors(&query(params));
        assert!(errors.contains(why), "{params}: {errors}");
    }
}

#[test]
fn an_instance_asked_to_spread_partial_matches_it_cannot_refuses_with_the_reason() {
    for (params, why) in UNSPREADABLE {
        for role in [SpreadRole::Start, SpreadRole::Extend] {
            let mut op = common::operator(&query(params));
            match op.set_spread_role(role) {
                Err(OperatorError::Config { message, .. }) => {
                    assert!(message.contains(why), "{params}: {message}")
                }
                other => panic!("{params}: {role:?} should be refused, got {other:?}"),
            }
        }
        let mut op = common::operator(&query(params));
        match op.spread(0) {
            Err(OperatorError::Config { message, .. }) => {
                assert!(message.contains(why), "{params}: {message}")
            }
            other => panic!("{params}: spreading should be refused, got {other:?}"),
        }
    }
}

#[test]
fn a_change_that_would_make_a_spread_pattern_depend_on_other_matches_is_refused() {
    let mut op = common::operator(&query(r#"param after_match = "skip to next row""#));
    op.set_spread_role(SpreadRole::Extend).expect("spreads");
    match op.set_param(
        "define",
        "B AS value < PREV(value), C AS MATCH_NUMBER() < 3",
    ) {
        Err(ControlError::Invalid { message, .. }) => {
            assert!(message.contains("MATCH_NUMBER()"), "{message}")
        }
        other => panic!("the change should be refused, got {other:?}"),
    }
    // A change that keeps the matches independent is taken.
    op.set_param("define", "B AS value < PREV(value), C AS value > 5")
        .expect("an independent change is taken");
}

#[test]
fn the_copies_of_a_spreading_pattern_run_one_definition_and_refuse_changes() {
    let src = query(
        r#"param after_match = "skip to next row" param overflow_instances = 3 param define = "C AS value > PREV(value)""#,
    );
    let spec = anduin_spec::parse_flow(&src).expect("parses");
    let copies = anduin_graph::rewriting::overflow_spec(&spec, &anduin_registry::BuiltinCatalog)
        .expect("rewrites")
        .expect("asks for copies");
    let names: Vec<&str> = copies.operators.iter().map(|o| o.name.as_str()).collect();
    assert!(
        names.contains(&"op") && names.contains(&"op_replica_1") && names.contains(&"op_replica_2"),
        "{names:?}"
    );
    // Every copy keeps the pattern's params, repeated ones (`define`) as written.
    let defines = |name: &str| -> Vec<String> {
        let op = copies
            .operators
            .iter()
            .find(|o| o.name.as_str() == name)
            .expect("the copy");
        op.params_named("define")
            .map(|p| p.value.as_text().to_string())
            .collect()
    };
    assert_eq!(defines("op").len(), 2);
    assert_eq!(defines("op_replica_2"), defines("op"));
    let (graph, _) =
        anduin_graph::check(&copies, &anduin_registry::BuiltinCatalog).expect("the copies check");
    // Any param, one a pattern could change or not: the reason is the copies', with no list
    // of params that could change.
    for (copy, param) in [
        ("op", "within"),
        ("op_replica_1", "within"),
        ("op_replica_1", "max_partial_matches"),
    ] {
        match anduin_graph::check_change(
            &graph,
            &anduin_registry::BuiltinCatalog,
            copy,
            param,
            "5s",
        ) {
            Err(anduin_graph::ChangeRejected::Invalid(m)) => {
                assert!(m.contains("spreads its partial matches over copies"), "{m}")
            }
            other => panic!("{copy}.{param}: {other:?}"),
        }
    }
}
