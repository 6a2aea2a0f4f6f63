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

/// Folds the changelog or upsert rows of `path` (`op` first) as a multiset of rows: a `+I` or
/// `+U` adds its row, a `-U` or `-D` takes one copy of it out (which must be there).
fn fold_changelog(path: &Path, what: &str) -> BTreeSet<Vec<String>> {
    let mut table: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    for r in rows(path) {
        let (op, row) = (r[0].as_str(), r[1..].to_vec());
        match op {
            "+I" | "+U" => *table.entry(row).or_default() += 1,
            "-U" | "-D" => {
                let n = table.get_mut(&row);
                let Some(n) = n else {
                    panic!("{what}: {op} of {row:?}, a row not held")
                };
                *n -= 1;
                if *n == 0 {
                    table.remove(&row);
                }
            }
            other => panic!("{what}: no change kind {other}"),
        }
    }
    assert!(table.values().all(|n| *n == 1), "{what}: a row twice");
    table.into_keys().collect()
}

/// Folds the upsert rows of `path` by the key (`xk`, `yk`, `g`): a `+I` or `+U` sets its
/// key's row, a `-D` removes the key's row, which must be there.
fn fold_upserts(path: &Path, what: &str) -> BTreeSet<Vec<String>> {
    let mut table: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
    for r in rows(path) {
        let (op, row) = (r[0].clone(), r[1..].to_vec());
        let key = vec![row[0].clone(), row[3].clone(), row[4].clone()];
        match op.as_str() {
            "+I" | "+U" => drop(table.insert(key, row)),
            "-D" => assert!(
                table.remove(&key).is_some(),
                "{what}: -D of {row:?}, a key not held"
            ),
            other => panic!("{what}: an upsert output has no {other}"),
        }
    }
    table.into_values().collect()
}

/// Runs `query` (its sink's mode in `{mode}`) in `dir` once into a changelog and once into
/// upserts keyed by `xk, yk, g`, as `anduin run --parallelism {parallelism}`, and returns both
/// folded; `what` names the run in messages. The changelog must retract a paired row.
fn changelog_and_upserts(
    dir: &Path,
    query: &str,
    parallelism: &str,
    what: &str,
) -> [BTreeSet<Vec<String>>; 2] {
    let mut folded = Vec::new();
    for mode in [
        "mode = 'changelog'",
        "mode = 'upsert', primary_key = 'xk, yk, g'",
    ] {
        std::fs::write(dir.join("q.sql"), query.replace("{mode}", mode)).expect("query");
        let _ = std::fs::remove_file(dir.join("out.csv"));
        let out = anduin(
            dir,
            &[
                "run",
                "q.sql",
                "--no-api",
                "-q",
                "--batch-size",
                "3",
                "--parallelism",
                parallelism,
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{what}, {mode}: {stderr}");
        let path = dir.join("out.csv");
        if mode.contains("changelog") {
            // A paired row was taken out: a right row left, or a left one changed.
            assert!(
                rows(&path)
                    .iter()
                    .any(|r| r[0] == "-D" && !r[1].is_empty() && !r[4].is_empty()),
                "{what}: no paired row was retracted"
            );
            folded.push(fold_changelog(&path, what));
        } else {
            folded.push(fold_upserts(&path, what));
        }
    }
    let [changelog, upserts] = <[_; 2]>::try_from(folded).expect("two runs");
    [changelog, upserts]
}

const TABLES: &str = "CREATE TABLE a (ts TIMESTAMP, k VARCHAR, v BIGINT) WITH (connector = 'file', path = 'a.csv');
CREATE TABLE b (ts TIMESTAMP, k VARCHAR, g BIGINT, w BIGINT) WITH (connector = 'file', path = 'b.csv');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv', {mode});
";

#[test]
fn a_left_join_whose_right_rows_leave_upserts_to_what_its_changelog_folds_to() {
    // Both sides' rows leave: a group of `b` once its sum reaches 100, one of `a` once it
    // counts 17 rows; a left row whose last partner left is padded again.
    let query = format!(
        "{TABLES}INSERT INTO o SELECT x.k AS xk, x.n, x.mx, y.k AS yk, y.g, y.s
FROM (SELECT k, COUNT(*) AS n, MAX(v) AS mx FROM a GROUP BY k HAVING COUNT(*) < 17) x
LEFT JOIN (SELECT k, g, SUM(w) AS s FROM b GROUP BY k, g HAVING SUM(w) < 100) y ON x.k = y.k;
"
    );
    for seed in [1, 2, 3, 4] {
        let dir = tempfile::tempdir().expect("tempdir");
        inputs(dir.path(), seed);
        // The naive result: the groups that pass their HAVING at the end, joined.
        let mut x: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for r in rows(&dir.path().join("a.csv")) {
            let v: u64 = r[2].parse().expect("v");
            let e = x.entry(r[1].clone()).or_insert((0, 0));
            *e = (e.0 + 1, e.1.max(v));
        }
        x.retain(|_, (n, _)| *n < 17);
        let mut y: BTreeMap<(String, String), u64> = BTreeMap::new();
        for r in rows(&dir.path().join("b.csv")) {
            *y.entry((r[1].clone(), r[2].clone())).or_default() += r[3].parse::<u64>().expect("w");
        }
        y.retain(|_, s| *s < 100);
        let mut expected = BTreeSet::new();
        for (xk, (n, mx)) in &x {
            let mut padded = true;
            for ((yk, g), s) in y.iter().filter(|((yk, _), _)| yk == xk) {
                padded = false;
                expected.insert(vec![
                    xk.clone(),
                    n.to_string(),
                    mx.to_string(),
                    yk.clone(),
                    g.clone(),
                    s.to_string(),
                ]);
            }
            if padded {
                let row = [xk.clone(), n.to_string(), mx.to_string()];
                expected.insert(row.into_iter().chain(vec![String::new(); 3]).collect());
            }
        }
        for parallelism in ["1", "2"] {
            let what = format!("seed {seed}, parallelism {parallelism}");
            let [changelog, upserts] =
                changelog_and_upserts(dir.path(), &query, parallelism, &what);
            assert_eq!(changelog, expected, "{what}: the changelog, folded");
            assert_eq!(upserts, expected, "{what}: the upserts, folded");
        }
    }
}

#[test]
fn joins_whose_rows_leave_upsert_to_what_their_changelogs_fold_to() {
    let x = "(SELECT k, COUNT(*) AS n, MAX(v) AS mx FROM a GROUP BY k HAVING COUNT(*) < 17) x";
    let y = "(SELECT k, g, SUM(w) AS s FROM b GROUP BY k, g HAVING SUM(w) < 100) y";
    // The two largest `w` of each `k` of `b`, numbered: a row leaves when two larger come.
    let top = "(SELECT k, rn AS g, w AS s FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY w DESC) AS rn FROM b) WHERE rn <= 2) y";
    let select = "SELECT x.k AS xk, x.n, x.mx, y.k AS yk, y.g, y.s";
    let queries = [
        format!("{select} FROM {x} RIGHT JOIN {y} ON x.k = y.k"),
        // A pair leaves when the condition no longer holds (an inner join of updating
        // inputs emits -U/+U).
        format!("{select} FROM {x} JOIN {y} ON x.k = y.k AND x.mx > y.s"),
        format!("{select} FROM {x} LEFT JOIN {y} ON x.k = y.k AND x.mx > y.s"),
        format!("{select} FROM {x} LEFT JOIN {top} ON x.k = y.k"),
        format!("{select} FROM {x} JOIN {top} ON x.k = y.k"),
    ];
    for seed in [1, 2] {
        let dir = tempfile::tempdir().expect("tempdir");
        inputs(dir.path(), seed);
        for (q, query) in queries.iter().enumerate() {
            for parallelism in ["1", "2"] {
                let what = format!("seed {seed}, query {q}, parallelism {parallelism}");
                let [changelog, upserts] = changelog_and_upserts(
                    dir.path(),
                    &format!("{TABLES}INSERT INTO o {query};\n"),
                    parallelism,
                    &what,
                );
                assert_eq!(
                    upserts, changelog,
                    "{what}: the upserts and the changelog, folded"
                );
            }
        }
    }
}
