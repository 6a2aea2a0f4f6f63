//! A top-N's `OVER (PARTITION BY … ORDER BY …)` reads the columns of its subquery's FROM
//! clause: over a join, `r.v` is the right table's `v` though the subquery selects `l.v`,
//! and in `SELECT k, s AS v, ROW_NUMBER() OVER (… ORDER BY v)` `v` is the table's, not the
//! alias (issue 17's probe, h2: they were read by their bare names, a silent wrong answer).
//! The expected rows are DuckDB's answers to the same queries over the same rows, computed
//! once (DuckDB 1.x, `read_json_auto`) and written here.

use crate::common;

use std::collections::BTreeMap;

use common::anduin_ok;

const TABLES: &str = "CREATE TABLE l (ts TIMESTAMP, k BIGINT, s VARCHAR, v BIGINT) WITH (connector = 'file', path = 'l.jsonl', format = 'jsonl');
CREATE TABLE r (ts TIMESTAMP, k BIGINT, s VARCHAR, v BIGINT) WITH (connector = 'file', path = 'r.jsonl', format = 'jsonl');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv', mode = 'changelog');
";

/// The query's changelog folded as a multiset: each row and how many times it is held.
fn folded(l: &str, r: &str, insert: &str) -> BTreeMap<String, i64> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("l.jsonl"), l).expect("l");
    std::fs::write(dir.path().join("r.jsonl"), r).expect("r");
    std::fs::write(dir.path().join("q.sql"), format!("{TABLES}{insert}")).expect("query");
    anduin_ok(dir.path(), &["run", "q.sql", "--no-api", "-q"]);
    let out = std::fs::read_to_string(dir.path().join("out.csv")).expect("the output");
    let mut rows: BTreeMap<String, i64> = BTreeMap::new();
    for line in out.lines().skip(1) {
        let (op, row) = line.split_once(',').expect("op,row");
        *rows.entry(row.to_string()).or_default() += match op {
            "+I" | "+U" => 1,
            _ => -1,
        };
    }
    rows.retain(|_, n| *n != 0);
    rows
}

fn expected(rows: &[(&str, i64)]) -> BTreeMap<String, i64> {
    rows.iter().map(|(r, n)| ((*r).to_string(), *n)).collect()
}

const L: &str = r#"{"ts":1,"k":1,"s":"a","v":10}
{"ts":2,"k":1,"s":"b","v":20}
{"ts":3,"k":1,"s":"c","v":30}
"#;
const R: &str = r#"{"ts":5,"k":1,"s":"x","v":100}
{"ts":6,"k":1,"s":"y","v":50}
{"ts":7,"k":1,"s":"z","v":1}
"#;

#[test]
fn a_top_n_over_a_join_partitions_and_orders_by_the_qualified_columns() {
    // The pair with the largest r.v of each key; l.s breaks the tie. DuckDB: (1, 10, x).
    let q = "INSERT INTO o SELECT lk, lv, rs FROM (
  SELECT l.k AS lk, l.v AS lv, r.s AS rs,
         ROW_NUMBER() OVER (PARTITION BY l.k ORDER BY r.v DESC, l.s) AS rn
  FROM l JOIN r ON l.k = r.k)
WHERE rn = 1;";
    assert_eq!(folded(L, R, q), expected(&[("1,10,x", 1)]));
    // One row per r.s, the smallest l.v of each. DuckDB: (a, 10) three times.
    let q = "INSERT INTO o SELECT ls, lv FROM (
  SELECT l.s AS ls, l.v AS lv, ROW_NUMBER() OVER (PARTITION BY r.s ORDER BY l.v) AS rn
  FROM l JOIN r ON l.k = r.k)
WHERE rn = 1;";
    assert_eq!(folded(L, R, q), expected(&[("a,10", 3)]));
    // ORDER BY l.s beside a selected r.s. DuckDB: (1, a, 1), (2, b, 1).
    let l = r#"{"ts": 1, "k": 1, "s": "a", "v": 10}
{"ts": 2, "k": 1, "s": "b", "v": 20}
{"ts": 3, "k": 2, "s": "a", "v": 30}
{"ts": 4, "k": 2, "s": "c", "v": 5}
"#;
    let r = r#"{"ts": 5, "k": 1, "s": "x", "v": 100}
{"ts": 6, "k": 1, "s": "a", "v": 50}
{"ts": 7, "k": 2, "s": "b", "v": 1}
{"ts": 8, "k": 2, "s": "b", "v": 7}
"#;
    let q = "INSERT INTO o SELECT k, s, rn FROM (SELECT l.k, r.s, ROW_NUMBER() OVER (PARTITION BY l.k ORDER BY l.s DESC, r.v) AS rn FROM l JOIN r ON l.k = r.k) WHERE rn <= 1;";
    assert_eq!(folded(l, r, q), expected(&[("1,a,1", 1), ("2,b,1", 1)]));
}

#[test]
fn a_top_ns_over_reads_the_tables_column_not_the_select_lists_alias() {
    // Swapped aliases: ORDER BY v is the table's v. DuckDB: (c, 30).
    let q = "INSERT INTO o SELECT a, b FROM (
  SELECT s AS v, v AS s, s AS a, v AS b,
         ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn
  FROM l)
WHERE rn = 1;";
    assert_eq!(folded(L, R, q), expected(&[("c,30", 1)]));
    // `s AS v`: ORDER BY v is still the table's v. DuckDB: (1, a).
    let l = r#"{"ts":1,"k":1,"s":"c","v":10}
{"ts":2,"k":1,"s":"b","v":20}
{"ts":3,"k":1,"s":"a","v":30}
"#;
    let q = "INSERT INTO o SELECT k, v FROM (
  SELECT k, s AS v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM l)
WHERE rn = 1;";
    assert_eq!(folded(l, R, q), expected(&[("1,a", 1)]));
}
