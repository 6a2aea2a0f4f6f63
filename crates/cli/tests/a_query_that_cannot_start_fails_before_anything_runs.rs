//! A missing input file, an output that cannot be created, or a variable that is not set stop
//! `anduin run` before anything runs, with a message that names the problem.

use crate::common;

use common::{anduin, repo};

fn sensors() -> String {
    repo()
        .join("examples/sensors.flow")
        .to_str()
        .expect("utf-8 path")
        .to_string()
}

#[test]
fn a_missing_input_file_is_named_and_the_output_is_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("o.csv"), "keep me\n").expect("existing output");
    let out = anduin(
        dir.path(),
        &[
            "run",
            &sensors(),
            "--var",
            "INPUT=nope.csv",
            "--var",
            "OUTPUT=o.csv",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: cannot start: operator \"source\": input file `nope.csv` does not exist\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("o.csv")).expect("output"),
        "keep me\n"
    );
}

#[test]
fn a_glob_that_matches_nothing_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = anduin(
        dir.path(),
        &[
            "run",
            &sensors(),
            "--var",
            "INPUT=in/*.csv",
            "--var",
            "OUTPUT=o.csv",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no input file matches `in/*.csv`"));
}

#[test]
fn an_output_that_cannot_be_created_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), "ts,sensor,value\n1,2,3\n").expect("input");
    let out = anduin(
        dir.path(),
        &[
            "run",
            &sensors(),
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=no/such/dir/o.csv",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(
            "error: cannot start: operator \"sink\": cannot create output file `no/such/dir/o.csv`"
        ),
        "{stderr}"
    );
}

#[test]
fn a_variable_that_is_not_set_is_named_with_its_position() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = anduin(dir.path(), &["run", &sensors(), "--var", "INPUT=in.csv"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.ends_with(
            "sensors.flow:19:17: variable `OUTPUT` is not set: pass `--var OUTPUT=VALUE`\n"
        ),
        "{stderr}"
    );
}

#[test]
fn a_sql_statement_other_than_create_table_and_insert_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.sql"), "SELECT 1").expect("query");
    let out = anduin(dir.path(), &["run", "q.sql"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "q.sql:1:1: `SELECT 1` is not supported: a script holds SET '…' = '…', CREATE TABLE … WITH (…), CREATE VIEW … AS SELECT …, CREATE FUNCTION …, CREATE AGGREGATE … and INSERT INTO … SELECT … statements\n"
    );
}

#[test]
fn a_query_that_would_overwrite_its_input_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), "ts,sensor,value\n1,2,3\n").expect("input");
    let out = anduin(
        dir.path(),
        &[
            "run",
            &sensors(),
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=./in.csv",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("operator \"source\" reads") && stderr.contains("operator \"sink\" writes"),
        "{stderr}"
    );
    let out = anduin(
        dir.path(),
        &[
            "run",
            &sensors(),
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=o.csv",
            "--dead-letter",
            "in.csv",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the dead-letter file is"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("in.csv")).expect("input intact"),
        "ts,sensor,value\n1,2,3\n"
    );
}

#[test]
fn a_writer_that_cannot_start_leaves_the_other_outputs_as_they_were() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("keep.csv"), "keep me\n").expect("existing output");
    std::fs::write(
        dir.path().join("q.flow"),
        r#"type name = "T" { column name = "x", type = "int" }
operator name = "g", type = "generator" { param count = 3 output name = "xs", type = "T" }
operator name = "u", type = "union" { input name = "xs" input name = "xs" output name = "both", type = "T" }
operator name = "w1", type = "writer" { input name = "both" param path = "keep.csv" }
operator name = "w2", type = "writer" { input name = "xs" param path = "no/such/dir/x.csv" }"#,
    )
    .expect("query");
    let out = anduin(dir.path(), &["run", "q.flow"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("operator \"w2\""));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("keep.csv")).expect("kept"),
        "keep me\n"
    );
}

#[test]
fn a_dead_letter_file_in_a_missing_directory_is_an_error_before_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), "ts,sensor,value\n1,2,3\n").expect("input");
    let out = anduin(
        dir.path(),
        &[
            "run",
            &sensors(),
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=o.csv",
            "--dead-letter",
            "nope/dl.jsonl",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot write the dead-letter file `nope/dl.jsonl`"),
        "{stderr}"
    );
    assert!(!dir.path().join("o.csv").exists());
}

/// Issue 22, point 2: the same file under two names (a hard link) was overwritten while it
/// was read.
#[test]
fn an_output_or_dead_letter_file_hard_linked_to_the_input_is_refused_and_the_input_survives() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = "ts,sensor,value\n1,2,3\n4,5,60\n";
    std::fs::write(dir.path().join("in.csv"), input).expect("input");
    std::fs::hard_link(dir.path().join("in.csv"), dir.path().join("hard.csv")).expect("link");
    for extra in [
        &["--var", "OUTPUT=hard.csv"][..],
        &["--var", "OUTPUT=o.csv", "--dead-letter", "hard.csv"][..],
    ] {
        let query = sensors();
        let mut args = vec!["run", query.as_str(), "--var", "INPUT=in.csv"];
        args.extend_from_slice(extra);
        let out = anduin(dir.path(), &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("operator \"source\" reads") && stderr.contains("hard.csv"),
            "{args:?}: {stderr}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("in.csv")).expect("input intact"),
            input
        );
    }
}
