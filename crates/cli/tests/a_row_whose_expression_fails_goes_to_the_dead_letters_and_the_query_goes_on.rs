//! Issue 22, point 7: one row on which an expression fails (a division by zero, an overflow,
//! a cast that does not fit) no longer kills the query. The row goes to the dead letters with
//! the expression, its place in the query and the input line it was read from, and every other
//! row is processed; with `on_error = "fail"` (the param or `--on-error fail`) the query stops
//! with those facts in its error, leaving what it wrote so far. A checkpointed run stopped so
//! resumes past the row once `on_error` is changed back.

use crate::common;

use std::fmt::Write as _;
use std::path::Path;

use common::{anduin, anduin_ok, dead_letters, output_rows};

const ROWS: u64 = 100_000;
/// The row (0-based) whose `b` is 0: on line 50 002 of the file, after the header.
const BAD: u64 = 50_000;

/// `ts,a,b` with `b = 0` only at row [`BAD`].
fn input() -> String {
    let mut s = String::from("ts,a,b\n");
    for i in 0..ROWS {
        let b = if i == BAD { 0 } else { i % 7 + 1 };
        writeln!(s, "{},{i},{b}", 1_700_000_000_000u64 + i).expect("write to a string");
    }
    s
}

/// A query reading `ts, a, b` and computing `a / b` in a map (line 13, column 6) written by
/// `param`s of the map given in `extra`.
fn query(extra: &str) -> String {
    format!(
        r#"type name = "Row" {{
  column name = "ts", type = "timestamp"
  column name = "a", type = "int"
  column name = "b", type = "int"
}}
operator name = "src", type = "reader" {{
  param path = "${{INPUT}}"
  output name = "rows", type = "Row"
}}
operator name = "m", type = "map" {{
  input name = "rows"
  param columns = """ts,
     a / b AS q"""{extra}
  output name = "qs"
}}
operator name = "out", type = "writer" {{
  input name = "qs"
  param path = "${{OUTPUT}}"
}}
"#
    )
}

fn setup(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), input()).expect("input");
    std::fs::write(dir.path().join("q.flow"), query(extra)).expect("query");
    dir
}

/// The rows a correct run writes: every row but the bad one, `q = a / b`.
fn expected() -> Vec<String> {
    let mut rows: Vec<String> = (0..ROWS)
        .filter(|i| *i != BAD)
        .map(|i| format!("{},{}", 1_700_000_000_000u64 + i, i / (i % 7 + 1)))
        .collect();
    rows.sort();
    rows
}

fn run(dir: &Path, more: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        "q.flow",
        "--var",
        "INPUT=in.csv",
        "--var",
        "OUTPUT=out.csv",
    ];
    args.extend_from_slice(more);
    anduin(dir, &args)
}

#[test]
fn the_row_goes_to_the_dead_letters_with_its_expression_and_input_line() {
    let dir = setup("");
    let out = run(dir.path(), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("1 rejected rows went to out.csv.rejected"),
        "{stderr}"
    );
    assert_eq!(output_rows(&dir.path().join("out.csv")), expected());
    let rejected = dead_letters(&dir.path().join("out.csv.rejected"));
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    let r = &rejected[0];
    assert_eq!(r["operator"], "m");
    assert_eq!(r["expression"], "a / b");
    assert_eq!(r["at"], "q.flow:13:6");
    assert_eq!(r["reason"], "Divide by zero error");
    assert_eq!(r["source"], "in.csv");
    assert_eq!(r["line"], BAD + 2);
    assert_eq!(r["row"]["a"], BAD);
    assert_eq!(r["row"]["b"], 0);
}

#[test]
fn without_chaining_the_row_is_rejected_without_its_input_line() {
    let dir = setup("");
    let out = run(dir.path(), &["--no-chaining"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(output_rows(&dir.path().join("out.csv")), expected());
    let rejected = dead_letters(&dir.path().join("out.csv.rejected"));
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0]["at"], "q.flow:13:6");
    assert_eq!(rejected[0]["row"]["a"], BAD);
    assert!(rejected[0].get("line").is_none(), "{:?}", rejected[0]);
}

#[test]
fn with_on_error_fail_the_query_stops_naming_the_expression_and_the_row() {
    for (extra, flag) in [
        ("\n  param on_error = \"fail\"", None),
        ("", Some("--on-error=fail")),
    ] {
        let dir = setup(extra);
        let out = run(dir.path(), &flag.into_iter().collect::<Vec<_>>());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(
                "operator \"m\": column `q` `a / b` failed at q.flow:13:6 on the row read from in.csv:50002: Divide by zero error"
            ),
            "{stderr}"
        );
        // What was written before the batch holding the row stays: a prefix of the output.
        let written = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
        let rows: Vec<&str> = written.lines().skip(1).collect();
        assert!(
            !rows.is_empty() && rows.len() < BAD as usize,
            "{}",
            rows.len()
        );
        for (i, row) in rows.iter().enumerate() {
            let i = i as u64;
            assert_eq!(
                *row,
                format!("{},{}", 1_700_000_000_000u64 + i, i / (i % 7 + 1))
            );
        }
        assert!(!dir.path().join("out.csv.rejected").exists());
    }
}

#[test]
fn a_checkpointed_run_stopped_by_a_row_resumes_past_it_with_dead_letters() {
    let dir = setup("");
    let checkpoints = [
        "--checkpoint-dir",
        "ck",
        "--checkpoint-every",
        "20000",
        "--batch-size",
        "1000",
    ];
    let mut first: Vec<&str> = checkpoints.to_vec();
    first.push("--on-error=fail");
    let out = run(dir.path(), &first);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A checkpoint is complete when its manifest is there (one may have been in flight).
    let checkpointed = std::fs::read_dir(dir.path().join("ck"))
        .expect("the checkpoint directory")
        .any(|e| e.expect("an entry").path().join("MANIFEST.json").exists());
    // The same query, with dead letters again: it resumes from the last checkpoint, if one
    // completed before the row (on_error is not part of the query's fingerprint), and
    // finishes.
    let out = run(dir.path(), &checkpoints);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.contains("resuming from checkpoint"),
        checkpointed,
        "{stderr}"
    );
    assert_eq!(output_rows(&dir.path().join("out.csv")), expected());
    let rejected = dead_letters(&dir.path().join("out.csv.rejected"));
    assert!(
        rejected.iter().all(|r| r["line"] == BAD + 2),
        "{rejected:?}"
    );
    assert!(!rejected.is_empty());
}

/// Rows of `ts,a,b,f` on which one expression fails for some and not for others.
const MIXED: &str = "ts,a,b,f
1700000000000,5,0,1.5
1700000000001,-9223372036854775808,2,NaN
1700000000002,9223372036854775807,1,-1.0
1700000000003,7,3,2.0
";

#[test]
fn every_kind_of_row_error_rejects_just_the_rows_it_fails_on() {
    // (expression, lines of the rows it fails on, its results on the other rows)
    let cases: &[(&str, &[u64], &[&str])] = &[
        ("a % b", &[2], &["0", "0", "1"]),
        ("abs(a)", &[3], &["5", "9223372036854775807", "7"]),
        ("a + b", &[4], &["5", "-9223372036854775806", "10"]),
        ("-a", &[3], &["-5", "-9223372036854775807", "-7"]),
        ("a * 2", &[3, 4], &["10", "14"]),
        ("CAST(f AS BIGINT)", &[3], &["1", "-1", "2"]),
        (
            "sqrt(f)",
            &[4],
            &["1.224744871391589", "NaN", "1.4142135623730951"],
        ),
        (
            "CAST(to_timestamp_millis(a) + INTERVAL '1' DAY AS BIGINT)",
            &[3, 4],
            &["86400005", "86400007"],
        ),
    ];
    // Also in batches of one row: a batch whose only row fails.
    for (batch_size, (expr, bad, good)) in ["8192", "1"]
        .into_iter()
        .flat_map(|b| cases.iter().map(move |c| (b, c)))
    {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("in.csv"), MIXED).expect("input");
        let q = query("")
            .replace(
                "column name = \"b\", type = \"int\"",
                "column name = \"b\", type = \"int\"\n  column name = \"f\", type = \"float\"",
            )
            .replace("a / b AS q", &format!("{expr} AS q"));
        std::fs::write(dir.path().join("q.flow"), q).expect("query");
        anduin_ok(
            dir.path(),
            &[
                "run",
                "q.flow",
                "--var",
                "INPUT=in.csv",
                "--var",
                "OUTPUT=out.csv",
                "--batch-size",
                batch_size,
            ],
        );
        let written = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
        let values: Vec<&str> = written
            .lines()
            .skip(1)
            .map(|l| l.split_once(',').expect("two columns").1)
            .collect();
        assert_eq!(&values, good, "{expr}");
        let rejected = dead_letters(&dir.path().join("out.csv.rejected"));
        let lines: Vec<u64> = rejected
            .iter()
            .map(|r| r["line"].as_u64().expect("a line"))
            .collect();
        assert_eq!(&lines, bad, "{expr}: {rejected:?}");
        assert!(
            rejected.iter().all(|r| r["expression"] == *expr),
            "{rejected:?}"
        );
    }
}

#[test]
fn a_filter_and_a_window_aggregate_reject_the_rows_they_fail_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), MIXED).expect("input");
    let q = r#"type name = "Row" {
  column name = "ts", type = "timestamp"
  column name = "a", type = "int"
  column name = "b", type = "int"
  column name = "f", type = "float"
}
operator name = "src", type = "reader" {
  param path = "in.csv"
  param event_time = "ts"
  output name = "rows", type = "Row"
}
operator name = "keep", type = "filter" {
  input name = "rows"
  param condition = "a / (b - 2) < 100"
  output name = "kept", type = "Row"
}
operator name = "w", type = "window" {
  input name = "kept"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param aggregates = "COUNT(*) AS n, SUM(a / b / 2) AS s"
  output name = "sums"
}
operator name = "out", type = "writer" {
  input name = "sums"
  param path = "out.csv"
}
"#;
    std::fs::write(dir.path().join("q.flow"), q).expect("query");
    for chaining in [&[][..], &["--no-chaining"][..], &["--batch-size", "1"][..]] {
        let mut args = vec!["run", "q.flow"];
        args.extend_from_slice(chaining);
        anduin_ok(dir.path(), &args);
        // Line 3 fails the filter (b - 2 = 0), line 2 the SUM (b = 0): the window sums
        // 9223372036854775807 / 1 / 2 and 7 / 3 / 2 of lines 4 and 5 (halved, so that the
        // total fits: a total beyond BIGINT would stop the query, see
        // `an_integer_sum_that_overflows_is_an_error_never_a_wrapped_total.rs`).
        assert_eq!(
            output_rows(&dir.path().join("out.csv")),
            vec!["1700000000000,1700000001000,2,4611686018427387904".to_string()],
        );
        let rejected = dead_letters(&dir.path().join("out.csv.rejected"));
        // In one-row batches the window's reject (line 2) comes before the filter's (line 3).
        let mut what: Vec<(&str, &str, &str)> = rejected
            .iter()
            .map(|r| {
                (
                    r["operator"].as_str().expect("operator"),
                    r["expression"].as_str().expect("expression"),
                    r["at"].as_str().expect("at"),
                )
            })
            .collect();
        what.sort_unstable();
        assert_eq!(
            what,
            vec![
                ("keep", "a / (b - 2) < 100", "q.flow:14:22"),
                ("w", "SUM(a / b / 2)", "q.flow:22:38"),
            ]
        );
    }
}
