//! Exactly-once for OVER windows: an `over` giving each reading the sum and highest value of
//! its sensor's last four readings (`frame = "rows 3"`), written append-only, killed with
//! SIGKILL at seeded random moments and resumed from its checkpoints, writes the rows an
//! uninterrupted run writes — and those are the naive ones: per sensor, its readings in
//! event-time order, each with the aggregates of the three before it and itself. With the
//! state in the heap and in the LSM backend, and resumed at other parallelisms (the
//! partitions, their waiting rows and frames re-cut by key group).

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::killed::killed_then_finished;
use common::{anduin, rows_in_order};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "TS"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 5
  param count = 40000
  RATE
  output name = "events", type = "Event"
}
"#;

const OVER: &str = r#"
operator name = "last4", type = "over" {
  input name = "events"
  param keys = "sensor"
  param time = "ts"
  param frame = "rows 3"
  param aggregates = "SUM(value) AS total, MAX(value) AS top"
  output name = "stats"
}
operator name = "cut", type = "map" {
  input name = "stats"
  param columns = "CAST(ts AS BIGINT) AS t, sensor, value, total, top"
  output name = "rows"
}
operator name = "out", type = "writer" {
  input name = "rows"
  param path = "${OUTPUT}"
}
"#;

/// The events of `events.csv` (`ts,sensor,value`), in order.
fn events(path: &Path) -> Vec<[i64; 3]> {
    let text = std::fs::read_to_string(path).expect("events");
    text.lines()
        .skip(1)
        .map(|l| {
            let v: Vec<i64> = l.split(',').map(|c| c.parse().expect("an int")).collect();
            [v[0], v[1], v[2]]
        })
        .collect()
}

/// The naive rows: `t,sensor,value,total,top` per event, as a multiset.
fn naive(events: &[[i64; 3]]) -> BTreeMap<String, usize> {
    let mut per: BTreeMap<i64, Vec<[i64; 3]>> = BTreeMap::new();
    for e in events {
        per.entry(e[1]).or_default().push(*e);
    }
    let mut out = BTreeMap::new();
    for es in per.values_mut() {
        es.sort_by_key(|e| e[0]);
        for (i, e) in es.iter().enumerate() {
            let frame = &es[i.saturating_sub(3)..=i];
            let total: i64 = frame.iter().map(|f| f[2]).sum();
            let top = frame.iter().map(|f| f[2]).max().expect("a row");
            *out.entry(format!("{},{},{},{total},{top}", e[0], e[1], e[2]))
                .or_default() += 1;
        }
    }
    out
}

fn multiset<'a>(lines: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, usize> {
    let mut rows = BTreeMap::new();
    for l in lines {
        *rows.entry(l.to_string()).or_default() += 1;
    }
    rows
}

fn scenario(seed: u64, extra: &[&[&str]]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let events_flow = QUERY.replace("TS", "int").replace("RATE", "")
        + r#"operator name = "out", type = "writer" { input name = "events" param path = "events.csv" }"#;
    std::fs::write(dir.path().join("events.flow"), events_flow).expect("query");
    let out = anduin(dir.path(), &["run", "events.flow"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let query = QUERY
        .replace("TS", "timestamp")
        .replace("RATE", "param rate = 40000");
    std::fs::write(dir.path().join("q.flow"), query + OVER).expect("query");
    let out = anduin(
        dir.path(),
        &[
            "run",
            "q.flow",
            "--var",
            "OUTPUT=reference.csv",
            "--batch-size",
            "500",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference = rows_in_order(&dir.path().join("reference.csv"));
    let expected = multiset(reference.iter().map(String::as_str));
    let events = events(&dir.path().join("events.csv"));
    assert_eq!(
        expected,
        naive(&events),
        "the uninterrupted run gives the naive rows"
    );
    let got = multiset(
        killed_then_finished(dir.path(), seed, extra)
            .iter()
            .map(String::as_str),
    );
    assert!(
        got == expected,
        "seed {seed}: the resumed run wrote other rows than the uninterrupted one"
    );
}

#[test]
fn a_killed_over_window_resumes_to_the_output_of_an_uninterrupted_one() {
    scenario(51, &[&[]]);
    scenario(52, &[&["--state-backend", "lsm"]]);
}

#[test]
fn an_over_window_killed_at_one_parallelism_resumes_at_another_to_the_same_rows() {
    let p = |n| ["--parallelism", n];
    scenario(53, &[&p("2"), &p("4"), &p("1"), &p("3")]);
}
