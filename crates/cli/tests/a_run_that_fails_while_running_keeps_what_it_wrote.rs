//! A run that fails once it runs (here an integer SUM that leaves BIGINT, which stops the
//! query naming the aggregate and key) keeps its plain output file, as docs/cli.md says:
//! what it wrote until then stays, and an output it made but had not written to yet stays,
//! empty (issue 17's probe found it removed, as if the run had been refused before it
//! started). A run refused before it starts still leaves no empty file behind
//! (`a_run_refused_before_it_starts_leaves_no_empty_output_behind.rs`).

use crate::common;

use std::path::Path;

use common::anduin;

/// A GROUP BY whose SUM for key `a` overflows at the input's last row, after rows of `b`.
fn query(dir: &Path) {
    std::fs::write(
        dir.join("q.sql"),
        "CREATE TABLE t (ts TIMESTAMP, k VARCHAR, v BIGINT) WITH (connector = 'file', path = 'in.csv');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv', mode = 'changelog');
INSERT INTO o SELECT k, SUM(v) AS s FROM t GROUP BY k;
",
    )
    .expect("query");
    std::fs::write(
        dir.join("in.csv"),
        "ts,k,v\n\
         2024-01-01T00:00:00Z,b,1\n\
         2024-01-01T00:00:01Z,a,9223372036854775807\n\
         2024-01-01T00:00:02Z,a,1\n",
    )
    .expect("input");
}

/// Runs the query in `dir` with `extra` flags; it must fail naming the overflow.
fn run_failing(dir: &Path, extra: &[&str]) {
    let mut args = vec!["run", "q.sql", "--no-api", "-q"];
    args.extend_from_slice(extra);
    let out = anduin(dir, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("aggregate `SUM(v)` overflowed BIGINT for key k = a"),
        "{stderr}"
    );
}

#[test]
fn the_rows_written_before_the_failure_stay_in_the_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    query(dir.path());
    run_failing(dir.path(), &["--batch-size", "1"]);
    let out = std::fs::read_to_string(dir.path().join("out.csv")).expect("the output stays");
    assert_eq!(
        out, "op,k,s\n+I,b,1\n+I,a,9223372036854775807\n",
        "what was written until the failure"
    );
}

#[test]
fn an_output_the_run_made_and_had_not_written_to_yet_stays_empty() {
    let dir = tempfile::tempdir().expect("tempdir");
    query(dir.path());
    // One batch: the aggregate fails on it before the writer gets a row.
    run_failing(dir.path(), &[]);
    let out = std::fs::read_to_string(dir.path().join("out.csv")).expect("the output stays");
    assert_eq!(out, "", "nothing was written");
}
