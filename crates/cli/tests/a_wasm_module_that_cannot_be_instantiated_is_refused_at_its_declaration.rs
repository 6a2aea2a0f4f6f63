//! Issue 21: a module whose start function loops forever can never run a row. It is refused
//! at its declaration, before anything is read: at the `CREATE FUNCTION` (FILE:LINE:COL) or
//! for `--udf`, naming the function, the module and why — not, as before, found again on
//! every row, each row running the loop to the end of its fuel and going to the dead letters.

use crate::common;

use std::path::Path;

use common::{anduin, repo};

/// A module whose start function never returns, declaring `id` in its custom section.
fn looping_module(dir: &Path) {
    std::fs::write(
        dir.join("loops.wat"),
        r#"(module
  (func $start (loop $forever br $forever))
  (start $start)
  (func (export "id") (param i64) (result i64) local.get 0)
  (@custom "anduin:functions" "id(BIGINT) -> BIGINT"))"#,
    )
    .expect("module");
}

const REASON: &str = "module `loops.wat` cannot be instantiated for function `id`: its start function did not return within 10000000 instructions (a runaway loop?); every call would fail, so the function is refused";

#[test]
fn create_function_of_a_module_whose_start_function_loops_is_an_error_at_its_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    looping_module(dir.path());
    std::fs::write(
        dir.path().join("q.sql"),
        "CREATE FUNCTION id(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'loops.wat';
CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '${INPUT}');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}');
INSERT INTO out SELECT customer, id(amount) AS r FROM orders;",
    )
    .expect("query");
    let input = format!("INPUT={}", repo().join("data/orders.csv").display());
    let out = anduin(
        dir.path(),
        &[
            "run",
            "q.sql",
            "--no-api",
            "--var",
            &input,
            "--var",
            "OUTPUT=out.csv",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("q.sql:1:17: {REASON}\n")
    );
    assert!(!dir.path().join("out.csv").exists(), "nothing ran");
    assert!(
        !dir.path().join("out.csv.rejected").exists(),
        "no dead letters"
    );
}

#[test]
fn udf_of_a_module_whose_start_function_loops_is_refused_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    looping_module(dir.path());
    std::fs::write(
        dir.path().join("q.sql"),
        "CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '${INPUT}');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}');
INSERT INTO out SELECT customer, id(amount) AS r FROM orders;",
    )
    .expect("query");
    let input = format!("INPUT={}", repo().join("data/orders.csv").display());
    let out = anduin(
        dir.path(),
        &[
            "check",
            "q.sql",
            "--udf",
            "loops.wat",
            "--var",
            &input,
            "--var",
            "OUTPUT=out.csv",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(REASON), "{stderr}");
}
