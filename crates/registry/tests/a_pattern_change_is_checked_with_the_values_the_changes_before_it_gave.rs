//! A change to a running pattern's `pattern`, `define` or `within` is checked as `anduin
//! check` checks the query, with errors located in the new value (`p.define:1:8: …`); an
//! error that another param makes with the new value (a condition naming a variable the new
//! pattern lost) names that param and no position. A change is checked with the values the
//! changes before it gave the other params: a pattern can get a new variable, then a
//! condition for it. Its other params (measures, partitioning) cannot change while running.

use std::collections::BTreeMap;

use anduin_graph::{check_change, check_change_after, ChangeRejected, LogicalGraph};
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
operator name = "p", type = "pattern" {
  input name = "readings"
  param partition_by = "sensor"
  param order_by = "ts"
  param pattern = "A B+ C"
  param define = "B AS B.value < PREV(B.value)"
  param define = "C AS C.value > A.value"
  param measures = "A.ts AS a_ts, COUNT(B.*) AS bs"
  param within = "10s"
  output name = "matches"
}
operator name = "drop", type = "discard" {
  input name = "matches"
}
"#;

fn graph() -> LogicalGraph<Bound> {
    let spec = anduin_spec::parse_flow(QUERY).expect("parses");
    anduin_graph::check(&spec, &BuiltinCatalog)
        .expect("checks")
        .0
}

fn invalid(param: &str, value: &str) -> String {
    match check_change(&graph(), &BuiltinCatalog, "p", param, value) {
        Err(ChangeRejected::Invalid(message)) => message,
        other => panic!("p.{param} = {value:?} must be invalid: {other:?}"),
    }
}

#[test]
fn valid_changes_pass() {
    let g = graph();
    for (param, value) in [
        ("pattern", "A B{2,} C"),
        ("pattern", "A B+? C | A C"),
        ("define", "B AS B.value < 10"),
        (
            "define",
            "B AS B.value < PREV(B.value), C AS C.value > A.value + 20",
        ),
        ("within", "1m"),
    ] {
        check_change(&g, &BuiltinCatalog, "p", param, value)
            .unwrap_or_else(|e| panic!("p.{param} = {value:?}: {e:?}"));
    }
}

#[test]
fn errors_in_the_value_are_located_in_it() {
    let m = invalid("pattern", "A (B+ C");
    assert!(m.starts_with("p.pattern:1:"), "{m}");
    let m = invalid("define", "B AS B.valeu < 3");
    assert!(m.starts_with("p.define:1:8: unknown column `valeu`"), "{m}");
    let m = invalid("define", "B AS B.value + 1");
    assert!(
        m.starts_with("p.define:1:6: the condition of `B` is"),
        "{m}"
    );
    let m = invalid("define", "E AS E.value > 1");
    assert!(m.contains("`E` is not a variable of the pattern"), "{m}");
    let m = invalid("within", "soon");
    assert!(m.starts_with("p.within:1:1: "), "{m}");
}

#[test]
fn an_error_another_param_makes_names_it_and_no_place() {
    // The conditions name C: the pattern cannot lose it while they do.
    let m = invalid("pattern", "A B+");
    assert!(m.starts_with("p.pattern: "), "{m}");
    assert!(m.contains("(in param `define` of operator \"p\")"), "{m}");
}

#[test]
fn a_condition_for_a_new_variable_is_checked_with_the_new_pattern() {
    let g = graph();
    let pattern = "A B+ C D";
    check_change(&g, &BuiltinCatalog, "p", "pattern", pattern).expect("D matches any row");
    let define = "B AS B.value < PREV(B.value), C AS C.value > A.value, D AS D.value > 90";
    match check_change(&g, &BuiltinCatalog, "p", "define", define) {
        Err(ChangeRejected::Invalid(m)) => assert!(m.contains("`D` is not a variable"), "{m}"),
        other => panic!("not a variable of the declared pattern: {other:?}"),
    }
    let earlier = BTreeMap::from([("pattern".to_string(), pattern.to_string())]);
    check_change_after(&g, &BuiltinCatalog, "p", &earlier, "define", define)
        .expect("a variable of the pattern the earlier change gave");
}

#[test]
fn only_the_pattern_its_conditions_and_its_time_bound_change_while_running() {
    match check_change(&graph(), &BuiltinCatalog, "p", "measures", "A.ts AS a_ts") {
        Err(ChangeRejected::NotAdjustable { adjustable, exists }) => {
            assert_eq!(adjustable, vec!["pattern", "define", "within"]);
            assert!(exists);
        }
        other => panic!("{other:?}"),
    }
}
