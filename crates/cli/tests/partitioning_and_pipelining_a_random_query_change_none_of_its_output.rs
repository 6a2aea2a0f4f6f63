//! The paper's patterns 4 and 5 as a property: for seeded random queries (a reader of seeded,
//! out-of-order rows, then a random chain of filters, maps and keyed windows, then a writer),
//! partitioning (a random `parallelism` on the windows) and pipelining (`pipeline = "split"`
//! on random stages) give the same output multiset as the query as written.

use crate::common;

use common::Rng;

use common::anduin;

/// Rows `ts,k,v`: time drifting forward with jitter, a few far behind (late).
fn input(rng: &mut Rng) -> String {
    let mut out = String::from("ts,k,v\n");
    let mut base: i64 = 1_700_000_000_000;
    for _ in 0..5_000 {
        base += rng.next(4) as i64;
        let jitter = rng.next(200) as i64 - 100;
        let late = if rng.next(100) == 0 { 3_000 } else { 0 };
        let k = rng.next(20);
        let v = rng.next(1000) as i64 - 500;
        out.push_str(&format!("{},{k},{v}\n", base + jitter - late));
    }
    out
}

/// One stage of the chain, reading stream `from` and writing `to`; windows change the
/// columns, so at most one per chain, last.
fn stage(rng: &mut Rng, i: usize, from: &str, to: &str, last: bool, qos: &str) -> String {
    let body = match rng.next(if last { 3 } else { 2 }) {
        0 => {
            let (c, n) = (["<", ">", "<>"][rng.next(3) as usize], rng.next(400) as i64 - 200);
            format!(
                "type = \"filter\" {{\n  input name = \"{from}\"\n  param condition = \"v {c} {n}\"\n"
            )
        }
        1 => format!(
            "type = \"map\" {{\n  input name = \"{from}\"\n  param columns = \"ts, k, v * {} + {} AS v\"\n",
            1 + rng.next(3),
            rng.next(10)
        ),
        _ => format!(
            "type = \"window\" {{\n  input name = \"{from}\"\n  param kind = \"tumbling\"\n  param size = \"{}ms\"\n  param time = \"ts\"\n  param keys = \"k\"\n  param aggregates = \"COUNT(*) AS n, SUM(v) AS total, MIN(v) AS lo\"\n",
            [50, 100, 250][rng.next(3) as usize]
        ),
    };
    format!("operator name = \"s{i}\", {body}{qos}  output name = \"{to}\"\n}}\n")
}

/// A random query, as written and with random partitioning and pipelining.
fn queries(rng: &mut Rng) -> (String, String) {
    let head = r#"type name = "R" {
  column name = "ts", type = "timestamp"
  column name = "k", type = "int"
  column name = "v", type = "int"
}
operator name = "rows", type = "reader" {
  param path = "in.csv"
  param event_time = "ts"
  param watermark = "300ms"
  output name = "s0", type = "R"
}
"#;
    let stages = 1 + rng.next(4) as usize;
    let (mut plain, mut rewritten) = (head.to_string(), head.to_string());
    for i in 1..=stages {
        let (from, to) = (format!("s{}", i - 1), format!("s{i}"));
        let seed = rng.next(u64::MAX);
        let last = i == stages;
        plain.push_str(&stage(&mut Rng(seed), i, &from, &to, last, ""));
        let is_window = stage(&mut Rng(seed), i, &from, &to, last, "").contains("window");
        let mut qos = String::new();
        if rng.next(2) == 0 {
            qos.push_str("  param pipeline = \"split\"\n");
        }
        if is_window && rng.next(2) == 0 {
            qos.push_str(&format!("  param parallelism = {}\n", 2 + rng.next(3)));
        }
        rewritten.push_str(&stage(&mut Rng(seed), i, &from, &to, last, &qos));
    }
    let sink = format!(
        "operator name = \"out\", type = \"writer\" {{\n  input name = \"s{stages}\"\n  param path = \"${{OUTPUT}}\"\n}}\n"
    );
    plain.push_str(&sink);
    rewritten.push_str(&sink);
    (plain, rewritten)
}

fn rows(dir: &std::path::Path, query: &str, out: &str) -> Vec<String> {
    std::fs::write(dir.join("q.flow"), query).expect("query");
    let o = anduin(
        dir,
        &[
            "run",
            "q.flow",
            "--var",
            &format!("OUTPUT={out}"),
            "--no-api",
        ],
    );
    assert!(
        o.status.success(),
        "{query}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut rows: Vec<String> = std::fs::read_to_string(dir.join(out))
        .expect("output")
        .lines()
        .skip(1)
        .map(str::to_string)
        .collect();
    rows.sort();
    rows
}

#[test]
fn partitioning_and_pipelining_a_random_query_change_none_of_its_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng(0x000A_11CE);
    std::fs::write(dir.path().join("in.csv"), input(&mut rng)).expect("input");
    let (mut partitioned, mut pipelined, mut nonempty) = (0, 0, 0);
    for seed in 0..12 {
        let (plain, rewritten) = queries(&mut rng);
        let expected = rows(dir.path(), &plain, "plain.csv");
        let got = rows(dir.path(), &rewritten, "rewritten.csv");
        assert_eq!(got, expected, "seed {seed}:\n{rewritten}");
        partitioned += usize::from(rewritten.contains("param parallelism"));
        pipelined += usize::from(rewritten.contains("param pipeline"));
        nonempty += usize::from(!expected.is_empty());
    }
    // The seeds exercise both patterns, on queries that write something.
    assert!(
        partitioned >= 2 && pipelined >= 2 && nonempty >= 6,
        "{partitioned} partitioned, {pipelined} pipelined, {nonempty} with output"
    );
}
