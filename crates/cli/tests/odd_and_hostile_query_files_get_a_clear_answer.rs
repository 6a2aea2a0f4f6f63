//! Query files a careless or hostile user writes (issue 22, points 6 and 11): a byte order
//! mark, bytes that are not UTF-8, nothing at all, a chain of thousands of operators, sixty
//! `NOT`s, a 10 MB identifier, `--checkpoint-keep 0`. Each gets an answer with its place, never a crash.

use crate::common;

use std::path::Path;

use common::{anduin, anduin_ok, repo};

/// `count` terms `value` added up and compared: `count` operators in a row.
fn chain(count: usize) -> String {
    format!("{} > 0", vec!["value"; count].join(" + "))
}

fn flow(condition: &str) -> String {
    format!(
        r#"type name = "Reading" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
operator name = "source", type = "reader" {{
  param path = "${{INPUT}}"
  output name = "readings", type = "Reading"
}}
operator name = "keep", type = "filter" {{
  input name = "readings"
  param condition = "{condition}"
  output name = "kept", type = "Reading"
}}
operator name = "sink", type = "writer" {{
  input name = "kept"
  param path = "${{OUTPUT}}"
}}
"#
    )
}

fn sql(condition: &str) -> String {
    format!(
        "CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)\n\
         WITH (connector = 'file', path = '${{INPUT}}');\n\
         CREATE TABLE kept WITH (connector = 'file', path = '${{OUTPUT}}');\n\
         INSERT INTO kept SELECT ts, sensor, value FROM events WHERE {condition};\n"
    )
}

fn write(dir: &Path, name: &str, text: impl AsRef<[u8]>) -> String {
    std::fs::write(dir.join(name), text).expect("writes the query");
    name.to_string()
}

fn check(dir: &Path, name: &str) -> (Option<i32>, String) {
    let out = anduin(
        dir,
        &[
            "check",
            name,
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=out.csv",
        ],
    );
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_byte_order_mark_is_skipped_in_flow_and_sql() {
    let dir = tempfile::tempdir().expect("a temp dir");
    for (name, text) in [
        ("bom.flow", flow("value < 42")),
        ("bom.sql", sql("value < 42")),
    ] {
        let name = write(dir.path(), name, format!("\u{feff}{text}"));
        let out = anduin_ok(
            dir.path(),
            &[
                "check",
                &name,
                "--var",
                "INPUT=in.csv",
                "--var",
                "OUTPUT=out.csv",
            ],
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains(": ok ("));
    }
}

#[test]
fn a_byte_that_is_not_utf8_is_reported_at_its_line_and_column() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut bytes = flow("value < 42").into_bytes();
    // Line 12 is `  param condition = "value < 42"`: break the `4` (column 30).
    let at = String::from_utf8_lossy(&bytes)
        .find("42\"")
        .expect("the condition");
    bytes[at] = 0xff;
    let name = write(dir.path(), "bad.flow", bytes);
    let (code, stderr) = check(dir.path(), &name);
    assert_eq!(code, Some(1));
    assert!(
        stderr.starts_with("bad.flow:12:30: the file is not UTF-8 text: byte 0xff"),
        "{stderr}"
    );
}

#[test]
fn a_query_without_operators_is_refused_by_check_explain_and_run() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let empty = write(dir.path(), "empty.flow", "");
    let types = write(
        dir.path(),
        "types.flow",
        "# only a type\ntype name = \"T\" { column name = \"x\", type = \"int\" }\n",
    );
    let script = write(dir.path(), "empty.sql", "-- nothing yet\n");
    for name in [&empty, &types, &script] {
        for command in ["check", "explain", "run"] {
            let out = anduin(dir.path(), &[command, name]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{command} {name}: {stderr}");
            assert!(
                stderr.contains("the query has no operators")
                    || stderr.contains("the script has no INSERT INTO"),
                "{command} {name}: {stderr}"
            );
        }
    }
}

#[test]
fn a_chain_of_3000_operators_is_refused_where_it_crosses_the_limit() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let name = write(dir.path(), "long.flow", flow(&chain(3_000)));
    let (code, stderr) = check(dir.path(), &name);
    assert_eq!(code, Some(1));
    // The 1001st `+` is at column 8 × 1001 - 1 of the condition, which starts at column 22.
    assert_eq!(
        stderr.lines().next(),
        Some("long.flow:12:8028: the expression has 3000 operators in a row; anduin accepts at most 1000: split it into several steps, or write a long list of alternatives as `x IN (…)` (in param `condition` of operator \"keep\")"),
        "{stderr}"
    );
    let name = write(dir.path(), "long.sql", sql(&chain(3_000)));
    let (code, stderr) = check(dir.path(), &name);
    assert_eq!(code, Some(1));
    assert!(stderr.starts_with("long.sql:4:"), "{stderr}");
    assert!(
        stderr.contains("the expression has 3000 operators in a row; anduin accepts at most 1000"),
        "{stderr}"
    );
    let name = write(
        dir.path(),
        "deep.flow",
        flow(&format!("{}value > 0{}", "(".repeat(300), ")".repeat(300))),
    );
    let (code, stderr) = check(dir.path(), &name);
    assert_eq!(code, Some(1));
    assert!(
        stderr.starts_with("deep.flow:12:222: the expression nests more than 200 parentheses"),
        "{stderr}"
    );
}

#[test]
fn a_chain_of_1000_operators_is_checked_and_runs_on_the_task_threads() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = repo().join("data/readings.csv");
    let input = input.to_str().expect("a UTF-8 path");
    // value × 999 > 42 × 999 keeps the same rows as value > 42.
    let condition = format!("{} > {}", vec!["value"; 999].join(" + "), 42 * 999);
    for (i, (name, text)) in [
        ("long.flow", flow(&condition)),
        ("long.sql", sql(&condition)),
    ]
    .into_iter()
    .enumerate()
    {
        let name = write(dir.path(), name, text);
        let output = format!("{name}.csv");
        anduin_ok(
            dir.path(),
            &[
                "run",
                &name,
                "--var",
                &format!("INPUT={input}"),
                "--var",
                &format!("OUTPUT={output}"),
                "-q",
            ],
        );
        let short = write(dir.path(), &format!("short{i}.flow"), flow("value > 42"));
        let reference = format!("{short}.csv");
        anduin_ok(
            dir.path(),
            &[
                "run",
                &short,
                "--var",
                &format!("INPUT={input}"),
                "--var",
                &format!("OUTPUT={reference}"),
                "-q",
            ],
        );
        let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).expect("an output");
        assert_eq!(read(&output), read(&reference), "{name}");
        assert!(read(&output).lines().count() > 1000, "{name}");
    }
}

#[test]
fn sixty_nots_parse_in_flow_and_sql() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let condition = format!("{}value > 0", "NOT ".repeat(60));
    for (name, text) in [("not.flow", flow(&condition)), ("not.sql", sql(&condition))] {
        let name = write(dir.path(), name, text);
        let (code, stderr) = check(dir.path(), &name);
        assert_eq!(code, Some(0), "{stderr}");
    }
}

#[test]
fn a_huge_identifier_is_not_echoed_whole() {
    let dir = tempfile::tempdir().expect("a temp dir");
    // 1 MiB (the issue's 10 MB behaves the same, ten times slower in a debug build).
    let huge = "v".repeat(1 << 20);
    for (name, text) in [
        ("huge.flow", flow(&format!("{huge} > 0"))),
        ("huge.sql", sql(&format!("{huge} > 0"))),
    ] {
        let name = write(dir.path(), name, text);
        let (code, stderr) = check(dir.path(), &name);
        assert_eq!(code, Some(1));
        assert!(stderr.len() < 2_000, "{} bytes of errors", stderr.len());
        assert!(
            stderr.contains(&format!("`{}…` ({} characters)", "v".repeat(79), 1 << 20)),
            "{stderr}"
        );
    }
}

#[test]
fn a_checkpoint_keep_of_zero_is_refused() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let name = write(dir.path(), "q.flow", flow("value < 42"));
    let out = anduin(
        dir.path(),
        &[
            "run",
            &name,
            "--checkpoint-dir",
            "ck",
            "--checkpoint-keep",
            "0",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--checkpoint-keep")
            && stderr.contains("expected a whole number of at least 1, found `0`"),
        "{stderr}"
    );
    assert!(!dir.path().join("ck").exists(), "nothing ran");
}
