//! A lookup join keeps its side table, not the stream: the state its checkpoints hold (the
//! `state_backend_bytes` the run reports) is the same after 3 000 and after 30 000 stream
//! rows, while a regular join of the same inputs keeps every stream row (its state grows
//! with the stream). The stream is paced (a second for 30 000 rows) and the side table is
//! read at once: with checkpoints, an exhausted source counts as idle until the last
//! checkpoint, so the join starts joining (and forgetting) stream rows then, and not at the
//! end of the whole input — not every stream row waits.

use crate::common;

use common::anduin_ok;

fn query(kind: &str, count: u64) -> String {
    format!(
        r#"
type name = "Event" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
type name = "Side" {{
  column name = "id", type = "int"
  column name = "label", type = "string"
}}
operator name = "gen", type = "generator" {{
  param profile = "events"
  param seed = 7
  param count = {count}
  param rate = 30000
  output name = "events", type = "Event"
}}
operator name = "side", type = "reader" {{
  param path = "side.csv"
  param format = "csv"
  output name = "labels", type = "Side"
}}
operator name = "j", type = "{kind}" {{
  input name = "events"
  input name = "labels"
  param on = "events.sensor = labels.id"
  output name = "joined"
}}
operator name = "out", type = "discard" {{
  input name = "joined"
}}
"#
    )
}

/// The figure `name` the run of `kind` over `count` stream rows reports for its join.
fn figure(kind: &str, count: u64, name: &str) -> u64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let side: String = (0..60).map(|i| format!("{i},s{i}\n")).collect();
    std::fs::write(dir.path().join("side.csv"), format!("id,label\n{side}")).expect("side");
    std::fs::write(dir.path().join("q.flow"), query(kind, count)).expect("query");
    let out = anduin_ok(
        dir.path(),
        &[
            "run",
            "q.flow",
            "--checkpoint-dir",
            "ckpt",
            "--checkpoint-every",
            "1000",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains(&format!("[{kind}]")))
        .unwrap_or_else(|| panic!("no line of the join: {stderr}"));
    let after = line
        .split_once(&format!("{name} "))
        .unwrap_or_else(|| panic!("no {name}: {line}"))
        .1;
    after
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{name} is a number: {line}"))
}

#[test]
fn a_lookup_joins_state_is_its_side_table_whatever_the_length_of_the_stream() {
    let short = figure("lookup_join", 3_000, "state_backend_bytes");
    let long = figure("lookup_join", 30_000, "state_backend_bytes");
    assert!(short > 0);
    assert_eq!(short, long, "the state does not grow with the stream");
    assert_eq!(figure("lookup_join", 30_000, "side_rows"), 60);
    let waited = figure("lookup_join", 30_000, "peak_stream_rows_waiting");
    assert!(
        waited < 30_000,
        "not every stream row waited for the side table: {waited}"
    );

    let regular_short = figure("regular_join", 3_000, "state_backend_bytes");
    let regular_long = figure("regular_join", 30_000, "state_backend_bytes");
    assert!(
        regular_long > 5 * regular_short,
        "a regular join keeps the stream: {regular_short} and {regular_long} bytes"
    );
}
