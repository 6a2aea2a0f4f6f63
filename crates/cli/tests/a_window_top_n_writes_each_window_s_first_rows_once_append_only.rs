//! Window top-N (issue 17): a `ROW_NUMBER() OVER (PARTITION BY window_start, window_end
//! ORDER BY …) … WHERE rn <= N` over a window aggregate's results is planned as Flink's
//! Window Top-N — `anduin explain` calls it append-only, an append-only file sink takes it,
//! and it writes each window's first rows once, with their rank, when the window is
//! complete. Over seeded random input (out of order within the watermark's delay, at
//! parallelism 1 and 2, a row per batch or many) that equals a brute-force top-N per window
//! of the input; `rn = 1` per window and key is a window deduplication. Killed with SIGKILL
//! at seeded moments and resumed from its checkpoints (at other parallelisms), it writes
//! exactly the rows of an uninterrupted run.

use crate::common;

use std::collections::BTreeMap;

use common::killed::killed_then_finished;
use common::{anduin, anduin_ok, rows_in_order};

const SIZE_MS: i64 = 1_000;

/// The query: per 1-second window, the `LIMIT` keys of most rows (of equal counts the
/// smallest key), with their count and rank.
const QUERY: &str = "CREATE TABLE t (ts TIMESTAMP, k VARCHAR, v BIGINT)
WITH (connector = 'file', path = 'in.csv', event_time = 'ts', watermark = '1 second');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv');
INSERT INTO o SELECT * FROM (
  SELECT window_start, window_end, k, c,
         ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY c DESC, k) AS rn
  FROM (SELECT window_start, window_end, k, COUNT(*) AS c
        FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND))
        GROUP BY window_start, window_end, k))
WHERE rn <= LIMIT;";

/// A seeded xorshift.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// `n` rows `(ts, k, v)` over about `n / 20` seconds, each up to 400 ms out of order (less
/// than the watermark's delay: none is late), keys drawn from few so that counts tie.
fn input(seed: u64, n: usize) -> Vec<(i64, String, i64)> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut at = 1_704_067_200_000i64;
    (0..n)
        .map(|_| {
            at += i64::try_from(rng.next(100)).expect("small");
            let ts = at - i64::try_from(rng.next(400)).expect("small");
            let k = ["a", "b", "c", "d", "e", "ü"][usize::try_from(rng.next(6)).expect("small")];
            (
                ts,
                k.to_string(),
                i64::try_from(rng.next(50)).expect("small"),
            )
        })
        .collect()
}

/// The brute-force top-N per window: `window_start,window_end,k,c,rn` rows, sorted.
fn naive(rows: &[(i64, String, i64)], limit: usize) -> Vec<String> {
    let mut counts: BTreeMap<i64, BTreeMap<&str, usize>> = BTreeMap::new();
    for (ts, k, _) in rows {
        let start = ts - ts.rem_euclid(SIZE_MS);
        *counts.entry(start).or_default().entry(k).or_default() += 1;
    }
    let mut out = Vec::new();
    for (start, keys) in counts {
        let mut ranked: Vec<(&str, usize)> = keys.into_iter().collect();
        ranked.sort_by_key(|(k, c)| (std::cmp::Reverse(*c), *k));
        for (i, (k, c)) in ranked.iter().take(limit).enumerate() {
            out.push(format!("{start},{},{k},{c},{}", start + SIZE_MS, i + 1));
        }
    }
    out.sort();
    out
}

fn write_input(dir: &std::path::Path, rows: &[(i64, String, i64)]) {
    let mut text = String::from("ts,k,v\n");
    for (ts, k, v) in rows {
        text.push_str(&format!("{ts},{k},{v}\n"));
    }
    std::fs::write(dir.join("in.csv"), text).expect("input");
}

#[test]
fn a_window_top_n_is_append_only_and_equals_a_brute_force_top_n_per_window() {
    for (seed, limit, extra) in [
        (1u64, 2usize, &["--batch-size", "1"][..]),
        (2, 3, &["--parallelism", "2"][..]),
        (3, 1, &["--parallelism", "2", "--batch-size", "7"][..]),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let rows = input(seed, 2_000);
        write_input(dir.path(), &rows);
        std::fs::write(
            dir.path().join("q.sql"),
            QUERY.replace("LIMIT", &limit.to_string()),
        )
        .expect("query");
        let explained = anduin_ok(dir.path(), &["explain", "q.sql"]);
        let explained = String::from_utf8_lossy(&explained.stdout);
        assert!(
            explained.contains("_top [top_n] append-only"),
            "seed {seed}: {explained}"
        );
        let mut args = vec!["run", "q.sql"];
        args.extend_from_slice(extra);
        anduin_ok(dir.path(), &args);
        let written = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
        let mut lines = written.lines();
        assert_eq!(lines.next(), Some("window_start,window_end,k,c,rn"));
        let mut got: Vec<String> = lines.map(str::to_string).collect();
        got.sort();
        assert_eq!(got, naive(&rows, limit), "seed {seed}, limit {limit}");
    }
}

const GENERATOR: &str = r#"
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
operator name = "w", type = "window" {
  input name = "events"
  param kind = "tumbling"
  param size = "100ms"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "SUM(value) AS total"
  output name = "totals"
}
operator name = "top", type = "top_n" {
  input name = "totals"
  param keys = "window_start, window_end"
  param window_end = "window_end"
  param order = "total DESC, sensor"
  param limit = 3
  param rank_column = "rn"
  output name = "best"
}
operator name = "out", type = "writer" {
  input name = "best"
  param path = "${OUTPUT}"
}
"#;

#[test]
fn a_killed_window_top_n_resumes_to_the_rows_of_an_uninterrupted_one() {
    let p = |n| ["--parallelism", n];
    for (seed, extra) in [
        (51u64, vec![&[][..]]),
        (52, vec![&p("2")[..], &p("1")[..], &p("3")[..]]),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("q.flow"), GENERATOR).expect("query");
        let out = anduin(
            dir.path(),
            &["run", "q.flow", "--var", "OUTPUT=reference.csv"],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut expected = rows_in_order(&dir.path().join("reference.csv"));
        assert!(expected.len() > 100, "{} rows", expected.len());
        expected.sort();
        let mut got = killed_then_finished(dir.path(), seed, &extra);
        got.sort();
        assert!(
            got == expected,
            "seed {seed}: the resumed run wrote other rows than the uninterrupted one ({} against {})",
            got.len(),
            expected.len()
        );
    }
}
