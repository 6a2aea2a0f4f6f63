//! End-to-end: the shipped examples, run as a user runs them, give their golden outputs.

use crate::common;

use common::{anduin, anduin_ok, assert_golden, golden, repo};

#[test]
fn the_sensors_example_keeps_the_readings_below_42() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_path = dir.path().join("low.csv");
    let out = anduin(
        &repo(),
        &[
            "run",
            "examples/sensors.flow",
            "--var",
            "INPUT=data/readings.csv",
            "--var",
            &format!("OUTPUT={}", out_path.display()),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read_to_string(&out_path).expect("output");
    assert_golden(&golden().join("outputs/sensors.csv"), &written);
    // Independently of the golden file: exactly the input rows with value < 42, in order.
    let input = std::fs::read_to_string(repo().join("data/readings.csv")).expect("input");
    let expected: Vec<&str> = input
        .lines()
        .skip(1)
        .filter(|l| {
            l.rsplit(',')
                .next()
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < 42)
        })
        .collect();
    assert_eq!(written.lines().skip(1).collect::<Vec<_>>(), expected);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[reader] 10000 rows out"), "{stderr}");
    assert!(
        stderr.contains(&format!("[writer] {} rows written", expected.len())),
        "{stderr}"
    );
}

#[test]
fn the_controlled_sensors_example_follows_its_threshold_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_path = dir.path().join("low.csv");
    anduin_ok(
        &repo(),
        &[
            "run",
            "examples/sensors_controlled.flow",
            "--var",
            "INPUT=data/readings.csv",
            "--var",
            "CHANGES=data/threshold_changes.csv",
            "--var",
            &format!("OUTPUT={}", out_path.display()),
        ],
    );
    let written = std::fs::read_to_string(&out_path).expect("output");
    assert_golden(&golden().join("outputs/sensors_controlled.csv"), &written);
    // Independently of the golden file: the rows each threshold keeps from its time on.
    let input = std::fs::read_to_string(repo().join("data/readings.csv")).expect("input");
    let expected: Vec<&str> = input
        .lines()
        .skip(1)
        .filter(|l| {
            let cols: Vec<i64> = l.split(',').filter_map(|c| c.parse().ok()).collect();
            match cols.as_slice() {
                [ts, _, v] if *ts < 1_700_000_003_000 => *v < 42,
                [ts, _, v] if *ts < 1_700_000_006_000 => *v < 20,
                [_, _, v] => *v >= 60,
                _ => false,
            }
        })
        .collect();
    let mut got: Vec<&str> = written.lines().skip(1).collect();
    got.sort_unstable();
    let mut expected = expected;
    expected.sort_unstable();
    assert_eq!(got, expected);
}

#[test]
fn the_union_example_merges_csv_and_json_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_path = dir.path().join("all.jsonl");
    let out = anduin(
        &repo(),
        &[
            "run",
            "examples/union.flow",
            "--var",
            "A=data/readings.csv",
            "--var",
            "B=data/more_readings.jsonl",
            "--var",
            &format!("OUTPUT={}", out_path.display()),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read_to_string(&out_path).expect("output");
    assert_eq!(written.lines().count(), 10_020);
    // The two inputs interleave in no fixed order: compare sorted.
    let mut lines: Vec<&str> = written.lines().collect();
    lines.sort_unstable();
    assert_golden(
        &golden().join("outputs/union.sorted.jsonl"),
        &(lines.join("\n") + "\n"),
    );
}

#[test]
fn the_join_example_pairs_each_alert_with_the_readings_before_it() {
    for example in ["examples/join.flow", "examples/join.sql"] {
        join_example(example);
    }
}

fn join_example(example: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_path = dir.path().join("alerts.csv");
    let out = anduin(
        &repo(),
        &[
            "run",
            example,
            "--var",
            "ALERTS=data/alerts.csv",
            "--var",
            "READINGS=data/readings.csv",
            "--var",
            &format!("OUTPUT={}", out_path.display()),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{example}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read_to_string(&out_path).expect("output");
    // Pairs come out as the two inputs interleave: compare sorted. The golden file was
    // checked against a naive Python recomputation: 73 pairs and 2 alerts without readings.
    let mut lines: Vec<&str> = written.lines().collect();
    assert_eq!(
        lines.first(),
        Some(&"alert_ts,sensor,level,reading_ts,value")
    );
    lines.sort_unstable();
    assert_golden(
        &golden().join("outputs/join.sorted.csv"),
        &(lines.join("\n") + "\n"),
    );
    assert_eq!(lines.iter().filter(|l| l.ends_with(",,")).count(), 2);
}

#[test]
fn every_example_checks_clean() {
    let mut examples: Vec<_> = ["examples", "benches"]
        .iter()
        .flat_map(|d| std::fs::read_dir(repo().join(d)).expect("the folder exists"))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "flow" || e == "sql"))
        .collect();
    examples.sort();
    assert!(!examples.is_empty());
    for e in examples {
        let out = anduin(&repo(), &["check", e.to_str().expect("utf-8")]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            e.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_glob_reads_every_matching_file_in_name_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("in")).expect("mkdir");
    std::fs::write(dir.path().join("in/b.csv"), "ts,sensor,value\n2,2,2\n").expect("b");
    std::fs::write(dir.path().join("in/a.csv"), "value,ts,sensor\n1,1,1\n").expect("a");
    std::fs::write(dir.path().join("in/c.txt"), "ignored").expect("c");
    let flow = repo().join("examples/sensors.flow");
    let out = anduin(
        dir.path(),
        &[
            "run",
            flow.to_str().expect("utf-8"),
            "--var",
            "INPUT=in/*.csv",
            "--var",
            "OUTPUT=o.csv",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("o.csv")).expect("output"),
        "ts,sensor,value\n1,1,1\n2,2,2\n"
    );
}

#[test]
fn computed_columns_are_written_as_the_five_stream_types() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("q.flow"),
        r#"type name = "T" { column name = "v", type = "int" }
operator name = "g", type = "generator" { param count = 1 param int_max = 1 output name = "xs", type = "T" }
operator name = "m", type = "map" {
  input name = "xs"
  param columns = "CAST(v AS INT) AS i, CAST(v AS REAL) / 4 AS f, TIMESTAMP '2023-11-14 22:13:20.5' AS t, xs.*"
  output name = "ys"
}
operator name = "w", type = "writer" { input name = "ys" param path = "-" param format = "jsonl" }"#,
    )
    .expect("query");
    let out = anduin(dir.path(), &["run", "q.flow", "-q"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\"i\":0,\"f\":0.0,\"t\":1700000000500,\"v\":0}\n"
    );
}

#[test]
fn the_paper_cep_example_finds_the_two_dips_worked_out_by_hand() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_path = dir.path().join("dips.csv");
    let out = anduin(
        &repo(),
        &[
            "run",
            "examples/cep_paper.flow",
            "--var",
            "INPUT=data/ticks.csv",
            "--var",
            &format!("OUTPUT={}", out_path.display()),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // ACME: 10 | 8 7 | 9 | 11 12 13 (then 9 does not rise), and 9 | 8 7 6 | 8 | 10 11 (then
    // 5). INIT: 52 | 51 50 | 51 | 53 would match, but 53 comes 12 s after 52, past `within`.
    let written = std::fs::read_to_string(&out_path).expect("output");
    assert_eq!(
        written,
        "symbol,a_ts,last_ts,b_cnt,top\nACME,1000,7000,2,13\nACME,8000,14000,3,11\n"
    );
}

/// Runs the lookup join example (its LEFT JOIN as written, or as an INNER JOIN) in `dir`; the
/// rows it writes.
fn lookup_join_example(dir: &std::path::Path, inner: bool) -> String {
    let text = std::fs::read_to_string(repo().join("examples/lookup_join.sql")).expect("example");
    let text = if inner {
        text.replace("LEFT JOIN", "JOIN")
    } else {
        text
    };
    let query = dir.join(if inner { "inner.sql" } else { "left.sql" });
    std::fs::write(&query, text).expect("query");
    let out_path = dir.join(if inner { "inner.csv" } else { "left.csv" });
    anduin_ok(
        &repo(),
        &[
            "run",
            query.to_str().expect("utf-8 path"),
            "--var",
            "ORDERS=data/orders.csv",
            "--var",
            "CUSTOMERS=data/customers.csv",
            "--var",
            &format!("OUTPUT={}", out_path.display()),
        ],
    );
    std::fs::read_to_string(&out_path).expect("output")
}

#[test]
fn the_lookup_join_example_enriches_each_order_with_every_row_of_its_customer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let left = lookup_join_example(dir.path(), false);
    assert_golden(&golden().join("outputs/lookup_join.left.csv"), &left);
    let inner = lookup_join_example(dir.path(), true);
    assert_golden(&golden().join("outputs/lookup_join.inner.csv"), &inner);
    // Independently of the golden files: alice's 4 orders twice (two rows of hers), erin's
    // order (no row) only in the LEFT JOIN, padded; 12 orders in all.
    let count = |out: &str, what: &str| out.lines().filter(|l| l.contains(what)).count();
    assert_eq!(count(&left, ",alice,"), 8);
    assert_eq!(count(&inner, ",alice,"), 8);
    assert_eq!(count(&left, ",erin,3,,"), 1);
    assert_eq!(count(&inner, ",erin,"), 0);
    assert_eq!(left.lines().count(), 1 + 16);
    assert_eq!(inner.lines().count(), 1 + 15);
}
