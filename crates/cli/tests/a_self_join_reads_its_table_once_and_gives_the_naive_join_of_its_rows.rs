//! Self-joins (issue 17), as a Flink user writes them: `FROM t a JOIN t b ON a.k = b.k AND …`.
//! The table is read once (one reader in `anduin explain`), its stream feeding both sides of
//! the join (the right one through a map that keeps every column). Over seeded random rows,
//! a regular inner join, a regular LEFT join (an updating result, folded), an interval join
//! and a window join of a table with itself each give the naive join of the rows with
//! themselves.

use crate::common;

use std::collections::BTreeMap;

use common::{anduin_ok, stdout_ok, Rng};

/// A row: `ts, k, a`.
type Row = (i64, i64, i64);

/// `n` rows from `seed`, 1 to 80 ms apart (up to 200 ms out of order), keys 0..4, `a` in
/// 0..100.
fn input(seed: u64, n: usize) -> Vec<Row> {
    let mut rng = Rng(seed);
    let mut ts = 1_767_225_600_000_i64;
    (0..n)
        .map(|_| {
            ts += 1 + rng.next(80) as i64;
            let behind = rng.next(200) as i64;
            (ts - behind, rng.next(4) as i64, rng.next(100) as i64)
        })
        .collect()
}

/// Runs `insert` over `rows` (a watermark 1 s behind, one row per batch): `explain`'s text
/// and the output's rows folded (a changelog's `+I`/`+U` add a row, `-U`/`-D` take it back),
/// sorted.
fn run(rows: &[Row], insert: &str) -> (String, Vec<String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let csv: String = std::iter::once("ts,k,a\n".to_string())
        .chain(rows.iter().map(|(t, k, a)| format!("{t},{k},{a}\n")))
        .collect();
    std::fs::write(dir.path().join("in.csv"), csv).expect("input");
    std::fs::write(
        dir.path().join("q.sql"),
        format!(
            "CREATE TABLE t (ts TIMESTAMP, k BIGINT, a BIGINT)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts', watermark = '1 second');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv', format = 'csv', mode = 'changelog');
{insert}"
        ),
    )
    .expect("query");
    let explain = stdout_ok(&anduin_ok(dir.path(), &["explain", "q.sql"]));
    anduin_ok(
        dir.path(),
        &["run", "q.sql", "--no-api", "--batch-size", "1"],
    );
    let text = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
    let mut table: BTreeMap<String, i64> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let (op, row) = line.split_once(',').expect("an op");
        *table.entry(row.to_string()).or_default() += match op {
            "+I" | "+U" => 1,
            "-U" | "-D" => -1,
            other => panic!("unknown op {other}"),
        };
    }
    let mut folded = Vec::new();
    for (row, n) in table {
        assert!(n >= 0, "{row} taken back more often than written");
        folded.extend(std::iter::repeat_n(row, n as usize));
    }
    (explain, folded)
}

fn sorted(mut rows: Vec<String>) -> Vec<String> {
    rows.sort();
    rows
}

/// Checks that `explain` reads the table once.
fn read_once(explain: &str, what: &str) {
    assert_eq!(
        explain.matches("[reader]").count(),
        1,
        "{what}: one reader for both sides:\n{explain}"
    );
}

#[test]
fn a_regular_inner_and_left_self_join_give_the_naive_joins() {
    for seed in [1_u64, 2] {
        let rows = input(seed, 80);
        let (explain, got) = run(
            &rows,
            "INSERT INTO o SELECT a.k, a.a, b.a AS ba FROM t a JOIN t b ON a.k = b.k AND a.a < b.a;",
        );
        read_once(&explain, "inner");
        let naive: Vec<String> = rows
            .iter()
            .flat_map(|x| {
                rows.iter()
                    .filter(move |y| x.1 == y.1 && x.2 < y.2)
                    .map(move |y| format!("{},{},{}", x.1, x.2, y.2))
            })
            .collect();
        assert!(!naive.is_empty());
        assert_eq!(got, sorted(naive), "seed {seed}: inner");

        let (explain, got) = run(
            &rows,
            "INSERT INTO o SELECT a.k, a.a, b.a AS ba FROM t a LEFT JOIN t b ON a.k = b.k AND a.a + 60 < b.a;",
        );
        read_once(&explain, "left");
        let naive: Vec<String> = rows
            .iter()
            .flat_map(|x| {
                let partners: Vec<String> = rows
                    .iter()
                    .filter(|y| x.1 == y.1 && x.2 + 60 < y.2)
                    .map(|y| format!("{},{},{}", x.1, x.2, y.2))
                    .collect();
                if partners.is_empty() {
                    vec![format!("{},{},", x.1, x.2)]
                } else {
                    partners
                }
            })
            .collect();
        assert!(naive.iter().any(|r| r.ends_with(',')), "some row unmatched");
        assert_eq!(got, sorted(naive), "seed {seed}: left");
    }
}

#[test]
fn an_interval_self_join_pairs_each_row_with_those_of_its_key_in_the_second_before() {
    for seed in [3_u64, 4] {
        let rows = input(seed, 150);
        let (explain, got) = run(
            &rows,
            "INSERT INTO o SELECT a.ts, a.k, a.a, b.a AS ba FROM t a JOIN t b
ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '1' SECOND AND b.ts;",
        );
        read_once(&explain, "interval");
        let naive: Vec<String> = rows
            .iter()
            .flat_map(|x| {
                rows.iter()
                    .filter(move |y| x.1 == y.1 && y.0 - 1000 <= x.0 && x.0 <= y.0)
                    .map(move |y| format!("{},{},{},{}", x.0, x.1, x.2, y.2))
            })
            .collect();
        assert!(naive.len() > rows.len(), "seed {seed}: rows pair up");
        assert_eq!(got, sorted(naive), "seed {seed}");
    }
}

#[test]
fn a_window_self_join_pairs_the_rows_of_each_window_and_key() {
    for seed in [5_u64, 6] {
        let rows = input(seed, 150);
        let (explain, got) = run(
            &rows,
            "INSERT INTO o SELECT a.window_start, a.k, a.a, b.a AS ba
FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '2' SECOND)) a
JOIN TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '2' SECOND)) b
ON a.k = b.k AND a.window_start = b.window_start AND a.window_end = b.window_end;",
        );
        read_once(&explain, "window");
        let start = |ts: i64| ts.div_euclid(2000) * 2000;
        let naive: Vec<String> = rows
            .iter()
            .flat_map(|x| {
                rows.iter()
                    .filter(move |y| x.1 == y.1 && start(x.0) == start(y.0))
                    .map(move |y| format!("{},{},{},{}", start(x.0), x.1, x.2, y.2))
            })
            .collect();
        assert_eq!(got, sorted(naive), "seed {seed}");
    }
}
