//! Exactly-once for a regular join: a FULL OUTER join without a time bound of an updating
//! stream (a `GROUP BY` without a window, its groups' results updated as rows come) with an
//! append-only one, its changelog written with `mode = "changelog"`, killed with SIGKILL at
//! seeded random moments and resumed from its checkpoints, folds to the multiset of rows an
//! uninterrupted run's changelog folds to. Where the kills land changes how the changes are
//! cut into batches (so the changelog itself may differ), never what it folds to. With its
//! state in the heap and in the LSM backend, at parallelism 3, and resumed each time at
//! another parallelism (the rows re-cut by key group).

use crate::common;

use std::collections::BTreeMap;

use common::killed::killed_then_finished;
use common::{anduin, rows_in_order};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen_a", type = "generator" {
  param profile = "events"
  param seed = 5
  param count = 30000
  param rate = 30000
  output name = "a", type = "Event"
}
operator name = "gen_b", type = "generator" {
  param profile = "events"
  param seed = 6
  param count = 30000
  param rate = 30000
  output name = "b", type = "Event"
}
operator name = "high", type = "filter" {
  input name = "a"
  param condition = "a.value > 54"
  output name = "highs"
}
operator name = "per_sensor", type = "aggregate" {
  input name = "b"
  param keys = "sensor"
  param aggregates = "MAX(value) AS hi, COUNT(DISTINCT value) AS d"
  param having = "d > 1"
  output name = "totals"
}
operator name = "j", type = "regular_join" {
  input name = "totals"
  input name = "highs"
  param on = "totals.sensor = highs.sensor"
  param how = "full"
  param condition = "hi >= value - 3"
  output name = "joined"
}
operator name = "out", type = "writer" {
  input name = "joined"
  param path = "${OUTPUT}"
  param mode = "changelog"
}
"#;

/// The changelog `lines` (`op,cells…`) folded into a multiset of rows: `+I`/`+U` add one,
/// `-U`/`-D` take out one that is there.
fn fold(lines: &[String]) -> BTreeMap<String, u64> {
    let mut rows: BTreeMap<String, u64> = BTreeMap::new();
    for (i, line) in lines.iter().enumerate() {
        let (op, row) = line
            .split_once(',')
            .unwrap_or_else(|| panic!("line {i}: {line}"));
        match op {
            "+I" | "+U" => *rows.entry(row.to_string()).or_default() += 1,
            "-U" | "-D" => {
                let n = rows
                    .get_mut(row)
                    .unwrap_or_else(|| panic!("line {i}: {line} retracts a row not there"));
                *n -= 1;
                if *n == 0 {
                    rows.remove(row);
                }
            }
            other => panic!("line {i}: unknown op {other}"),
        }
    }
    rows
}

/// Kill `i` runs with the flags `extra[i % extra.len()]`, the final run with the last.
fn scenario(seeds: &[u64], extra: &[&[&str]]) {
    for &seed in seeds {
        let dir = tempfile::tempdir().expect("tempdir");
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
            reference.iter().any(|r| r.starts_with("-D,,,,")),
            "the reference retracts a row padded with nulls"
        );
        let expected = fold(&reference);
        assert!(
            expected.len() > 1000,
            "the join has rows: {}",
            expected.len()
        );

        // Kill it two to four times, each time after a random number of checkpoints.
        let got = fold(&killed_then_finished(dir.path(), seed, extra));
        assert!(
            got == expected,
            "seed {seed}: the resumed changelog folds to other rows than the uninterrupted one ({} and {} rows)",
            got.len(),
            expected.len()
        );
    }
}

#[test]
fn a_killed_regular_join_resumes_to_the_folded_output_of_an_uninterrupted_one() {
    scenario(&[41, 42], &[&[]]);
}

#[test]
fn a_killed_regular_join_with_its_state_in_the_lsm_backend_resumes_to_the_folded_output_of_an_uninterrupted_one(
) {
    scenario(&[43], &[&["--state-backend", "lsm"]]);
}

#[test]
fn a_regular_join_killed_at_one_parallelism_resumes_at_another_to_the_folded_output_of_an_uninterrupted_one(
) {
    let p = |n| ["--parallelism", n];
    scenario(&[44], &[&p("3"), &p("1"), &p("2")]);
}

/// With a state time-to-live longer than the run (a day: nothing expires), the join's and the
/// GROUP BY's write times go through the checkpoints, and the restores at other
/// parallelisms, beside their keys' state, and change nothing.
#[test]
fn a_regular_join_with_a_state_ttl_killed_and_resumed_at_other_parallelisms_folds_to_the_uninterrupted_output(
) {
    let ttl = |n| ["--state-ttl", "1d", "--parallelism", n];
    scenario(&[45], &[&ttl("2"), &ttl("3"), &ttl("1")]);
}
