//! Two declarations of one function name — a `CREATE FUNCTION` and a `--udf` module that
//! declares the same name, or names differing only in case — are refused before anything
//! runs, at the second declaration: otherwise one of them would be silently unreachable.

use crate::common;

use common::{anduin, repo};

#[test]
fn a_create_function_and_a_module_of_the_same_name_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out_path = dir.path().join("out.csv");
    let out = anduin(
        &repo(),
        &[
            "run",
            "examples/udf.sql",
            "--no-api",
            "--udf",
            "examples/udfs/add_one.wat",
            "--var",
            "INPUT=data/orders.csv",
            "--var",
            &format!("OUTPUT={}", out_path.display()),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("examples/udf.sql:6:17: function `add_one` is declared twice"),
        "{stderr}"
    );
    assert!(!out_path.exists(), "nothing ran");
}

#[test]
fn names_that_differ_only_in_case_are_one_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("udfs")).expect("folder");
    // A module that exports both spellings.
    std::fs::write(
        dir.path().join("udfs/add_one.wat"),
        r#"(module
  (func (export "add_one") (param i64) (result i64) local.get 0 i64.const 1 i64.add)
  (func (export "Add_One") (param i64) (result i64) local.get 0 i64.const 2 i64.add))"#,
    )
    .expect("module");
    std::fs::write(
        dir.path().join("q.sql"),
        "CREATE FUNCTION add_one(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'udfs/add_one.wat';
CREATE FUNCTION Add_One(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'udfs/add_one.wat';
CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '${INPUT}');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}');
INSERT INTO out SELECT add_one(amount) AS next FROM orders;
",
    )
    .expect("query");
    let input = format!("INPUT={}", repo().join("data/orders.csv").display());
    let out = anduin(
        dir.path(),
        &["check", "q.sql", "--var", &input, "--var", "OUTPUT=out.csv"],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("q.sql:2:17: function `Add_One` is declared twice (as `add_one` before"),
        "{stderr}"
    );
}
