//! A regular join's output can be written as upserts where its rows have a key: joined
//! GROUP BYs (whose rows their grouping columns identify), INNER, LEFT or RIGHT, are keyed by
//! both inputs' keys together, and `mode = 'upsert', primary_key = 'xk, yk, g'` folds to the
//! naive join of the naive aggregates, as the changelog does (issue 17's probe found every
//! upsert after a join refused, with a message about GROUP BY). A FULL join's rows have no
//! key (a row padded on the left and one padded on the right may share one), nor has a
//! top-N's without its row number: each is refused naming the join or the top-N.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::{anduin, Rng};

/// `a.csv` (`k` in k0…k11) and `b.csv` (`k` in k4…k15, `g` in 0…2), from `seed`.
fn inputs(dir: &Path, seed: u64) {
    let mut rng = Rng(seed);
    let mut a = String::from("ts,k,v\n");
    for i in 0..200 {
        a.push_str(&format!(
            "{},k{},{}\n",
            1_700_000_000_000u64 + i,
            rng.next(12),
            rng.next(50)
        ));
    }
    let mut b = String::from("ts,k,g,w\n");
    for i in 0..200 {
        b.push_str(&format!(
            "{},k{},{},{}\n",
            1_700_000_000_000u64 + i,
            4 + rng.next(12),
            rng.next(3),
            rng.next(50)
        ));
    }
    std::fs::write(dir.join("a.csv"), a).expect("a");
    std::fs::write(dir.join("b.csv"), b).expect("b");
}

fn query(how: &str, mode: &str) -> String {
    format!(
        "CREATE TABLE a (ts TIMESTAMP, k VARCHAR, v BIGINT) WITH (connector = 'file', path = 'a.csv');
CREATE TABLE b (ts TIMESTAMP, k VARCHAR, g BIGINT, w BIGINT) WITH (connector = 'file', path = 'b.csv');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv', {mode});
INSERT INTO o SELECT x.k AS xk, x.n, x.mx, y.k AS yk, y.g, y.s
FROM (SELECT k, COUNT(*) AS n, MAX(v) AS mx FROM a GROUP BY k) x
{how} (SELECT k, g, SUM(w) AS s FROM b GROUP BY k, g) y ON x.k = y.k;
"
    )
}

/// The rows of the CSV file `path` (header left out), split.
fn rows(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .expect("the output")
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

/// The naive `how` join of the naive aggregates of `dir`'s inputs, as the CSV rows
/// `xk,n,mx,yk,g,s` (a null is empty).
fn naive(dir: &Path, how: &str) -> BTreeSet<Vec<String>> {
    let mut x: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for r in rows(&dir.join("a.csv")) {
        let v: u64 = r[2].parse().expect("v");
        let e = x.entry(r[1].clone()).or_insert((0, 0));
        *e = (e.0 + 1, e.1.max(v));
    }
    let mut y: BTreeMap<(String, String), u64> = BTreeMap::new();
    for r in rows(&dir.join("b.csv")) {
        *y.entry((r[1].clone(), r[2].clone())).or_default() += r[3].parse::<u64>().expect("w");
    }
    let mut out = BTreeSet::new();
    let s = |v: &str| v.to_string();
    for (xk, (n, mx)) in &x {
        let partners: Vec<_> = y.iter().filter(|((yk, _), _)| yk == xk).collect();
        for ((yk, g), sum) in &partners {
            out.insert(vec![
                s(xk),
                n.to_string(),
                mx.to_string(),
                s(yk),
                s(g),
                sum.to_string(),
            ]);
        }
        if partners.is_empty() && how == "LEFT JOIN" {
            out.insert(vec![
                s(xk),
                n.to_string(),
                mx.to_string(),
                s(""),
                s(""),
                s(""),
            ]);
        }
    }
    if how == "RIGHT JOIN" {
        for ((yk, g), sum) in &y {
            if !x.contains_key(yk) {
                out.insert(vec![s(""), s(""), s(""), s(yk), s(g), sum.to_string()]);
            }
        }
    }
    out
}

/// Runs `how` into `mode` in `dir`, one row per few batches.
fn run(dir: &Path, how: &str, mode: &str) -> std::process::Output {
    std::fs::write(dir.join("q.sql"), query(how, mode)).expect("query");
    let _ = std::fs::remove_file(dir.join("out.csv"));
    anduin(
        dir,
        &["run", "q.sql", "--no-api", "-q", "--batch-size", "3"],
    )
}

#[test]
fn inner_left_and_right_joins_of_group_bys_upsert_by_both_keys_to_the_naive_join() {
    for seed in [1, 2, 3] {
        let dir = tempfile::tempdir().expect("tempdir");
        inputs(dir.path(), seed);
        for how in ["JOIN", "LEFT JOIN", "RIGHT JOIN"] {
            let expected = naive(dir.path(), how);
            let out = run(
                dir.path(),
                how,
                "mode = 'upsert', primary_key = 'xk, yk, g'",
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "seed {seed}, {how}: {stderr}");
            // Folded by the key (xk, yk, g): a +I/+U sets its row, a -D removes it.
            let mut table: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
            for r in rows(&dir.path().join("out.csv")) {
                let (op, row) = (r[0].clone(), r[1..].to_vec());
                let key = vec![row[0].clone(), row[3].clone(), row[4].clone()];
                match op.as_str() {
                    "+I" | "+U" => drop(table.insert(key, row)),
                    "-D" => drop(table.remove(&key)),
                    other => panic!("seed {seed}, {how}: an upsert output has no {other}"),
                }
            }
            let folded: BTreeSet<Vec<String>> = table.into_values().collect();
            assert_eq!(folded, expected, "seed {seed}, {how}: the upserts");
            assert!(
                expected.iter().any(|r| r[0].is_empty() || r[3].is_empty()) || how == "JOIN",
                "seed {seed}, {how}: the inputs pad no row"
            );
        }
    }
}

#[test]
fn a_full_join_and_a_top_n_without_its_row_number_are_refused_naming_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    inputs(dir.path(), 1);
    let out = run(
        dir.path(),
        "FULL JOIN",
        "mode = 'upsert', primary_key = 'xk, yk, g'",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("a FULL join's rows are not known to be identified by a key"),
        "{stderr}"
    );
    assert!(!stderr.contains("GROUP BY"), "{stderr}");
    // A join with an append-only input: its rows have no key.
    std::fs::write(
        dir.path().join("q.sql"),
        "CREATE TABLE a (ts TIMESTAMP, k VARCHAR, v BIGINT) WITH (connector = 'file', path = 'a.csv');
CREATE TABLE b (ts TIMESTAMP, k VARCHAR, g BIGINT, w BIGINT) WITH (connector = 'file', path = 'b.csv');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv', mode = 'upsert', primary_key = 'xk, yk');
INSERT INTO o SELECT x.k AS xk, x.n, b.k AS yk FROM (SELECT k, COUNT(*) AS n FROM a GROUP BY k) x JOIN b ON x.k = b.k;
",
    )
    .expect("query");
    let out = anduin(dir.path(), &["check", "q.sql"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("`b` is append-only"), "{stderr}");
    // A top-N of two rows per key without its row number; with it, the key and the row
    // number identify its rows.
    let top = |select: &str, key: &str| {
        format!(
            "CREATE TABLE a (ts TIMESTAMP, k VARCHAR, v BIGINT) WITH (connector = 'file', path = 'a.csv');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv', mode = 'upsert', primary_key = '{key}');
INSERT INTO o SELECT {select} FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM a) WHERE rn <= 2;
"
        )
    };
    std::fs::write(dir.path().join("q.sql"), top("k, v", "k, v")).expect("query");
    let out = anduin(dir.path(), &["check", "q.sql"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("a top-N keeps up to 2 rows per partition (`k`)"),
        "{stderr}"
    );
    assert!(!stderr.contains("GROUP BY"), "{stderr}");
    std::fs::write(dir.path().join("q.sql"), top("k, v, rn", "k, rn")).expect("query");
    let out = anduin(dir.path(), &["check", "q.sql"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
