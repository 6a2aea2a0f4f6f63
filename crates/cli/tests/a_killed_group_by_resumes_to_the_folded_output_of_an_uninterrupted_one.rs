//! Exactly-once for an updating stream: a GROUP BY without a window (an `aggregate` whose
//! groups live as long as the query), its changelog written with `mode = "changelog"`,
//! killed with SIGKILL at seeded random moments and resumed from its checkpoints, folds to
//! the table an uninterrupted run's changelog folds to — and that table is the naive
//! aggregate of the input. Where the kills land changes how the changes are cut into
//! batches (so the changelog itself may differ), never what it folds to. With its state in
//! the heap and in the LSM backend, at parallelism 3, and resumed each time at another
//! parallelism (the groups re-cut by key group).

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::killed::killed_then_finished;
use common::{anduin, fold_changes, rows_in_order};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 5
  param count = 60000
  param rate = 40000
  output name = "events", type = "Event"
}
operator name = "per_sensor", type = "aggregate" {
  input name = "events"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, SUM(value) AS total, MIN(value) AS lo, MAX(value) AS hi, COUNT(DISTINCT value) AS d, COUNT(*) FILTER (WHERE value > 50) AS high"
  param having = "n > 1"
  output name = "totals"
}
operator name = "out", type = "writer" {
  input name = "totals"
  param path = "${OUTPUT}"
  param mode = "changelog"
}
"#;

/// The same events, to a file, for the naive aggregate.
const EVENTS: &str = r#"
type name = "Event" {
  column name = "ts", type = "int"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 5
  param count = 60000
  output name = "events", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "events"
  param path = "events.csv"
}
"#;

/// The naive aggregate of `events.csv` (`ts,sensor,value`): the rows the table must hold.
fn naive(events: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(events).expect("events");
    let mut groups: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let cols: Vec<i64> = line
            .split(',')
            .map(|c| c.parse().expect("an int"))
            .collect();
        groups.entry(cols[1]).or_default().push(cols[2]);
    }
    groups
        .into_iter()
        .filter(|(_, vs)| vs.len() > 1)
        .map(|(k, vs)| {
            let distinct = vs.iter().collect::<std::collections::BTreeSet<_>>().len();
            let high = vs.iter().filter(|v| **v > 50).count();
            let row = format!(
                "{k},{},{},{},{},{distinct},{high}",
                vs.len(),
                vs.iter().sum::<i64>(),
                vs.iter().min().expect("rows"),
                vs.iter().max().expect("rows"),
            );
            (k.to_string(), row)
        })
        .collect()
}

/// Kill `i` runs with the flags `extra[i % extra.len()]`, the final run with the last.
fn scenario(seeds: &[u64], extra: &[&[&str]]) {
    for &seed in seeds {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("events.flow"), EVENTS).expect("query");
        let out = anduin(dir.path(), &["run", "events.flow"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");

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
            "the reference updates its groups"
        );
        let expected = fold_changes(reference.iter().map(String::as_str), false);
        assert_eq!(
            expected,
            naive(&dir.path().join("events.csv")),
            "the uninterrupted run folds to the naive aggregate"
        );

        // Kill it two to four times, each time after a random number of checkpoints.
        let got = fold_changes(
            killed_then_finished(dir.path(), seed, extra)
                .iter()
                .map(String::as_str),
            false,
        );
        assert!(
            got == expected,
            "seed {seed}: the resumed changelog folds to another table than the uninterrupted one"
        );
    }
}

#[test]
fn a_killed_group_by_resumes_to_the_folded_output_of_an_uninterrupted_one() {
    scenario(&[31, 32], &[&[]]);
}

#[test]
fn a_killed_group_by_with_its_state_in_the_lsm_backend_resumes_to_the_folded_output_of_an_uninterrupted_one(
) {
    scenario(&[33], &[&["--state-backend", "lsm"]]);
}

#[test]
fn a_killed_parallel_group_by_resumes_to_the_folded_output_of_an_uninterrupted_one() {
    scenario(&[34], &[&["--parallelism", "3"]]);
}

#[test]
fn a_group_by_killed_at_one_parallelism_resumes_at_another_to_the_folded_output_of_an_uninterrupted_one(
) {
    let p = |n| ["--parallelism", n];
    scenario(&[35, 36], &[&p("2"), &p("4"), &p("1"), &p("3")]);
}
