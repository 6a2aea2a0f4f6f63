//! Issue 22, point 5: a quote that is never closed, early in a large CSV file, costs the line
//! it is on (a malformed record with its line and the start of its text) instead of swallowing
//! the rest of the file into one record; a JSON line longer than `max_record_bytes` is
//! rejected the same way.

use crate::common;

use common::{anduin_ok, dead_letters};

const PASS_THROUGH: &str = r#"
type name = "Event" {
  column name = "ts", type = "int"
  column name = "value", type = "string"
}
operator name = "events", type = "reader" {
  param path = "${INPUT}"
  param format = "${FORMAT:-csv}"
  param max_record_bytes = "${MAX:-1MB}"
  output name = "events", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "events"
  param path = "${OUTPUT}"
}
"#;

#[test]
fn a_stray_quote_costs_one_line_not_the_rest_of_the_file() {
    const ROWS: usize = 300_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut input = String::from("ts,value\n");
    for i in 0..ROWS {
        // Line 11 holds row 9, whose quote nothing closes.
        let quote = if i == 9 { "\"" } else { "" };
        input.push_str(&format!("{i},{quote}v{i}\n"));
    }
    std::fs::write(dir.path().join("in.csv"), &input).expect("input");
    std::fs::write(dir.path().join("q.flow"), PASS_THROUGH).expect("query");
    let out = anduin_ok(
        dir.path(),
        &[
            "run",
            "q.flow",
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=o.csv",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("[writer] {} rows written", ROWS - 1)),
        "{stderr}"
    );
    assert!(
        stderr.contains("anduin: 1 malformed records went to o.csv.rejected"),
        "{stderr}"
    );
    let rejected = dead_letters(&dir.path().join("o.csv.rejected"));
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0]["line"], 11);
    assert_eq!(rejected[0]["record"], "9,\"v9");
    let output = std::fs::read_to_string(dir.path().join("o.csv")).expect("output");
    assert!(output.contains("\n8,v8\n10,v10\n"));
    assert!(output.ends_with(&format!("\n{},v{}\n", ROWS - 1, ROWS - 1)));
}

#[test]
fn a_json_line_longer_than_max_record_bytes_is_rejected_and_the_next_lines_are_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let long = "x".repeat(100_000);
    std::fs::write(
        dir.path().join("in.jsonl"),
        format!("{{\"ts\": 1}}\n{{\"ts\": 2, \"value\": \"{long}\"}}\n{{\"ts\": 3}}\n"),
    )
    .expect("input");
    std::fs::write(dir.path().join("q.flow"), PASS_THROUGH).expect("query");
    let out = anduin_ok(
        dir.path(),
        &[
            "run",
            "q.flow",
            "--var",
            "INPUT=in.jsonl",
            "--var",
            "FORMAT=jsonl",
            "--var",
            "MAX=64KB",
            "--var",
            "OUTPUT=o.csv",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[writer] 2 rows written"), "{stderr}");
    let rejected = dead_letters(&dir.path().join("o.csv.rejected"));
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0]["line"], 2);
    assert!(
        rejected[0]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("line longer than 64 KiB")),
        "{}",
        rejected[0]["reason"]
    );
    assert_eq!(rejected[0]["record"].as_str().map(str::len), Some(4096));
}

#[test]
fn a_max_record_bytes_that_is_not_a_size_is_refused_before_the_query_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), PASS_THROUGH).expect("query");
    let out = common::anduin(
        dir.path(),
        &[
            "check",
            "q.flow",
            "--var",
            "INPUT=in.csv",
            "--var",
            "MAX=lots",
            "--var",
            "OUTPUT=o.csv",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr.contains("expected a positive size such as \"1MB\"")
            && stderr.contains("max_record_bytes"),
        "{stderr}"
    );
}
