//! Exactly-once for an OVER window over an updating stream: per sensor its highest value and
//! first time (a GROUP BY without a window, updated as events come), per board of sensors
//! (`sensor % 4`) the sum and highest of the highest values of a sensor and the two that began
//! before it (`over`, `rows 2`, ordered by the first time), its changelog killed with SIGKILL at
//! seeded random moments and resumed from its checkpoints, folds to the multiset of rows an
//! uninterrupted run's changelog folds to — and those are the naive ones. With the state in the
//! heap and in the LSM backend, and resumed at other parallelisms (the partitions re-cut by key
//! group).

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::killed::killed_then_finished;
use common::{anduin, rows_in_order};

const EVENTS: &str = r#"
type name = "Event" {
  column name = "ts", type = "int"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 7
  param count = 40000
  RATE
  output name = "events", type = "Event"
}
"#;

const QUERY: &str = r#"
operator name = "per_sensor", type = "aggregate" {
  input name = "events"
  param keys = "sensor"
  param aggregates = "MAX(value) AS hi, MIN(ts) AS first"
  output name = "sensors"
}
operator name = "boards", type = "map" {
  input name = "sensors"
  param columns = "sensor % 4 AS board, sensor, hi, first"
  output name = "boarded"
}
operator name = "last3", type = "over" {
  input name = "boarded"
  param keys = "board"
  param time = "first"
  param frame = "rows 2"
  param aggregates = "SUM(hi) AS s, MAX(hi) AS m"
  output name = "stats"
}
operator name = "out", type = "writer" {
  input name = "stats"
  param path = "${OUTPUT}"
  param mode = "changelog"
}
"#;

/// The naive rows `board,sensor,hi,first,s,m` of the events of `events.csv` (`ts,sensor,value`).
fn naive(path: &Path) -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(path).expect("events");
    // Per sensor: (highest value, first time).
    let mut sensors: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for l in text.lines().skip(1) {
        let v: Vec<i64> = l.split(',').map(|c| c.parse().expect("an int")).collect();
        let s = sensors.entry(v[1]).or_insert((v[2], v[0]));
        *s = (s.0.max(v[2]), s.1.min(v[0]));
    }
    let mut boards: BTreeMap<i64, Vec<(i64, i64, i64)>> = BTreeMap::new();
    for (sensor, (hi, first)) in sensors {
        boards
            .entry(sensor % 4)
            .or_default()
            .push((first, sensor, hi));
    }
    let mut out = BTreeMap::new();
    for (board, mut rows) in boards {
        // By first time, then by the row's values.
        rows.sort();
        for i in 0..rows.len() {
            let frame = &rows[i.saturating_sub(2)..=i];
            let s: i64 = frame.iter().map(|r| r.2).sum();
            let m = frame.iter().map(|r| r.2).max().expect("a row");
            let (first, sensor, hi) = rows[i];
            *out.entry(format!("{board},{sensor},{hi},{first},{s},{m}"))
                .or_default() += 1;
        }
    }
    out
}

/// A changelog's lines (`op,row`) folded into the multiset of rows they describe.
fn folded<'a>(lines: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, usize> {
    let mut rows: BTreeMap<String, usize> = BTreeMap::new();
    for line in lines {
        let (op, row) = line.split_once(',').expect("op,row");
        match op {
            "+I" | "+U" => *rows.entry(row.to_string()).or_default() += 1,
            "-U" | "-D" => {
                let n = rows.get_mut(row);
                let n = n.unwrap_or_else(|| panic!("{line} takes out a row not held"));
                *n -= 1;
                if *n == 0 {
                    rows.remove(row);
                }
            }
            other => panic!("unknown op {other}"),
        }
    }
    rows
}

fn scenario(seed: u64, extra: &[&[&str]]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let events_flow = EVENTS.replace("RATE", "")
        + r#"operator name = "out", type = "writer" { input name = "events" param path = "events.csv" }"#;
    std::fs::write(dir.path().join("events.flow"), events_flow).expect("query");
    let out = anduin(dir.path(), &["run", "events.flow"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let query = EVENTS.replace("RATE", "param rate = 40000") + QUERY;
    std::fs::write(dir.path().join("q.flow"), query).expect("query");
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
    assert!(
        reference.iter().any(|r| r.starts_with("-U,")),
        "the OVER window updates its results"
    );
    let expected = folded(reference.iter().map(String::as_str));
    assert_eq!(
        expected,
        naive(&dir.path().join("events.csv")),
        "the uninterrupted run folds to the naive rows"
    );
    let got = folded(
        killed_then_finished(dir.path(), seed, extra)
            .iter()
            .map(String::as_str),
    );
    assert!(
        got == expected,
        "seed {seed}: the resumed changelog folds to other rows than the uninterrupted one"
    );
}

#[test]
fn a_killed_over_window_over_a_group_by_resumes_to_the_folded_output_of_an_uninterrupted_one() {
    scenario(61, &[&[]]);
    scenario(62, &[&["--state-backend", "lsm"]]);
}

#[test]
fn an_over_window_over_a_group_by_killed_at_one_parallelism_resumes_at_another() {
    let p = |n| ["--parallelism", n];
    scenario(63, &[&p("2"), &p("4"), &p("1"), &p("3")]);
}
