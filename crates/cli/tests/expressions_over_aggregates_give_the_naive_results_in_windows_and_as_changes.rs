//! Expressions over aggregates in a select list and HAVING (`SUM(a) / COUNT(*)`,
//! `MAX(b) - MIN(b)`, `k * 1000 + COUNT(*)`), issue 17: over seeded random rows, a GROUP BY
//! without a window run one row per batch writes a changelog whose every `-U` retracts the
//! row (with the expressions' old values) that its `+I`/`+U` wrote, folding to the naive
//! results of the input; a GROUP BY over that updating result computes its expressions for
//! each change too; a tumbling window writes the naive result of each window and key. The
//! naive results compute as DataFusion's batch answer does: `BIGINT / BIGINT` truncated
//! toward zero, a group HAVING filters out not written.

use crate::common;

use std::collections::BTreeMap;

use common::{anduin_ok, fold_changes, Rng};

/// A row: `ts, k, j, a, b`.
type Row = (i64, i64, i64, i64, i64);

/// `rows` rows `ts,k,j,a,b` from `seed`: 1 ms to 250 ms apart, keys 0..5, `j` 0..3, `a` in
/// -50..50, `b` in 0..100.
fn input(seed: u64, rows: usize) -> (String, Vec<Row>) {
    let mut rng = Rng(seed);
    let mut ts = 1_767_225_600_000_i64;
    let mut csv = String::from("ts,k,j,a,b\n");
    let mut parsed = Vec::new();
    for _ in 0..rows {
        ts += 1 + rng.next(250) as i64;
        let k = rng.next(5) as i64;
        let j = rng.next(3) as i64;
        let a = rng.next(100) as i64 - 50;
        let b = rng.next(100) as i64;
        csv.push_str(&format!("{ts},{k},{j},{a},{b}\n"));
        parsed.push((ts, k, j, a, b));
    }
    (csv, parsed)
}

const TABLE: &str = "CREATE TABLE t (ts TIMESTAMP, k BIGINT, j BIGINT, a BIGINT, b BIGINT)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts', watermark = '10 seconds');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv', format = 'csv'MODE);
";

/// Runs `insert` over `csv`, one row per batch; the output's lines without the header.
fn run(csv: &str, insert: &str, changelog: bool) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), csv).expect("input");
    let mode = if changelog {
        ", mode = 'changelog'"
    } else {
        ""
    };
    // The script's own functions first, then the tables.
    let (functions, insert) = match insert.rfind("$$;\n") {
        Some(i) => insert.split_at(i + 4),
        None => ("", insert),
    };
    let query = format!("{functions}{}{insert}", TABLE.replace("MODE", mode));
    std::fs::write(dir.path().join("q.sql"), &query).expect("query");
    anduin_ok(
        dir.path(),
        &["run", "q.sql", "--no-api", "--batch-size", "1"],
    );
    let out = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
    out.lines().skip(1).map(str::to_string).collect()
}

/// Per key: `k,SUM(a) / COUNT(*),MAX(b) - MIN(b),k * 1000 + COUNT(*)` for the keys whose
/// spread is above 10.
fn naive_groups(rows: &[Row]) -> BTreeMap<String, String> {
    let mut per: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    for (_, k, _, a, b) in rows {
        per.entry(*k).or_default().push((*a, *b));
    }
    per.into_iter()
        .filter_map(|(k, v)| {
            let n = v.len() as i64;
            let sum: i64 = v.iter().map(|(a, _)| a).sum();
            let max = v.iter().map(|(_, b)| *b).max().expect("a row");
            let min = v.iter().map(|(_, b)| *b).min().expect("a row");
            (max - min > 10).then(|| {
                (
                    k.to_string(),
                    format!("{k},{},{},{}", sum / n, max - min, k * 1000 + n),
                )
            })
        })
        .collect()
}

#[test]
fn a_group_by_without_a_window_writes_each_change_of_its_expressions() {
    for seed in [1_u64, 2, 3] {
        let (csv, rows) = input(seed, 120);
        let lines = run(
            &csv,
            "INSERT INTO o SELECT k, SUM(a) / COUNT(*) AS avg_a, MAX(b) - MIN(b) AS spread, k * 1000 + COUNT(*) AS kc
FROM t GROUP BY k HAVING MAX(b) - MIN(b) > 10;",
            true,
        );
        assert!(
            lines.iter().any(|l| l.starts_with("-U,")),
            "seed {seed}: one row per batch updates some group: {lines:?}"
        );
        // Every -U retracts the row last written for its key: the expressions' old values.
        let folded = fold_changes(lines.iter().map(String::as_str), false);
        assert_eq!(folded, naive_groups(&rows), "seed {seed}");
    }
}

#[test]
fn a_group_by_over_an_updating_result_recomputes_its_expressions_for_each_change() {
    for seed in [4_u64, 5] {
        let (csv, rows) = input(seed, 100);
        let lines = run(
            &csv,
            "INSERT INTO o SELECT k, SUM(s) / COUNT(*) AS avg_s, MAX(s) - MIN(s) AS spread
FROM (SELECT k, j, SUM(a) AS s FROM t GROUP BY k, j) q GROUP BY k;",
            true,
        );
        let mut sums: BTreeMap<(i64, i64), i64> = BTreeMap::new();
        for (_, k, j, a, _) in &rows {
            *sums.entry((*k, *j)).or_default() += a;
        }
        let mut per: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
        for ((k, _), s) in sums {
            per.entry(k).or_default().push(s);
        }
        let naive: BTreeMap<String, String> = per
            .into_iter()
            .map(|(k, s)| {
                let n = s.len() as i64;
                let max = s.iter().max().expect("a sum");
                let min = s.iter().min().expect("a sum");
                (
                    k.to_string(),
                    format!("{k},{},{}", s.iter().sum::<i64>() / n, max - min),
                )
            })
            .collect();
        let folded = fold_changes(lines.iter().map(String::as_str), false);
        assert_eq!(folded, naive, "seed {seed}");
    }
}

#[test]
fn a_tumbling_window_writes_the_expressions_of_each_window_and_key() {
    for seed in [6_u64, 7] {
        let (csv, rows) = input(seed, 150);
        let mut lines = run(
            &csv,
            "INSERT INTO o SELECT window_start, k, SUM(a) / COUNT(*) AS avg_a, MAX(b) - MIN(b) AS spread, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '2' SECOND))
GROUP BY window_start, window_end, k HAVING COUNT(*) > 1 AND MAX(b) - MIN(b) > 10;",
            false,
        );
        lines.sort();
        let mut per: BTreeMap<(i64, i64), Vec<(i64, i64)>> = BTreeMap::new();
        for (ts, k, _, a, b) in &rows {
            per.entry((ts.div_euclid(2000) * 2000, *k))
                .or_default()
                .push((*a, *b));
        }
        let mut naive: Vec<String> = per
            .into_iter()
            .filter_map(|((start, k), v)| {
                let n = v.len() as i64;
                let sum: i64 = v.iter().map(|(a, _)| a).sum();
                let max = v.iter().map(|(_, b)| *b).max().expect("a row");
                let min = v.iter().map(|(_, b)| *b).min().expect("a row");
                (n > 1 && max - min > 10)
                    .then(|| format!("{start},{k},{},{},{n}", sum / n, max - min))
            })
            .collect();
        naive.sort();
        assert!(!naive.is_empty(), "seed {seed}: some window is kept");
        assert_eq!(lines, naive, "seed {seed}");
    }
}

/// The script's own aggregate (`CREATE AGGREGATE`) in an expression and in HAVING is
/// computed as a built-in one is: the query gives what it gives with `AVG` in its place.
#[test]
fn a_user_aggregate_in_an_expression_and_in_having_gives_what_the_built_in_gives() {
    const MEAN: &str = "CREATE AGGREGATE my_mean(x BIGINT) RETURNS DOUBLE LANGUAGE javascript AS $$
export function create_state() { return { sum: 0, n: 0 }; }
export function accumulate(s, x) { s.sum += x; s.n += 1; return s; }
export function merge(a, b) { return { sum: a.sum + b.sum, n: a.n + b.n }; }
export function finish(s) { return s.n == 0 ? null : s.sum / s.n; }
$$;
";
    let (csv, _) = input(8, 120);
    for (insert, changelog) in [
        (
            "INSERT INTO o SELECT k, MY_MEAN(a) * 2 AS m2, MAX(b) - MY_MEAN(b) AS gap FROM t GROUP BY k HAVING MY_MEAN(b) > 45;",
            true,
        ),
        (
            "INSERT INTO o SELECT window_start, k, MY_MEAN(a) * 2 AS m2 FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '3' SECOND)) GROUP BY window_start, window_end, k HAVING MY_MEAN(b) > 45;",
            false,
        ),
    ] {
        let built_in = insert.replace("MY_MEAN(a)", "AVG(CAST(a AS DOUBLE))").replace("MY_MEAN(b)", "AVG(CAST(b AS DOUBLE))");
        let mut user = run(&csv, &format!("{MEAN}{insert}"), changelog);
        let mut expected = run(&csv, &built_in, changelog);
        user.sort();
        expected.sort();
        assert!(!expected.is_empty(), "{insert}: some group is kept");
        assert_eq!(user, expected, "{insert}");
    }
}
