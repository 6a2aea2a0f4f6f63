//! Issue 23: the planner's rewrite that puts an `extreme_filter` before an interval join of
//! a stream with the `MAX` (or `MIN`) of its own column over a tumbling window
//! (`anduin_registry::prune_extremes`): where it applies, with which params, how the graph is
//! rewired (the window reads every row through the filter, the join the rows kept, under
//! the names it read before), and every shape it must leave alone because dropping rows could
//! change a result there. The maps it relies on cannot change while the query runs.

use anduin_graph::{check_change, ChangeRejected};
use anduin_registry::{prune_extremes, BuiltinCatalog};
use anduin_spec::Spec;

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 1000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "w", type = "window" {
  input name = "events"
  param kind = "tumbling"
  param size = "100ms"
  param time = "ts"
  param aggregates = "COUNT(*) AS n, MAX(value) AS top, SUM(value) AS total"
  output name = "tops"
}
operator name = "named", type = "map" {
  input name = "tops"
  param columns = "top AS best, window_end AS until, total"
  output name = "best"
}
operator name = "j", type = "join" {
  input name = "events"
  input name = "best"
  param kind = "interval"
  param on = "events.value = best.best"
  param left_time = "ts"
  param right_time = "until"
  param lower = "0ms"
  param upper = "100ms"
  output name = "highest"
}
operator name = "out", type = "discard" {
  input name = "highest"
}
"#;

/// The query with `edits` (`(from, to)` text replacements, each of which must apply),
/// rewritten by the planner (`None`: left as it is), the rewritten query checked.
fn pruned(edits: &[(&str, &str)]) -> Option<Spec> {
    let mut text = QUERY.to_string();
    for (from, to) in edits {
        assert!(text.contains(from), "`{from}` is in the query");
        text = text.replacen(from, to, 1);
    }
    let spec = anduin_spec::parse_flow(&text).expect("parses");
    let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("checks");
    let out = prune_extremes(&spec, &graph)?;
    anduin_graph::check(&out, &BuiltinCatalog).expect("the rewritten query checks");
    Some(out)
}

fn param(spec: &Spec, operator: &str, name: &str) -> Option<String> {
    let op = spec
        .operators
        .iter()
        .find(|o| o.name.as_str() == operator)?;
    op.param(name).map(|p| p.value.as_text().to_string())
}

fn inputs(spec: &Spec, operator: &str) -> Vec<String> {
    let op = spec
        .operators
        .iter()
        .find(|o| o.name.as_str() == operator)
        .expect("the operator");
    op.inputs.iter().map(|i| i.to_string()).collect()
}

#[test]
fn a_join_with_the_maximum_of_its_own_column_gets_a_filter_that_the_window_reads_through() {
    let spec = pruned(&[]).expect("rewritten");
    let p = |name: &str| param(&spec, "j_prune", name);
    assert_eq!(p("value").as_deref(), Some("value"));
    assert_eq!(p("extreme").as_deref(), Some("max"));
    assert_eq!(p("time").as_deref(), Some("ts"));
    assert_eq!(p("size").as_deref(), Some("100ms"));
    assert_eq!(p("window_time").as_deref(), Some("end"));
    assert_eq!(
        (p("lower"), p("upper")),
        (Some("0ms".into()), Some("100ms".into()))
    );
    assert_eq!(p("relies_on").as_deref(), Some("named"));
    assert_eq!(inputs(&spec, "j_prune"), ["events"]);
    assert_eq!(inputs(&spec, "w"), ["j_prune_all"]);
    assert_eq!(inputs(&spec, "j"), ["j_prune", "best"]);
    assert_eq!(
        param(&spec, "j", "names").as_deref(),
        Some("events, best"),
        "the join's `on` keeps naming the streams it read"
    );
}

#[test]
fn the_stream_on_the_right_a_minimum_or_a_window_read_by_its_start_are_recognised() {
    let right = pruned(&[
        (
            "input name = \"events\"\n  input name = \"best\"",
            "input name = \"best\"\n  input name = \"events\"",
        ),
        (
            "param left_time = \"ts\"\n  param right_time = \"until\"",
            "param left_time = \"until\"\n  param right_time = \"ts\"",
        ),
        (
            "param lower = \"0ms\"\n  param upper = \"100ms\"",
            "param lower = \"-100ms\"\n  param upper = \"0ms\"",
        ),
    ])
    .expect("rewritten");
    assert_eq!(inputs(&right, "j"), ["best", "j_prune"]);
    assert_eq!(param(&right, "j_prune", "lower").as_deref(), Some("0ms"));
    assert_eq!(param(&right, "j_prune", "upper").as_deref(), Some("100ms"));
    let min = pruned(&[("MAX(value) AS top", "MIN(value) AS top")]).expect("rewritten");
    assert_eq!(param(&min, "j_prune", "extreme").as_deref(), Some("min"));
    let start = pruned(&[("window_end AS until", "window_start AS until")]).expect("rewritten");
    assert_eq!(
        param(&start, "j_prune", "window_time").as_deref(),
        Some("start")
    );
    // A hop as long as its slide is tumbling; a filter of the window's rows only narrows.
    assert!(pruned(&[(
        "param kind = \"tumbling\"\n  param size = \"100ms\"",
        "param kind = \"hop\"\n  param size = \"100ms\"\n  param slide = \"100ms\""
    )])
    .is_some());
}

#[test]
fn shapes_where_dropping_a_row_could_change_a_result_are_left_alone() {
    let unchanged: &[(&str, &[(&str, &str)])] = &[
        (
            "turned off",
            &[(
                "param upper = \"100ms\"",
                "param upper = \"100ms\"\n  param prune = \"off\"",
            )],
        ),
        (
            "a left join keeps its left rows",
            &[(
                "param upper = \"100ms\"",
                "param upper = \"100ms\"\n  param how = \"left\"",
            )],
        ),
        ("a sum is no extreme", &[("top AS best", "total AS best")]),
        (
            "an extreme of a computed column",
            &[("top AS best", "top + 1 AS best")],
        ),
        (
            "an extreme of another column",
            &[("MAX(value) AS top", "MAX(sensor) AS top")],
        ),
        (
            "an aggregate that skips rows",
            &[(
                "MAX(value) AS top",
                "MAX(value) FILTER (WHERE sensor > 3) AS top",
            )],
        ),
        (
            "a window per key",
            &[(
                "param time = \"ts\"\n  param aggregates",
                "param time = \"ts\"\n  param keys = \"sensor\"\n  param aggregates",
            )],
        ),
        (
            "sliding windows overlap",
            &[(
                "param kind = \"tumbling\"\n  param size = \"100ms\"",
                "param kind = \"sliding\"\n  param size = \"100ms\"\n  param slide = \"50ms\"",
            )],
        ),
        (
            "the join's time is not the window's bound",
            &[(
                "window_end AS until",
                "window_end AS until0, window_start + INTERVAL '1' SECOND AS until",
            )],
        ),
        (
            "a row could reach too many windows",
            &[("param upper = \"100ms\"", "param upper = \"10s\"")],
        ),
        (
            "a window join",
            &[(
                "param kind = \"interval\"",
                "param kind = \"window\"\n  param size = \"100ms\"",
            )],
        ),
    ];
    for (why, edits) in unchanged {
        assert!(
            pruned(edits).is_none(),
            "{why}: the query must be left alone"
        );
    }
}

#[test]
fn a_map_the_filter_relies_on_cannot_change_while_the_query_runs() {
    let spec = pruned(&[]).expect("rewritten");
    let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("checks");
    let refused = check_change(
        &graph,
        &BuiltinCatalog,
        "named",
        "columns",
        "top + 1 AS best, window_end AS until, total",
    );
    match refused {
        Err(ChangeRejected::Invalid(why)) => {
            assert!(why.contains("\"j_prune\" relies on"), "{why}")
        }
        other => panic!("the change must be refused: {other:?}"),
    }
    // The window's lateness still may change: the filter is sound for any.
    assert_eq!(
        check_change(&graph, &BuiltinCatalog, "w", "allowed_lateness", "2s"),
        Ok(())
    );
}
