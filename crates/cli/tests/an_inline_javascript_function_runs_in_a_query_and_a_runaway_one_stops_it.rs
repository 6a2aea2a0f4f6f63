//! Issue 21: `CREATE FUNCTION … LANGUAGE javascript AS $$ … $$`, an inline function with no
//! toolchain, is called like a built-in one in a select list and a WHERE; one that runs away
//! stops the query naming it and the row; one that does not compile is an error at its body
//! before anything runs.

use crate::common;

use std::path::Path;

use common::{anduin, repo};

fn run(dir: &Path, functions: &str, select: &str) -> std::process::Output {
    std::fs::write(
        dir.join("q.sql"),
        format!(
            "{functions}
CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '${{INPUT}}');
CREATE TABLE out WITH (connector = 'file', path = '${{OUTPUT}}');
INSERT INTO out {select};"
        ),
    )
    .expect("query");
    let input = format!("INPUT={}", repo().join("data/orders.csv").display());
    anduin(
        dir,
        &[
            "run",
            "q.sql",
            "--no-api",
            "--var",
            &input,
            "--var",
            "OUTPUT=out.csv",
        ],
    )
}

#[test]
fn a_string_function_and_the_issues_bucket_compute_and_filter() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        dir.path(),
        "CREATE FUNCTION greet(name VARCHAR) RETURNS VARCHAR LANGUAGE javascript AS $$
  return 'hi ' + name[0].toUpperCase() + name.slice(1)
$$;
CREATE FUNCTION bucket(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$ return x >> 3 $$;",
        "SELECT greet(customer) AS hello, bucket(amount) AS b FROM orders WHERE bucket(amount) >= 2",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let written = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
    assert_eq!(
        written,
        "hello,b\nhi Alice,3\nhi Bob,5\nhi Alice,3\nhi Carol,2\nhi Alice,11\nhi Carol,2\n"
    );
}

#[test]
fn a_runaway_javascript_function_stops_the_query_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        dir.path(),
        "CREATE FUNCTION spin(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$
  while (x == 7) {}
  return x
$$;",
        "SELECT customer, spin(amount) AS r FROM orders",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "column `r` `spin(amount)` at q.sql:8:34 ran out of resources on the row read from "
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("orders.csv:8: function `spin` ran out of fuel"),
        "{stderr}"
    );
}

#[test]
fn a_body_that_does_not_compile_is_an_error_at_the_body() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        dir.path(),
        "CREATE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$ return x + $$;",
        "SELECT f(amount) AS y FROM orders",
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(
            "q.sql:1:67: function `f`: its JavaScript does not compile: SyntaxError: "
        ),
        "{stderr}"
    );
    assert!(!dir.path().join("out.csv").exists());
}
