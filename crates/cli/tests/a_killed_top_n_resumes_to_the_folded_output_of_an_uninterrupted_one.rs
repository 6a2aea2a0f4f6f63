//! Exactly-once for top-N: a `top_n` ranking each sensor's three highest readings (an
//! append-only input), and one ranking the two sensors of highest total per bucket of
//! sensors (an updating input: a GROUP BY's results, updated as rows come), their changelogs
//! written with `mode = "changelog"`, killed with SIGKILL at seeded random moments and
//! resumed from their checkpoints, fold to the multiset of rows an uninterrupted run's
//! changelog folds to — and that is the naive top-N of the input. Where the kills land
//! changes how the changes are cut into batches (so the changelog itself may differ), never
//! what it folds to. With the state in the heap and in the LSM backend, at parallelism 3, and
//! resumed each time at another parallelism (the partitions re-cut by key group).

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::killed::killed_then_finished;
use common::{anduin, rows_in_order};

const GENERATOR: &str = r#"
type name = "Event" {
  column name = "ts", type = "TS"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 5
  param count = 60000
  RATE
  output name = "events", type = "Event"
}
"#;

/// Each sensor's three highest readings (of equal values the earlier), with their rank.
const PER_SENSOR: &str = r#"
operator name = "top", type = "top_n" {
  input name = "events"
  param keys = "sensor"
  param order = "value DESC, ts"
  param limit = 3
  param rank_column = "rn"
  output name = "ranked"
}
operator name = "cut", type = "map" {
  input name = "ranked"
  param columns = "sensor, value, rn"
  output name = "best"
}
operator name = "out", type = "writer" {
  input name = "best"
  param path = "${OUTPUT}"
  param mode = "changelog"
}
"#;

/// Per bucket of sensors (`sensor % 7`), the two sensors of highest total.
const PER_BUCKET: &str = r#"
operator name = "totals", type = "aggregate" {
  input name = "events"
  param keys = "sensor"
  param aggregates = "SUM(value) AS total"
  output name = "totals"
}
operator name = "bucketed", type = "map" {
  input name = "totals"
  param columns = "sensor, total, sensor % 7 AS bucket"
  output name = "bucketed"
}
operator name = "top", type = "top_n" {
  input name = "bucketed"
  param keys = "bucket"
  param order = "total DESC, sensor"
  param limit = 2
  param rank_column = "rn"
  output name = "best"
}
operator name = "out", type = "writer" {
  input name = "best"
  param path = "${OUTPUT}"
  param mode = "changelog"
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

/// The naive per-sensor top three: `sensor,value,rn` rows.
fn naive_per_sensor(events: &[[i64; 3]]) -> BTreeMap<String, usize> {
    let mut per: BTreeMap<i64, Vec<[i64; 3]>> = BTreeMap::new();
    for e in events {
        per.entry(e[1]).or_default().push(*e);
    }
    let mut out = BTreeMap::new();
    for (sensor, mut es) in per {
        es.sort_by_key(|e| (std::cmp::Reverse(e[2]), e[0]));
        for (i, e) in es.iter().take(3).enumerate() {
            *out.entry(format!("{sensor},{},{}", e[2], i + 1))
                .or_default() += 1;
        }
    }
    out
}

/// The naive per-bucket top two: `sensor,total,bucket,rn` rows.
fn naive_per_bucket(events: &[[i64; 3]]) -> BTreeMap<String, usize> {
    let mut totals: BTreeMap<i64, i64> = BTreeMap::new();
    for e in events {
        *totals.entry(e[1]).or_default() += e[2];
    }
    let mut buckets: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    for (sensor, total) in totals {
        buckets.entry(sensor % 7).or_default().push((sensor, total));
    }
    let mut out = BTreeMap::new();
    for (bucket, mut sensors) in buckets {
        sensors.sort_by_key(|(s, t)| (std::cmp::Reverse(*t), *s));
        for (i, (s, t)) in sensors.iter().take(2).enumerate() {
            out.insert(format!("{s},{t},{bucket},{}", i + 1), 1);
        }
    }
    out
}

/// A changelog (`op,…` lines) folded into a multiset of rows.
fn folded<'a>(lines: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, usize> {
    let mut rows: BTreeMap<String, usize> = BTreeMap::new();
    for line in lines {
        let (op, row) = line.split_once(',').expect("an op");
        if op.starts_with('+') {
            *rows.entry(row.to_string()).or_default() += 1;
        } else {
            let n = rows
                .get_mut(row)
                .unwrap_or_else(|| panic!("{line} retracts no row"));
            *n -= 1;
            if *n == 0 {
                rows.remove(row);
            }
        }
    }
    rows
}

/// Kill `i` runs of `query` with the flags `extra[i % extra.len()]`, the final run with the
/// last.
fn scenario(query: &str, seeds: &[u64], extra: &[&[&str]]) {
    let per_sensor = query == PER_SENSOR;
    for &seed in seeds {
        let dir = tempfile::tempdir().expect("tempdir");
        let events_flow = GENERATOR.replace("TS", "int").replace("RATE", "")
            + r#"operator name = "out", type = "writer" { input name = "events" param path = "events.csv" }"#;
        std::fs::write(dir.path().join("events.flow"), events_flow).expect("query");
        let out = anduin(dir.path(), &["run", "events.flow"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let generator = GENERATOR
            .replace("TS", "timestamp")
            .replace("RATE", "param rate = 40000");
        std::fs::write(dir.path().join("q.flow"), generator + query).expect("query");

        // The reference: one run without checkpoints, into a single file.
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
            "the reference changes ranks"
        );
        let expected = folded(reference.iter().map(String::as_str));
        let events = events(&dir.path().join("events.csv"));
        let naive = if per_sensor {
            naive_per_sensor(&events)
        } else {
            naive_per_bucket(&events)
        };
        assert_eq!(
            expected, naive,
            "the uninterrupted run folds to the naive top-N"
        );

        // Kill it two to four times, each time after a random number of checkpoints.
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
}

#[test]
fn a_killed_top_n_of_an_append_only_stream_resumes_to_the_folded_output_of_an_uninterrupted_one() {
    scenario(PER_SENSOR, &[41, 42], &[&[]]);
}

#[test]
fn a_killed_top_n_of_an_updating_stream_resumes_to_the_folded_output_of_an_uninterrupted_one() {
    scenario(PER_BUCKET, &[43], &[&[]]);
}

#[test]
fn a_killed_top_n_with_its_state_in_the_lsm_backend_resumes_to_the_folded_output_of_an_uninterrupted_one(
) {
    scenario(PER_BUCKET, &[44], &[&["--state-backend", "lsm"]]);
}

#[test]
fn a_top_n_killed_at_one_parallelism_resumes_at_another_to_the_folded_output_of_an_uninterrupted_one(
) {
    let p = |n| ["--parallelism", n];
    scenario(PER_SENSOR, &[45], &[&p("2"), &p("4"), &p("1"), &p("3")]);
    scenario(PER_BUCKET, &[46], &[&p("3"), &p("1"), &p("2")]);
}
