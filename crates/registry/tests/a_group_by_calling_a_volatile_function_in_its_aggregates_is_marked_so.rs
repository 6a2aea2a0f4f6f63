//! The planner refuses a function whose value changes from call to call (`random()`) upstream
//! of a sink that must get the same rows on every run (an exactly-once NATS sink), as the
//! catalog finds such calls (`Catalog::volatile_call`). A GROUP BY's aggregates are among the
//! expressions it looks in (issue 19, probe39), their FILTER too: the checked graph marks the
//! operator with the function and the place of the aggregate that calls it, and leaves one
//! without such a call unmarked. (Its stream is updating, which a NATS sink does not take
//! today; the mark is there for any sink that asks.)

use anduin_registry::BuiltinCatalog;

const QUERY: &str = r#"
type name = "Reading" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 100
  output name = "readings", type = "Reading"
}
operator name = "sampled", type = "aggregate" {
  input name = "readings"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, SUM(value) FILTER (WHERE random() < 0.5) AS some"
  output name = "sampledCounts"
}
operator name = "exact", type = "aggregate" {
  input name = "readings"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, SUM(value) FILTER (WHERE value < 50) AS low"
  output name = "exactCounts"
}
operator name = "out1", type = "writer" {
  input name = "sampledCounts"
  param path = "sampled.csv"
  param mode = "changelog"
}
operator name = "out2", type = "writer" {
  input name = "exactCounts"
  param path = "exact.csv"
  param mode = "changelog"
}
"#;

#[test]
fn a_group_by_calling_a_volatile_function_in_its_aggregates_is_marked_so() {
    let spec = anduin_spec::parse_flow(QUERY).expect("parses");
    let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("checks");
    let node = |name: &str| {
        graph
            .nodes
            .iter()
            .find(|n| n.name() == name)
            .expect("an operator of the query")
    };
    let call = node("sampled")
        .volatile
        .as_ref()
        .expect("random() is found");
    assert_eq!(call.function, "random");
    assert_eq!((call.pos.line, call.pos.col), (15, 38), "{call:?}");
    assert_eq!(node("exact").volatile, None);
}
