//! The paper's patterns 4 and 5 as a property: for seeded random queries (a reader of seeded,
//! out-of-order rows, then a random chain of filters, maps and keyed windows, then a writer;
//! and DAGs: a stream read by two branches that a union joins again), partitioning (a random
//! `parallelism` on the windows) and pipelining (`pipeline = "split"` on random operators, the
//! reader and the union too) give the same output multiset as the query as written.

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
    let kind = rng.next(if last { 3 } else { 2 });
    stage_of(kind, rng, i, from, to, qos)
}

/// A keyed window, reading stream `from` and writing `to`.
fn window(rng: &mut Rng, i: usize, from: &str, to: &str, qos: &str) -> String {
    stage_of(2, rng, i, from, to, qos)
}

/// A stage that keeps the columns it reads: after a window (`windowed`), a filter on the
/// window's figures; else a filter or a map of `ts, k, v`.
fn stateless(rng: &mut Rng, i: usize, from: &str, to: &str, windowed: bool, qos: &str) -> String {
    if !windowed {
        return stage(rng, i, from, to, false, qos);
    }
    let column = ["n", "total", "lo"][rng.next(3) as usize];
    let c = ["<", ">", "<>"][rng.next(3) as usize];
    // A count is small and positive; sums and minimums spread around 0.
    let n = match column {
        "n" => rng.next(6) as i64,
        _ => rng.next(400) as i64 - 200,
    };
    format!(
        "operator name = \"s{i}\", type = \"filter\" {{\n  input name = \"{from}\"\n  param condition = \"{column} {c} {n}\"\n{qos}  output name = \"{to}\"\n}}\n"
    )
}

/// Stage `kind` (0 a filter, 1 a map, 2 a keyed window).
fn stage_of(kind: u64, rng: &mut Rng, i: usize, from: &str, to: &str, qos: &str) -> String {
    let body = match kind {
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

const TYPES: &str = r#"type name = "R" {
  column name = "ts", type = "timestamp"
  column name = "k", type = "int"
  column name = "v", type = "int"
}
"#;

/// The reader of `in.csv`.
fn reader(qos: &str) -> String {
    format!(
        "operator name = \"rows\", type = \"reader\" {{\n  param path = \"in.csv\"\n  param event_time = \"ts\"\n  param watermark = \"300ms\"\n{qos}  output name = \"s0\", type = \"R\"\n}}\n"
    )
}

/// The writer of stream `from`.
fn writer(from: &str) -> String {
    format!(
        "operator name = \"out\", type = \"writer\" {{\n  input name = \"{from}\"\n  param path = \"${{OUTPUT}}\"\n}}\n"
    )
}

/// A query as written and the same with random partitioning and pipelining.
struct Pair {
    plain: String,
    rewritten: String,
}

impl Pair {
    fn new() -> Self {
        Self {
            plain: TYPES.to_string(),
            rewritten: TYPES.to_string(),
        }
    }

    /// The operator `make` writes (given its own generator and the QoS params), as written
    /// and with `pipeline = "split"` half the time, and on a window a `parallelism` of 2 to
    /// 4 half the time.
    fn add(&mut self, rng: &mut Rng, make: impl Fn(&mut Rng, &str) -> String) {
        let seed = rng.next(u64::MAX);
        let plain = make(&mut Rng(seed), "");
        let mut qos = String::new();
        if rng.next(2) == 0 {
            qos.push_str("  param pipeline = \"split\"\n");
        }
        if plain.contains("type = \"window\"") && rng.next(2) == 0 {
            qos.push_str(&format!("  param parallelism = {}\n", 2 + rng.next(3)));
        }
        self.rewritten.push_str(&make(&mut Rng(seed), &qos));
        self.plain.push_str(&plain);
    }

    /// An operator as it is, in both.
    fn both(&mut self, text: &str) {
        self.plain.push_str(text);
        self.rewritten.push_str(text);
    }
}

/// A random chain, as written and with random partitioning and pipelining.
fn queries(rng: &mut Rng) -> (String, String) {
    let stages = 1 + rng.next(4) as usize;
    let mut q = Pair::new();
    q.both(&reader(""));
    for i in 1..=stages {
        let (from, to) = (format!("s{}", i - 1), format!("s{i}"));
        let last = i == stages;
        q.add(rng, |r, qos| stage(r, i, &from, &to, last, qos));
    }
    q.both(&writer(&format!("s{stages}")));
    (q.plain, q.rewritten)
}

/// A random DAG, as written and with random partitioning and pipelining: the reader, up to
/// two stages, a keyed window half the time, then the stream is read by two branches (one or
/// two stages; none or one: the union reads the stream itself), a union of both, up to one
/// stage after it and the writer. Only stateless stages come after the fan-out: a window
/// after the union would find rows late or not as the branches happen to interleave, in the
/// query as written too.
fn dag(rng: &mut Rng) -> (String, String) {
    let mut q = Pair::new();
    q.add(rng, |_, qos| reader(qos));
    let mut i = 0;
    let mut at = "s0".to_string();
    let mut next = |q: &mut Pair, rng: &mut Rng, from: &str, windowed: Option<bool>| {
        i += 1;
        let (n, to) = (i, format!("s{i}"));
        match windowed {
            None => q.add(rng, |r, qos| window(r, n, from, &to, qos)),
            Some(w) => q.add(rng, |r, qos| stateless(r, n, from, &to, w, qos)),
        }
        to
    };
    for _ in 0..rng.next(3) {
        at = next(&mut q, rng, &at, Some(false));
    }
    let windowed = rng.next(2) == 0;
    if windowed {
        at = next(&mut q, rng, &at, None);
    }
    let mut branch = |q: &mut Pair, rng: &mut Rng, stages: u64| {
        let mut end = at.clone();
        for _ in 0..stages {
            end = next(q, rng, &end, Some(windowed));
        }
        end
    };
    let (a_stages, b_stages) = (1 + rng.next(2), rng.next(2));
    let a = branch(&mut q, rng, a_stages);
    let b = branch(&mut q, rng, b_stages);
    q.add(rng, |_, qos| {
        format!(
            "operator name = \"u\", type = \"union\" {{\n  input name = \"{a}\"\n  input name = \"{b}\"\n{qos}  output name = \"su\"\n}}\n"
        )
    });
    let mut end = "su".to_string();
    if rng.next(2) == 0 {
        end = next(&mut q, rng, &end, Some(windowed));
    }
    q.both(&writer(&end));
    (q.plain, q.rewritten)
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

#[test]
fn partitioning_and_pipelining_a_random_dag_change_none_of_its_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng(0x000D_A6ED);
    std::fs::write(dir.path().join("in.csv"), input(&mut rng)).expect("input");
    let (mut partitioned, mut split_ends, mut nonempty) = (0, 0, 0);
    for seed in 0..10 {
        let (plain, rewritten) = dag(&mut rng);
        let expected = rows(dir.path(), &plain, "plain.csv");
        let got = rows(dir.path(), &rewritten, "rewritten.csv");
        assert_eq!(got, expected, "seed {seed}:\n{rewritten}");
        partitioned += usize::from(rewritten.contains("param parallelism"));
        // The reader or the union split: a source, an operator of two inputs.
        let split = |op: &str| {
            rewritten
                .split("operator name = ")
                .any(|block| block.starts_with(op) && block.contains("param pipeline"))
        };
        split_ends += usize::from(split("\"rows\"") || split("\"u\""));
        nonempty += usize::from(!expected.is_empty());
    }
    assert!(
        partitioned >= 2 && split_ends >= 3 && nonempty >= 5,
        "{partitioned} partitioned, {split_ends} with the reader or the union split, {nonempty} with output"
    );
}
