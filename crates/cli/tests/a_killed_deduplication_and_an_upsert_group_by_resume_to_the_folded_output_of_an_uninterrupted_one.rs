//! Exactly-once for deduplication and for an upsert sink (issue 17): one SQL script reading
//! seeded rows out of order (a throttled file, so that it runs long enough to be killed)
//! writes each key's first row (keep-first: `ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts)
//! … = 1`, held until the watermark passes it) and each key's last row (keep-last: `ORDER BY
//! ts DESC`, updated in place) with `mode = 'changelog'`, and a GROUP BY's totals per key
//! with `mode = 'upsert', primary_key = 'k'`. Killed with SIGKILL after seeded numbers of
//! checkpoints and resumed from them, each output folds to the table an uninterrupted run's
//! folds to (for the upsert sink, the latest row per key) — and those tables are the naive
//! first row, last row and totals of each key. The rows are out of order by less than the
//! watermark delay, so that none is late: which rows a throttled source puts in a batch
//! (and so where its watermarks fall) depends on the clock, and a late row's fate on that.
//! With the state in the heap and in the LSM backend.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::killed::killed_then_ended;
use common::{anduin, fold_changes, rows_in_order, Rng};

const QUERY: &str = "
CREATE TABLE t (ts TIMESTAMP, k BIGINT, v BIGINT)
WITH (connector = 'file', path = 'in.csv', event_time = 'ts', watermark = '100 ms', rate = '20000');
CREATE TABLE firsts WITH (connector = 'file', path = '${OUTPUT}/first.csv', mode = 'changelog');
CREATE TABLE lasts WITH (connector = 'file', path = '${OUTPUT}/last.csv', mode = 'changelog');
CREATE TABLE totals WITH (connector = 'file', path = '${OUTPUT}/totals.csv', mode = 'upsert', primary_key = 'k');
INSERT INTO firsts SELECT k, ts, v FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS n FROM t) WHERE n = 1;
INSERT INTO lasts SELECT k, ts, v FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) AS n FROM t) WHERE n = 1;
INSERT INTO totals SELECT k, COUNT(*) AS n, SUM(v) AS total, MAX(v) AS hi FROM t GROUP BY k;
";

/// A row: `ts, k, v`.
type Row = (i64, i64, i64);

/// 40 000 rows from `seed`: times 0 to 2 ms apart, each up to 99 ms behind (less than the
/// 100 ms watermark delay: never late); keys drawn from a range that grows with the row
/// number, so that new keys come (and wait for the watermark) all through the run; few
/// values of times per key, so that equal times are many.
fn input(seed: u64) -> Vec<Row> {
    let mut rng = Rng(seed);
    let mut clock = 1_767_225_600_000_i64;
    (0..40_000_u64)
        .map(|i| {
            clock += rng.next(3) as i64;
            let ts = clock - rng.next(100) as i64;
            let k = rng.next(1 + i / 40) as i64;
            (ts, k, rng.next(1000) as i64)
        })
        .collect()
}

/// The naive tables: per key `k,ts,v` of its first row (earliest, of equal times the first
/// to come), of its last row (latest, of equal times the last to come), and `k,n,total,hi`.
fn naive(rows: &[Row]) -> [BTreeMap<String, String>; 3] {
    let mut first: BTreeMap<i64, Row> = BTreeMap::new();
    let mut last: BTreeMap<i64, Row> = BTreeMap::new();
    let mut totals: BTreeMap<i64, (i64, i64, i64)> = BTreeMap::new();
    for r in rows {
        let f = first.entry(r.1).or_insert(*r);
        if r.0 < f.0 {
            *f = *r;
        }
        let l = last.entry(r.1).or_insert(*r);
        if r.0 >= l.0 {
            *l = *r;
        }
        let t = totals.entry(r.1).or_insert((0, 0, i64::MIN));
        *t = (t.0 + 1, t.1 + r.2, t.2.max(r.2));
    }
    let row = |(k, (ts, _, v)): (&i64, &Row)| (k.to_string(), format!("{k},{ts},{v}"));
    [
        first.iter().map(row).collect(),
        last.iter().map(row).collect(),
        totals
            .iter()
            .map(|(k, (n, total, hi))| (k.to_string(), format!("{k},{n},{total},{hi}")))
            .collect(),
    ]
}

/// The three outputs under `dir`, each folded into its table (the upsert one as upserts).
fn folded(dir: &Path) -> [BTreeMap<String, String>; 3] {
    let fold = |name: &str, upsert: bool| {
        let rows = rows_in_order(&dir.join(name));
        fold_changes(rows.iter().map(String::as_str), upsert)
    };
    [
        fold("first.csv", false),
        fold("last.csv", false),
        fold("totals.csv", true),
    ]
}

fn scenario(seed: u64, extra: &[&[&str]]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let rows = input(seed);
    let csv: String = std::iter::once("ts,k,v\n".to_string())
        .chain(rows.iter().map(|(t, k, v)| format!("{t},{k},{v}\n")))
        .collect();
    std::fs::write(dir.path().join("in.csv"), csv).expect("input");
    std::fs::write(dir.path().join("q.sql"), QUERY).expect("query");

    // The reference: one run without checkpoints.
    std::fs::create_dir(dir.path().join("reference")).expect("a directory");
    let out = anduin(
        dir.path(),
        &[
            "run",
            "q.sql",
            "--var",
            "OUTPUT=reference",
            "--batch-size",
            "500",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "seed {seed}: {stderr}");
    let reference = dir.path().join("reference");
    let firsts = rows_in_order(&reference.join("first.csv"));
    assert!(
        firsts.iter().all(|r| r.starts_with("+I,")),
        "seed {seed}: keep-first is append-only"
    );
    let lasts = rows_in_order(&reference.join("last.csv"));
    assert!(
        lasts.iter().any(|r| r.starts_with("-U,")),
        "seed {seed}: keep-last updates its keys"
    );
    let expected = folded(&reference);
    assert!(
        expected == naive(&rows),
        "seed {seed}: the uninterrupted run folds to the naive first rows, last rows and totals"
    );

    // Killed two to four times, each after a seeded number of checkpoints, then finished.
    std::fs::create_dir(dir.path().join("out")).expect("a directory");
    killed_then_ended(dir.path(), "q.sql", seed, extra);
    let got = folded(&dir.path().join("out"));
    for (i, name) in ["keep-first", "keep-last", "upsert GROUP BY"]
        .iter()
        .enumerate()
    {
        assert!(
            got[i] == expected[i],
            "seed {seed}: the resumed {name} output folds to another table than the uninterrupted one"
        );
    }
}

#[test]
fn a_killed_deduplication_and_an_upsert_group_by_resume_to_the_folded_output_of_an_uninterrupted_one(
) {
    scenario(61, &[&[]]);
    scenario(62, &[&[]]);
}

#[test]
fn a_killed_deduplication_and_an_upsert_group_by_with_their_state_in_the_lsm_backend_resume_to_the_folded_output_of_an_uninterrupted_one(
) {
    scenario(63, &[&["--state-backend", "lsm"]]);
}
