//! Flink 1.19's `SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), gap)` (issue 17): a window
//! aggregation over it, grouped by its partition's columns, gives the naive sessions of each
//! key over seeded random rows (a session: rows of a key at most `gap` apart, from its first
//! row to its last plus `gap`), and what the form without PARTITION BY gives.

use crate::common;

use std::collections::BTreeMap;

use common::{anduin_ok, Rng};

/// `n` rows `ts,k,v` from `seed`, in time order, 1 to 900 ms apart, keys 0..3.
fn input(seed: u64, n: usize) -> Vec<(i64, i64, i64)> {
    let mut rng = Rng(seed);
    let mut ts = 1_767_225_600_000_i64;
    (0..n)
        .map(|_| {
            ts += 1 + rng.next(900) as i64;
            (ts, rng.next(3) as i64, rng.next(100) as i64)
        })
        .collect()
}

fn run(rows: &[(i64, i64, i64)], from: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let csv: String = std::iter::once("ts,k,v\n".to_string())
        .chain(rows.iter().map(|(t, k, v)| format!("{t},{k},{v}\n")))
        .collect();
    std::fs::write(dir.path().join("in.csv"), csv).expect("input");
    std::fs::write(
        dir.path().join("q.sql"),
        format!(
            "CREATE TABLE t (ts TIMESTAMP, k BIGINT, v BIGINT)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts', watermark = '1 second');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv', format = 'csv');
INSERT INTO o SELECT window_start, window_end, k, COUNT(*) AS n, SUM(v) AS total
FROM TABLE({from}) GROUP BY k, window_start, window_end;"
        ),
    )
    .expect("query");
    anduin_ok(
        dir.path(),
        &["run", "q.sql", "--no-api", "--batch-size", "7"],
    );
    let text = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
    let mut rows: Vec<String> = text.lines().skip(1).map(str::to_string).collect();
    rows.sort();
    rows
}

#[test]
fn a_session_partitioned_by_its_group_keys_gives_each_keys_sessions() {
    for seed in [1_u64, 2, 3] {
        let rows = input(seed, 200);
        let gap = 2000;
        let mut per: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
        for (ts, k, v) in &rows {
            per.entry(*k).or_default().push((*ts, *v));
        }
        let mut naive = Vec::new();
        for (k, rs) in per {
            let mut session: Vec<(i64, i64)> = Vec::new();
            let mut close = |s: &[(i64, i64)]| {
                let (first, last) = (s[0].0, s[s.len() - 1].0);
                let total: i64 = s.iter().map(|(_, v)| v).sum();
                naive.push(format!("{first},{},{k},{},{total}", last + gap, s.len()));
            };
            for r in rs {
                if session.last().is_some_and(|l| r.0 > l.0 + gap) {
                    close(&session);
                    session.clear();
                }
                session.push(r);
            }
            close(&session);
        }
        naive.sort();
        assert!(naive.len() > 10, "seed {seed}: several sessions");
        let partitioned = run(
            &rows,
            "SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), INTERVAL '2' SECOND)",
        );
        assert_eq!(partitioned, naive, "seed {seed}");
        let unpartitioned = run(
            &rows,
            "SESSION(TABLE t, DESCRIPTOR(ts), INTERVAL '2' SECOND)",
        );
        assert_eq!(unpartitioned, naive, "seed {seed}: without PARTITION BY");
    }
}
