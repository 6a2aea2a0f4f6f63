//! An operator whose params changed while it ran, then grown beyond `--max-parallelism`: the
//! instances started at the rescale take the event-time progress the changed param gave the
//! others (a window's lateness cutoff after `allowed_lateness` grew, a pattern's forwarded
//! watermark after `within` changed), not what a fresh instance would compute, and the run
//! writes exactly what the same changes write with spare instances planned from the start
//! (`--max-parallelism 8`). Found by the probe of the growth: the run failed ("its instances
//! were at different lateness cutoffs").

use crate::common;

use common::{ctl, output_rows, slowed, stdout_ok};

/// Events whose timestamps are shifted back by up to 900 ms (late rows), counted per sensor
/// in sliding windows. Slowed to almost nothing until the steps are done.
const LATE: &str = r#"type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 11
  param count = 60000
  param rate = 0.001
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "m", type = "map" {
  input name = "events"
  param columns = "to_timestamp_millis(CAST(ts AS BIGINT) - (value % 10) * 100) AS ts, sensor, value"
  output name = "shifted"
}
operator name = "w", type = "window" {
  input name = "shifted"
  param kind = "sliding"
  param size = "200ms"
  param slide = "50ms"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, SUM(value) AS total, MAX(value) AS hi"
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "${OUTPUT}"
}
"#;

/// Runs of falling then rising values per sensor, within 1.5 s. Slowed as [`LATE`].
const RUNS: &str = r#"type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 21
  param count = 60000
  param rate = 0.001
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "p", type = "pattern" {
  input name = "events"
  param partition_by = "sensor"
  param order_by = "ts"
  param pattern = "A B+ C+"
  param define = "B AS value < PREV(value), C AS value > PREV(value)"
  param measures = "MATCH_NUMBER() AS n, A.ts AS a_ts, LAST(C.ts) AS c_ts, COUNT(B.*) AS falls, MIN(B.value) AS low"
  param within = "1500ms"
  param after_match = "skip to next row"
  param rows_per_match = "all"
  output name = "runs"
}
operator name = "out", type = "writer" {
  input name = "runs"
  param path = "${OUTPUT}"
}
"#;

/// `query` run with `--max-parallelism max`, `changes` made one after another (`ctl`
/// arguments), then its generator at full speed to the end: its sorted output.
fn run(query: &str, max: &str, changes: &[&[&str]]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    std::fs::write(d.join("q.flow"), query).expect("query");
    let (run, api) = slowed::start(d, &["--parallelism", "2", "--max-parallelism", max]);
    for change in changes {
        stdout_ok(&ctl(d, &api, change));
    }
    stdout_ok(&ctl(d, &api, &["set", "q", "gen", "rate", "1000000"]));
    let out = run.wait_output();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    output_rows(&d.join("out.csv"))
}

/// The same changes with spare instances and with instances started while running.
fn same_with_growth(query: &str, changes: &[&[&str]]) {
    let spare = run(query, "8", changes);
    let grown = run(query, "2", changes);
    assert!(!spare.is_empty(), "the query writes rows");
    assert_eq!(grown.len(), spare.len(), "rows lost or duplicated");
    assert!(
        grown == spare,
        "the output differs from the run with spare instances"
    );
}

#[test]
fn a_window_whose_lateness_grew_while_running_grows_to_what_spare_instances_write() {
    same_with_growth(
        LATE,
        &[
            &["set", "q", "w", "allowed_lateness", "2s"],
            &["scale", "q", "w", "3"],
            &["scale", "q", "w", "6"],
        ],
    );
}

#[test]
fn a_pattern_whose_time_bound_changed_while_running_grows_to_what_spare_instances_write() {
    same_with_growth(
        RUNS,
        &[
            &["set", "q", "p", "within", "700ms"],
            &["scale", "q", "p", "3"],
            &["scale", "q", "p", "5"],
        ],
    );
}
