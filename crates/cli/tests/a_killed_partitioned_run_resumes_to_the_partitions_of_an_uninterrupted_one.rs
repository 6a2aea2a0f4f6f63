//! Exactly-once for a partitioned writer (`partition_by`, SQL's `PARTITIONED BY`): a query
//! killed with SIGKILL at seeded random moments and resumed from its checkpoints writes, in
//! each partition's directory, exactly the rows an uninterrupted run writes there, none lost
//! and none twice, and no uncommitted part stays behind.

use std::path::Path;

use crate::a_killed_run_resumes_to_the_output_of_an_uninterrupted_one::killed_then_finished;
use crate::common;
use common::anduin;

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 7
  param count = 60000
  param rate = 40000
  output name = "events", type = "Event"
}
operator name = "parted", type = "map" {
  input name = "events"
  param columns = "ts, sensor, value, sensor % 3 AS p, CASE WHEN value < 50 THEN 'low' ELSE 'high' END AS level"
  output name = "rows"
}
operator name = "out", type = "writer" {
  input name = "rows"
  param path = "${OUTPUT}"
  param partition_by = "level, p"
}
"#;

/// Every row under `root`, after the directories it is in (`level=low/p=1 ts,sensor,value`),
/// sorted; fails on a file that is not a committed part.
fn partitioned_rows(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).expect("lists") {
            let p = e.expect("an entry").path();
            let name = p.file_name().expect("a name").to_string_lossy().to_string();
            if p.is_dir() {
                walk(&p, root, out);
                continue;
            }
            assert!(
                name.starts_with("part-"),
                "an uncommitted file stays: {}",
                p.display()
            );
            let rel = dir
                .strip_prefix(root)
                .expect("under the root")
                .display()
                .to_string();
            let text = std::fs::read_to_string(&p).expect("reads");
            // Each part starts with its header.
            out.extend(text.lines().skip(1).map(|l| format!("{rel} {l}")));
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

#[test]
fn a_killed_partitioned_run_resumes_to_the_partitions_of_an_uninterrupted_one() {
    for seed in [31, 32] {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
        let out = anduin(dir.path(), &["run", "q.flow", "--var", "OUTPUT=reference"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let expected = partitioned_rows(&dir.path().join("reference"));
        assert_eq!(expected.len(), 60_000, "every row, once");
        let partitions: std::collections::BTreeSet<&str> = expected
            .iter()
            .filter_map(|r| r.split(' ').next())
            .collect();
        assert_eq!(partitions.len(), 6, "{partitions:?}");

        killed_then_finished(dir.path(), seed);
        let got = partitioned_rows(&dir.path().join("out"));
        assert_eq!(
            got.len(),
            expected.len(),
            "seed {seed}: rows lost or duplicated"
        );
        assert!(
            got == expected,
            "seed {seed}: the partitions differ from the uninterrupted run's"
        );
    }
}
