//! A `control` line is checked as the rest of the query: the control stream must exist and
//! carry string columns `operator`, `param` and `value`; `time` must name an event-time
//! column of both the operator's input and the control stream; only a stateless operator with
//! params adjustable while running can follow one. A checked control input reaches every
//! instance (a broadcast channel), `explain` shows it, and `ctl set` on such an operator is
//! refused (its changes come from the stream, so that a replay applies them at the same rows).

use anduin_graph::{check_change, explain_text, ChangeRejected, Partitioning, PhysicalPlan};
use anduin_registry::BuiltinCatalog;

/// The query with the control line and the control stream's columns given.
fn query(control: &str, change_columns: &str, kind: &str) -> String {
    let body = match kind {
        "window" => {
            r#"param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param aggregates = "COUNT(*) AS n""#
        }
        _ => r#"param condition = "value < 42""#,
    };
    format!(
        r#"
type name = "Reading" {{
  column name = "ts", type = "timestamp"
  column name = "value", type = "int"
}}
type name = "Change" {{
{change_columns}
}}
operator name = "data", type = "generator" {{
  param profile = "uniform"
  param event_time = "ts"
  output name = "readings", type = "Reading"
}}
operator name = "changes", type = "reader" {{
  param path = "changes.csv"
  output name = "changeRows", type = "Change"
}}
operator name = "op", type = "{kind}" {{
  input name = "readings"
  {control}
  {body}
  output name = "out"
}}
operator name = "sink", type = "discard" {{
  input name = "out"
}}
"#
    )
}

const CHANGE: &str = r#"  column name = "ts", type = "timestamp"
  column name = "operator", type = "string"
  column name = "param", type = "string"
  column name = "value", type = "string""#;

fn errors(src: &str) -> String {
    let spec = anduin_spec::parse_flow(src).unwrap_or_else(|e| panic!("{e}"));
    match anduin_graph::check(&spec, &BuiltinCatalog) {
        Ok(_) => panic!("must be refused:\n{src}"),
        Err(d) => d.render("q.flow"),
    }
}

#[test]
fn a_checked_control_input_is_broadcast_and_explained() {
    let src = query(
        r#"control name = "changeRows", time = "ts""#,
        CHANGE,
        "filter",
    );
    let spec = anduin_spec::parse_flow(&src).expect("parses");
    let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("checks");
    let op = graph.nodes.iter().find(|n| n.name() == "op").expect("op");
    let control = op.control.as_ref().expect("a control input");
    assert_eq!((control.port, control.stream.as_str()), (1, "changeRows"));
    assert_eq!(op.data_inputs().len(), 1);
    let plan = PhysicalPlan::from_graph(&graph, true).expect("the graph plans");
    let channel = plan
        .channels
        .iter()
        .find(|c| c.to_input == 1)
        .expect("a channel into the control port");
    assert_eq!(channel.partitioning, Partitioning::Broadcast);
    let text = explain_text(&graph, &plan);
    assert!(
        text.contains("control changeRows (changes apply by event time `ts`)")
            && text.contains("input 1, to every instance"),
        "{text}"
    );
    match check_change(&graph, &BuiltinCatalog, "op", "condition", "value < 3") {
        Err(ChangeRejected::Invalid(m)) => {
            assert!(
                m.contains("takes its changes from control stream \"changeRows\""),
                "{m}"
            );
        }
        other => panic!("ctl set on a controlled operator must be refused: {other:?}"),
    }
}

#[test]
fn a_control_stream_that_does_not_exist_is_named() {
    let e = errors(&query(r#"control name = "changeRow""#, CHANGE, "filter"));
    assert!(
        e.contains(
            "control stream \"changeRow\" of operator \"op\" is not produced by any operator"
        ) && e.contains("changeRows"),
        "{e}"
    );
}

#[test]
fn a_control_stream_without_its_columns_is_refused() {
    let columns = r#"  column name = "operator", type = "string"
  column name = "param", type = "int""#;
    let e = errors(&query(r#"control name = "changeRows""#, columns, "filter"));
    assert!(
        e.contains(
            "column `param` of control stream \"changeRows\" is Int64, but it must be a string"
        ),
        "{e}"
    );
    assert!(
        e.contains("control stream \"changeRows\" has no column `value`"),
        "{e}"
    );
}

#[test]
fn a_time_column_missing_on_either_side_is_refused() {
    let e = errors(&query(
        r#"control name = "changeRows", time = "at""#,
        CHANGE,
        "filter",
    ));
    assert!(
        e.contains("control stream \"changeRows\" has no column `at`")
            && e.contains("the operator's input has no column `at`"),
        "{e}"
    );
}

#[test]
fn a_stateful_operator_cannot_follow_a_control_stream() {
    let e = errors(&query(
        r#"control name = "changeRows", time = "ts""#,
        CHANGE,
        "window",
    ));
    assert!(
        e.contains("operator \"op\" of type `window` cannot take a control input")
            && e.contains("anduin ctl set"),
        "{e}"
    );
}

#[test]
fn a_second_control_line_is_a_syntax_error() {
    let src = query(
        "control name = \"changeRows\"\n  control name = \"changeRows\"",
        CHANGE,
        "filter",
    );
    let e = anduin_spec::parse_flow(&src)
        .expect_err("two control lines")
        .render("q.flow");
    assert!(e.contains("has a second `control`"), "{e}");
}
