//! Exactly-once for a lookup join (`lookup_join`, SQL's `JOIN side FOR SYSTEM_TIME AS OF`): a
//! generated stream enriched with a side table read from a file (two rows for even sensors,
//! one for odd ones below 60, none above: a LEFT join pads those), killed with SIGKILL at
//! seeded moments and resumed from its checkpoints, writes the rows an uninterrupted run
//! writes. The side table is not read again on restore: the checkpoint keeps it (and the
//! stream rows that waited for it), and its reader resumes at its end. In the heap and the
//! LSM backends, and at other parallelisms (the side's rows re-cut by key group).

use crate::common;

use common::killed::killed_then_finished;
use common::{anduin, rows_in_order};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
type name = "Side" {
  column name = "id", type = "int"
  column name = "label", type = "string"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 7
  param count = 30000
  param rate = 30000
  output name = "events", type = "Event"
}
operator name = "side", type = "reader" {
  param path = "side.csv"
  param format = "csv"
  output name = "labels", type = "Side"
}
operator name = "j", type = "lookup_join" {
  input name = "events"
  input name = "labels"
  param on = "events.sensor = labels.id"
  param how = "left"
  output name = "joined"
}
operator name = "out", type = "writer" {
  input name = "joined"
  param path = "${OUTPUT}"
}
"#;

/// The side table: sensors 0 to 59, two rows for even ones.
fn side_table() -> String {
    let mut s = String::from("id,label\n");
    for id in 0..60 {
        s.push_str(&format!("{id},s{id}\n"));
        if id % 2 == 0 {
            s.push_str(&format!("{id},even{id}\n"));
        }
    }
    s
}

fn sorted(mut rows: Vec<String>) -> Vec<String> {
    rows.sort_unstable();
    rows
}

/// Kill `i` runs with the flags `extra[i % extra.len()]`, the final run with the last.
fn scenario(seeds: &[u64], extra: &[&[&str]]) {
    for &seed in seeds {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
        std::fs::write(dir.path().join("side.csv"), side_table()).expect("side table");

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
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("side_rows 90"), "{stderr}");
        let expected = sorted(rows_in_order(&dir.path().join("reference.csv")));
        assert!(
            expected.len() > 30000,
            "even sensors join twice: {}",
            expected.len()
        );
        assert!(
            expected.iter().any(|r| r.ends_with(",,")),
            "some sensors have no side row"
        );

        let got = sorted(killed_then_finished(dir.path(), seed, extra));
        assert!(
            got == expected,
            "seed {seed}: the resumed run wrote other rows than the uninterrupted one ({} and {} rows)",
            got.len(),
            expected.len()
        );
    }
}

#[test]
fn a_killed_lookup_join_resumes_to_the_output_of_an_uninterrupted_one() {
    scenario(&[51, 52], &[&[]]);
}

#[test]
fn a_killed_lookup_join_with_its_state_in_the_lsm_backend_resumes_to_the_output_of_an_uninterrupted_one(
) {
    scenario(&[53], &[&["--state-backend", "lsm"]]);
}

#[test]
fn a_lookup_join_killed_at_one_parallelism_resumes_at_another_to_the_output_of_an_uninterrupted_one(
) {
    let p = |n| ["--parallelism", n];
    scenario(&[54], &[&p("3"), &p("1"), &p("2")]);
}
