//! Interval and window joins, inner and left, of two files read as two event-time streams
//! (as `.flow` and as SQL), give the same rows at parallelism 1 and 4, and as many rows as a
//! naive join of the files
//! (the watermark delay exceeds the files' disorder, so no row is late whatever the order in
//! which the two sources interleave).

use crate::common;

use std::collections::HashMap;

use common::anduin;

/// Seeded rows `ts,k,v`: time drifts forward with jitter of at most ±100 ms.
fn input(seed: u64) -> Vec<(i64, i64, i64)> {
    let mut state = seed;
    let mut next = |below: u64| {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % below
    };
    let mut base: i64 = 1_700_000_000_000;
    (0..4_000)
        .map(|_| {
            base += next(5) as i64;
            let jitter = next(200) as i64 - 100;
            (base + jitter, next(40) as i64, next(1000) as i64)
        })
        .collect()
}

fn csv(rows: &[(i64, i64, i64)]) -> String {
    let mut out = String::from("ts,k,v\n");
    for (ts, k, v) in rows {
        out.push_str(&format!("{ts},{k},{v}\n"));
    }
    out
}

fn query(kind: &str, how: &str) -> String {
    format!(
        r#"type name = "R" {{
  column name = "ts", type = "timestamp"
  column name = "k", type = "int"
  column name = "v", type = "int"
}}
operator name = "a", type = "reader" {{
  param path = "left.csv" param event_time = "ts" param watermark = "300ms"
  output name = "lefts", type = "R"
}}
operator name = "b", type = "reader" {{
  param path = "right.csv" param event_time = "ts" param watermark = "300ms"
  output name = "rights", type = "R"
}}
operator name = "j", type = "join" {{
  input name = "lefts"
  input name = "rights"
  {kind}
  param how = "{how}"
  param on = "lefts.k = rights.k"
  param left_time = "ts"
  param right_time = "ts"
  output name = "pairs"
}}
operator name = "out", type = "writer" {{
  input name = "pairs"
  param path = "${{OUTPUT}}"
}}
"#
    )
}

/// How many rows a naive join gives.
fn naive_count(
    left: &[(i64, i64, i64)],
    right: &[(i64, i64, i64)],
    pairs: impl Fn(i64, i64) -> bool,
    left_outer: bool,
) -> usize {
    let mut by_key: HashMap<i64, Vec<i64>> = HashMap::new();
    for r in right {
        by_key.entry(r.1).or_default().push(r.0);
    }
    left.iter()
        .map(|l| {
            let n = by_key
                .get(&l.1)
                .map_or(0, |ts| ts.iter().filter(|t| pairs(l.0, **t)).count());
            if n == 0 && left_outer {
                1
            } else {
                n
            }
        })
        .sum()
}

fn sorted(path: &std::path::Path) -> Vec<String> {
    let mut rows: Vec<String> = std::fs::read_to_string(path)
        .expect("output")
        .lines()
        .skip(1)
        .map(str::to_string)
        .collect();
    rows.sort();
    rows
}

#[test]
fn joins_give_the_same_results_at_parallelism_1_and_4() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (left, right) = (input(1), input(2));
    std::fs::write(dir.path().join("left.csv"), csv(&left)).expect("left");
    std::fs::write(dir.path().join("right.csv"), csv(&right)).expect("right");
    let window = |l: i64, r: i64| l.div_euclid(100) == r.div_euclid(100);
    let interval = |l: i64, r: i64| (-30..=50).contains(&(r - l));
    for (kind, how, expected) in [
        (
            r#"param kind = "interval" param lower = "-30ms" param upper = "50ms""#,
            "inner",
            naive_count(&left, &right, interval, false),
        ),
        (
            r#"param kind = "interval" param lower = "-30ms" param upper = "50ms""#,
            "left",
            naive_count(&left, &right, interval, true),
        ),
        (
            r#"param kind = "window" param size = "100ms""#,
            "inner",
            naive_count(&left, &right, window, false),
        ),
        (
            r#"param kind = "window" param size = "100ms""#,
            "left",
            naive_count(&left, &right, window, true),
        ),
    ] {
        check(
            dir.path(),
            "q.flow",
            &query(kind, how),
            expected,
            &format!("{kind} {how}"),
        );
    }
    let sql = |how: &str, on: &str| {
        format!(
            "CREATE TABLE lefts (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (connector = 'file', path = 'left.csv', event_time = 'ts', watermark = '300ms');
CREATE TABLE rights (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (connector = 'file', path = 'right.csv', event_time = 'ts', watermark = '300ms');
CREATE TABLE out WITH (connector = 'file', path = '${{OUTPUT}}');
INSERT INTO out {on} {how} JOIN"
        )
    };
    let interval = sql(
        "LEFT",
        "SELECT l.ts, l.k, l.v, r.ts AS rts, r.v AS rv FROM lefts l",
    ) + " rights r ON l.k = r.k AND r.ts BETWEEN l.ts - INTERVAL '30' MILLISECOND AND l.ts + INTERVAL '50' MILLISECOND;";
    check(
        dir.path(),
        "interval.sql",
        &interval,
        naive_count(&left, &right, |l, r| (-30..=50).contains(&(r - l)), true),
        "SQL interval left join",
    );
    let window_sql = sql(
        "",
        "SELECT l.window_start, l.k, l.v, r.v AS rv FROM (SELECT * FROM TABLE(TUMBLE(TABLE lefts, DESCRIPTOR(ts), INTERVAL '100' MILLISECOND))) l",
    ) + " (SELECT * FROM TABLE(TUMBLE(TABLE rights, DESCRIPTOR(ts), INTERVAL '100' MILLISECOND))) r ON l.k = r.k AND l.window_start = r.window_start AND l.window_end = r.window_end;";
    check(
        dir.path(),
        "window.sql",
        &window_sql,
        naive_count(&left, &right, window, false),
        "SQL window join",
    );
}

/// Runs `query` at parallelism 1 and 4: `expected` rows, the same at both.
fn check(dir: &std::path::Path, file: &str, query: &str, expected: usize, what: &str) {
    std::fs::write(dir.join(file), query).expect("query");
    let mut results = Vec::new();
    for p in ["1", "4"] {
        let output = format!("OUTPUT=out{p}.csv");
        let out = anduin(
            dir,
            &[
                "run",
                file,
                "--var",
                &output,
                "--parallelism",
                p,
                "--batch-size",
                "200",
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        results.push(sorted(&dir.join(format!("out{p}.csv"))));
    }
    assert!(expected > 500, "{what}: the data pairs up");
    assert_eq!(results[0].len(), expected, "{what}: rows at parallelism 1");
    assert!(
        results[0] == results[1],
        "{what}: parallelism 4 differs from parallelism 1"
    );
}
