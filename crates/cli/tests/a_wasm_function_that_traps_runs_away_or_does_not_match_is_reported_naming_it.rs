//! Issue 21: the sandbox seen from a query. A row on which a function traps or grows its
//! memory past the limit goes to the dead letters with the function named (or stops the
//! query with `--on-error fail`); a function that runs out of fuel (a runaway) stops the
//! query naming it, the expression and the row, whatever `on_error` says; a declaration that
//! does not match the module's export, and a module that cannot be read, are errors at their
//! place in the query file before anything runs.

use crate::common;

use std::path::Path;

use common::{anduin, dead_letters, repo};

fn hostile(dir: &Path) {
    let wasm = wat::parse_file(repo().join("crates/udf/testdata/hostile.wat")).expect("valid");
    std::fs::write(dir.join("hostile.wasm"), wasm).expect("module");
}

/// Runs `SELECT customer, {call} AS r FROM orders` with `name` declared from hostile.wasm.
fn run(dir: &Path, name: &str, call: &str, more: &[&str]) -> std::process::Output {
    hostile(dir);
    std::fs::write(
        dir.join("q.sql"),
        format!(
            "CREATE FUNCTION {name}(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'hostile.wasm';
CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '${{INPUT}}');
CREATE TABLE out WITH (connector = 'file', path = '${{OUTPUT}}');
INSERT INTO out SELECT customer, {call} AS r FROM orders;"
        ),
    )
    .expect("query");
    let input = format!("INPUT={}", repo().join("data/orders.csv").display());
    let mut args = vec!["run", "q.sql", "--var", &input, "--var", "OUTPUT=out.csv"];
    args.extend_from_slice(more);
    anduin(dir, &args)
}

#[test]
fn a_trapping_row_goes_to_the_dead_letters_naming_the_function() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(dir.path(), "boom", "boom(amount)", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let written = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
    assert_eq!(written.lines().count(), 1 + 11, "{written}");
    assert!(!written.contains("erin"), "{written}");
    let rejected = dead_letters(&dir.path().join("out.csv.rejected"));
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    let r = &rejected[0];
    assert_eq!(r["row"]["customer"], "erin");
    assert_eq!(r["line"], 12);
    assert_eq!(r["expression"], "boom(amount)");
    let reason = r["reason"].as_str().expect("a reason");
    assert!(reason.starts_with("function `boom` trapped: "), "{reason}");
    assert!(reason.contains("unreachable"), "{reason}");
}

/// Whether the query in `dir` wrote no dead letters (it may not have made the file).
fn no_dead_letters(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("out.csv.rejected")).map_or(true, |t| t.trim().is_empty())
}

/// The query's error for a runaway function: it names the function, the expression at its
/// place, and the row, and says the query stops whatever `on_error` says.
fn assert_runaway(out: &std::process::Output, dir: &Path, expression: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{expression} ran out of resources on the row read from "
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(": function `spin` ran out of fuel: it did not return within 10000000 instructions (a runaway loop?) (the query stops whatever `on_error` says"),
        "{stderr}"
    );
    assert!(no_dead_letters(dir), "a runaway goes to no dead letters");
}

#[test]
fn a_runaway_function_fails_the_query_naming_it_instead_of_hanging_it() {
    // Only dave's row runs away: the query stops there, on the default `on_error`
    // (dead letters), naming the function, the expression and the row (line 8).
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        dir.path(),
        "spin",
        "CASE WHEN customer = 'dave' THEN spin(amount) ELSE amount END",
        &[],
    );
    assert_runaway(
        &out,
        dir.path(),
        "column `r` `CASE WHEN customer = 'dave' THEN spin(amount) ELSE amount END` at q.sql:5:34",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("orders.csv:8: "), "{stderr}");
    // Every row runs away: the first one stops the query (not each row, slowly, to the
    // dead letters); with --on-error fail, the same.
    for more in [&[][..], &["--on-error", "fail"][..]] {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = run(dir.path(), "spin", "spin(amount)", more);
        assert_runaway(&out, dir.path(), "column `r` `spin(amount)` at q.sql:5:34");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("orders.csv:2: "), "{stderr}");
    }
}

#[test]
fn a_runaway_function_in_a_condition_an_aggregate_or_a_pattern_fails_the_query() {
    let cases = [
        (
            "INSERT INTO out SELECT customer FROM orders WHERE spin(amount) > 0;",
            "condition `spin(amount) > 0`",
        ),
        (
            "INSERT INTO out SELECT window_start, SUM(spin(amount)) AS s
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY window_start, window_end;",
            "aggregate `s` `SUM(spin(amount))`",
        ),
        (
            "INSERT INTO out SELECT * FROM orders
MATCH_RECOGNIZE (
  PARTITION BY customer ORDER BY ts
  MEASURES A.amount AS a
  ONE ROW PER MATCH
  PATTERN (A B)
  DEFINE B AS spin(B.amount) > A.amount
) AS m;",
            "`spin(B.amount) > A.amount`",
        ),
    ];
    for (insert, expression) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        hostile(dir.path());
        std::fs::write(
            dir.path().join("q.sql"),
            format!(
                "CREATE FUNCTION spin(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'hostile.wasm';
CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '${{INPUT}}', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = '${{OUTPUT}}');
{insert}"
            ),
        )
        .expect("query");
        let input = format!("INPUT={}", repo().join("data/orders.csv").display());
        let out = anduin(
            dir.path(),
            &["run", "q.sql", "--var", &input, "--var", "OUTPUT=out.csv"],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{insert}: {stderr}");
        assert!(stderr.contains(expression), "{insert}: {stderr}");
        assert!(
            stderr.contains("ran out of resources on ")
                && stderr.contains("function `spin` ran out of fuel"),
            "{insert}: {stderr}"
        );
        assert!(no_dead_letters(dir.path()), "{insert}: no dead letters");
    }
}

#[test]
fn a_memory_bomb_stops_at_the_limit_naming_the_function() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(dir.path(), "bomb", "bomb(amount)", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let rejected = dead_letters(&dir.path().join("out.csv.rejected"));
    // Every row with an amount (a NULL one is not called).
    assert_eq!(rejected.len(), 11, "{rejected:?}");
    assert_eq!(
        rejected[0]["reason"],
        "function `bomb` tried to grow its memory to 2147549184 bytes, beyond the limit of 67108864 bytes"
    );
}

#[test]
fn a_declaration_the_module_does_not_match_is_an_error_at_its_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(dir.path(), "narrow", "narrow(amount)", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "q.sql:1:17: function `narrow` is declared as (BIGINT) RETURNS BIGINT, which takes (i64) -> i64 in WebAssembly, but module `hostile.wasm` exports it as (i32) -> i32\n"
    );
    assert!(!dir.path().join("out.csv").exists());
}

#[test]
fn a_missing_module_is_an_error_at_its_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("q.sql"),
        "CREATE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'nowhere.wasm';
CREATE TABLE t (x BIGINT) WITH (connector = 'file', path = 'in.csv');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv');
INSERT INTO o SELECT f(x) AS y FROM t;",
    )
    .expect("query");
    let out = anduin(dir.path(), &["check", "q.sql"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("q.sql:1:61: cannot read WebAssembly module `nowhere.wasm`: "),
        "{stderr}"
    );
}
