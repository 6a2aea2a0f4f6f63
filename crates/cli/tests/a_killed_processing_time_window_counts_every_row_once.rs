//! Processing-time windows (`time_kind = "processing"`, SQL's `DESCRIPTOR(p_time)` over
//! `PROCTIME()`) give results that depend on timing, so no run equals another row for row;
//! what holds is that every row counts once, in some window: the counts per key summed over
//! all windows equal the rows in, in an uninterrupted run, at parallelism 2, and in a run
//! killed with SIGKILL at seeded moments and resumed from its checkpoints (the windows that
//! ended while it was down fire at once as it resumes, as in Flink).

use std::collections::BTreeMap;
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
  param seed = 9
  param count = 60000
  param rate = 40000
  output name = "events", type = "Event"
}
operator name = "stamp", type = "map" {
  input name = "events"
  param columns = "sensor, PROCTIME() AS pt"
  output name = "stamped"
}
operator name = "w", type = "window" {
  input name = "stamped"
  param kind = "tumbling"
  param size = "100ms"
  param time = "pt"
  param time_kind = "processing"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n"
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "${OUTPUT}"
}
"#;

/// The counts of the output at `path` (a file, or a directory of parts) summed per sensor,
/// after checking that every window is 100 ms of the clock.
fn per_sensor(path: &Path) -> BTreeMap<i64, i64> {
    let files: Vec<std::path::PathBuf> = if path.is_dir() {
        (std::fs::read_dir(path).expect("lists"))
            .map(|e| e.expect("an entry").path())
            .filter(|p| {
                !p.file_name()
                    .expect("a name")
                    .to_string_lossy()
                    .starts_with('.')
            })
            .collect()
    } else {
        vec![path.to_path_buf()]
    };
    let mut sums = BTreeMap::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("reads");
        for line in text.lines().skip(1) {
            let v: Vec<i64> = line
                .split(',')
                .map(|x| x.parse().expect("a number"))
                .collect();
            let [start, end, sensor, n] = v.as_slice() else {
                panic!("window_start, window_end, sensor, n: {line}");
            };
            assert_eq!((start % 100, end - start), (0, 100), "{line}");
            *sums.entry(*sensor).or_insert(0) += n;
        }
    }
    sums
}

#[test]
fn the_counts_of_every_window_add_up_to_the_rows_in_whatever_the_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let out = anduin(dir.path(), &["run", "q.flow", "--var", "OUTPUT=one.csv"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = per_sensor(&dir.path().join("one.csv"));
    assert_eq!(
        expected.values().sum::<i64>(),
        60_000,
        "every row counted once"
    );

    let out = anduin(
        dir.path(),
        &[
            "run",
            "q.flow",
            "--var",
            "OUTPUT=two.csv",
            "--parallelism",
            "2",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        per_sensor(&dir.path().join("two.csv")),
        expected,
        "at parallelism 2"
    );

    for seed in [41, 42] {
        let _ = std::fs::remove_dir_all(dir.path().join("ckpt"));
        let _ = std::fs::remove_dir_all(dir.path().join("out"));
        killed_then_finished(dir.path(), seed);
        assert_eq!(
            per_sensor(&dir.path().join("out")),
            expected,
            "seed {seed}: every row once, across the kills"
        );
    }
}
