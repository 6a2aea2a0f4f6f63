//! Hot standby in SQL: `fault_tolerance = 'hot-standby'` in the `WITH (…)` of the table an
//! INSERT writes gives every operator of that INSERT two copies behind a stream selector (its
//! filter, window and projection here). A run in which one copy of one of them fails (the
//! test-only `--fail-after`, at seeded copies, points and batch sizes) writes exactly what the
//! query without the option writes. `checkpoint` and `standby` in SQL are refused, saying why.

use crate::common;

use common::{anduin, run_sorted, Rng};

const HOT: &str = "
CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'file', path = '${INPUT}', event_time = 'ts', watermark = '2 seconds');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}', fault_tolerance = 'hot-standby');
INSERT INTO out
SELECT window_start, sensor, COUNT(*) AS cnt, MAX(value) AS top
FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '100' MILLISECOND))
WHERE value > 20
GROUP BY window_start, window_end, sensor;
";

#[test]
fn a_sql_query_asks_for_hot_standby_in_its_sink_table_and_loses_a_copy_for_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hot = dir.path().join("hot.sql");
    let plain = dir.path().join("plain.sql");
    std::fs::write(&hot, HOT).expect("query");
    std::fs::write(&plain, HOT.replace(", fault_tolerance = 'hot-standby'", "")).expect("query");
    let out = dir.path().join("out.csv");
    let (ran, expected) = run_sorted(&plain, "data/readings.csv", &out, &[]);
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(expected.len() > 1000, "{}", expected.len());
    let (ran, got) = run_sorted(&hot, "data/readings.csv", &out, &[]);
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let summary = String::from_utf8_lossy(&ran.stderr);
    for copy in [
        "insert1_where_replica_1",
        "insert1_window_replica_1",
        "insert1_select_replica_1",
    ] {
        assert!(summary.contains(copy), "{copy} runs: {summary}");
    }
    assert!(
        got == expected,
        "hot standby changes nothing when nothing fails"
    );

    let mut rng = Rng(14);
    for seed in 0..6 {
        let op = ["insert1_where", "insert1_window", "insert1_select"][rng.next(3) as usize];
        let copy = if rng.next(2) == 0 {
            op.to_string()
        } else {
            format!("{op}_replica_1")
        };
        let fail = format!("{copy}:{}", rng.next(400));
        let batch = ["1", "7", "100", "8192"][rng.next(4) as usize];
        let (ran, got) = run_sorted(
            &hot,
            "data/readings.csv",
            &out,
            &["--batch-size", batch, "--fail-after", &fail],
        );
        assert!(
            ran.status.success(),
            "seed {seed} ({fail}, batch {batch}): {}",
            String::from_utf8_lossy(&ran.stderr)
        );
        assert_eq!(
            got.len(),
            expected.len(),
            "seed {seed} ({fail}, batch {batch})"
        );
        assert!(
            got == expected,
            "seed {seed} ({fail}, batch {batch}): the output differs"
        );
    }

    for other in ["checkpoint", "standby"] {
        std::fs::write(&hot, HOT.replace("hot-standby", other)).expect("query");
        let checked = anduin(dir.path(), &["check", "hot.sql"]);
        let err = String::from_utf8_lossy(&checked.stderr);
        assert_eq!(checked.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!(
                "hot.sql:4:83: fault_tolerance = '{other}' in SQL: every operator"
            )),
            "{err}"
        );
    }
}
