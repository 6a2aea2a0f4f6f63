//! An exactly-once NATS sink names each row by its place in the order the rows reach it: a
//! run started again from a checkpoint must make the same rows after it. A change to a param
//! of an operator before the sink, applied while the query runs, lands between other rows in
//! such a run (issue 19: rows dropped as duplicates of others, silently), so it is refused,
//! saying what to do; with `delivery = "at-least-once"`, and on an operator that feeds no such
//! sink, it passes.

use anduin_graph::{check_change, ChangeRejected};
use anduin_registry::BuiltinCatalog;

fn query(delivery: &str) -> String {
    format!(
        r#"
type name = "Reading" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
operator name = "gen", type = "generator" {{
  param profile = "events"
  param rate = 100
  output name = "readings", type = "Reading"
}}
operator name = "low", type = "filter" {{
  input name = "readings"
  param condition = "value < 42"
  output name = "lowReadings", type = "Reading"
}}
operator name = "out", type = "nats" {{
  input name = "lowReadings"
  param server = "nats://127.0.0.1:4222"
  param stream = "OUT"
  param subject = "out"
  {delivery}
}}
operator name = "high", type = "filter" {{
  input name = "readings"
  param condition = "value > 90"
  output name = "highReadings", type = "Reading"
}}
operator name = "file", type = "writer" {{
  input name = "highReadings"
  param path = "high.csv"
}}
"#
    )
}

#[test]
fn a_change_to_an_operator_before_an_exactly_once_nats_sink_is_refused() {
    let spec = anduin_spec::parse_flow(&query("")).expect("parses");
    let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("checks");
    for (operator, param, value) in [("low", "condition", "value < 10"), ("gen", "rate", "50")] {
        match check_change(&graph, &BuiltinCatalog, operator, param, value) {
            Err(ChangeRejected::Invalid(m)) => assert!(
                m.contains(r#"feeds "out", a NATS sink that writes exactly once"#)
                    && m.contains("control stream with a `time` column")
                    && m.contains(r#"delivery = "at-least-once""#),
                "{m}"
            ),
            other => panic!("{operator}.{param}: {other:?}"),
        }
    }
    check_change(&graph, &BuiltinCatalog, "high", "condition", "value > 80")
        .expect("feeds no such sink");

    let spec =
        anduin_spec::parse_flow(&query(r#"param delivery = "at-least-once""#)).expect("parses");
    let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("checks");
    check_change(&graph, &BuiltinCatalog, "low", "condition", "value < 10").expect("at least once");
}
