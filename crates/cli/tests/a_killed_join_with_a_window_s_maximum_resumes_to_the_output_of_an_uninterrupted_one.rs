//! Issue 23: a join of a stream with the maximum of its own column per tumbling window runs
//! with an `extreme_filter` before it (the best value of each open window in every
//! checkpoint, inline); killed with SIGKILL at seeded moments and resumed from its
//! checkpoints, it writes exactly the rows of an uninterrupted run.

use crate::common;

use common::anduin_ok;

const PRUNED: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 11
  param count = 60000
  param rate = 40000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "w", type = "window" {
  input name = "events"
  param kind = "tumbling"
  param size = "100ms"
  param time = "ts"
  param aggregates = "MAX(value) AS top, COUNT(*) AS n"
  output name = "tops"
}
operator name = "named", type = "map" {
  input name = "tops"
  param columns = "top AS best, window_end AS until"
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
operator name = "out", type = "writer" {
  input name = "highest"
  param path = "${OUTPUT}"
}
"#;

#[test]
fn a_killed_join_with_a_window_s_maximum_resumes_to_the_output_of_an_uninterrupted_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), PRUNED).expect("query");
    let out = anduin_ok(dir.path(), &["explain", "q.flow", "--var", "OUTPUT=o"]);
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(
        plan.contains("j_prune [extreme_filter]"),
        "the planner puts the filter before the join: {plan}"
    );
    super::a_killed_run_resumes_to_the_output_of_an_uninterrupted_one::scenario_with(
        PRUNED,
        &[41, 42],
        &[],
        500,
    );
}
