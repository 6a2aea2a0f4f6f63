//! Issue 21, operators with keyed state: a user operator whose `process` throws on a row sends
//! the row to the dead letters, naming the operator, its place and the key, and the query
//! goes on (its other rows written); with `--on-error fail` the query stops with the same
//! facts and the row's input line. One that runs away (JavaScript or WebAssembly) stops the
//! query whatever `on_error` says, naming the row; one whose `on_timer` throws stops it
//! naming the key. An operator whose columns its table lacks or has of another type, or a
//! `PARTITION BY` of a column the table lacks, is refused at `FILE:LINE:COL` before anything
//! runs, and so is a module that lacks the operator's exports.

use crate::common;

use common::{anduin, dead_letters, repo, rows_in_order};

const TABLES: &str = "CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = 'orders.csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv');
";

/// Runs `script` (the orders and the output declared after its first lines) in a folder
/// with data/orders.csv and examples/udfs/operators.wat; its exit code and stderr.
fn run(functions: &str, insert: &str, extra: &[&str]) -> (tempfile::TempDir, Option<i32>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        repo().join("data/orders.csv"),
        dir.path().join("orders.csv"),
    )
    .expect("data");
    std::fs::copy(
        repo().join("examples/udfs/operators.wat"),
        dir.path().join("operators.wat"),
    )
    .expect("module");
    std::fs::write(
        dir.path().join("q.sql"),
        format!("{functions}\n{TABLES}{insert}\n"),
    )
    .expect("query");
    let mut args = vec!["run", "q.sql", "--no-api"];
    args.extend_from_slice(extra);
    let out = anduin(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    (dir, out.status.code(), stderr)
}

const THROWS: &str =
    "CREATE FUNCTION f(amount BIGINT) RETURNS TABLE (n BIGINT) LANGUAGE javascript AS $$
export function process(s, amount) {
  if (amount == 90) throw new RangeError('no nineties');
  emit(amount);
  return s;
}
$$;";

const CALL: &str = "INSERT INTO out SELECT * FROM f(input => TABLE orders PARTITION BY customer);";

#[test]
fn a_row_on_which_process_throws_goes_to_the_dead_letters_or_stops_the_query() {
    let (dir, code, stderr) = run(THROWS, CALL, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        rows_in_order(&dir.path().join("out.csv")).len(),
        11,
        "the other rows"
    );
    let rejected = dead_letters(&dir.path().join("out.csv.rejected"));
    let [entry] = rejected.as_slice() else {
        panic!("one rejected row: {rejected:?}")
    };
    assert_eq!(entry["operator"], "insert1_f");
    assert_eq!(entry["at"], "q.sql:11:31");
    assert_eq!(entry["line"], 11);
    assert_eq!(
        entry["reason"],
        "function `f` threw RangeError: no nineties (in process(state, …)) for key customer = alice"
    );
    assert_eq!(entry["row"]["amount"], 90);

    let (_dir, code, stderr) = run(THROWS, CALL, &["--on-error", "fail"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("error: operator \"insert1_f\": user operator `f` failed at q.sql:11:31 on the row read from orders.csv:11: function `f` threw RangeError: no nineties (in process(state, …)) for key customer = alice (the query stops because of `on_error = \"fail\"`"),
        "{stderr}"
    );
}

#[test]
fn a_runaway_operator_in_either_language_stops_the_query_naming_the_row() {
    let js = "CREATE FUNCTION f(amount BIGINT) RETURNS TABLE (n BIGINT) LANGUAGE javascript AS $$
export function process(s, amount) { while (amount == 90) {} return s; }
$$;";
    let (_dir, code, stderr) = run(js, CALL, &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("error: operator \"insert1_f\": user operator `f` at q.sql:7:31 ran out of resources on the row read from orders.csv:11: function `f` ran out of fuel: it did not return within 10000000 instructions (a runaway loop?) for key customer = alice (the query stops whatever `on_error` says"),
        "{stderr}"
    );
    // A WebAssembly operator whose process spins: every_second over a module whose export
    // loops on an amount of 90.
    let spin = repo().join("examples/udfs/operators.wat");
    let text = std::fs::read_to_string(spin).expect("module");
    let looping = text.replace(
        "(func (export \"every_second_process\") (param $s i32) (param $v i64) (result i64)",
        "(func (export \"every_second_process\") (param $s i32) (param $v i64) (result i64)\n    (loop $spin local.get $v i64.const 90 i64.eq br_if $spin)",
    );
    assert_ne!(looping, text, "the export is found");
    let wasm = "CREATE FUNCTION every_second(amount BIGINT) RETURNS TABLE (n BIGINT, total BIGINT) LANGUAGE wasm AS 'spin.wat';";
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        repo().join("data/orders.csv"),
        dir.path().join("orders.csv"),
    )
    .expect("data");
    std::fs::write(dir.path().join("spin.wat"), looping).expect("module");
    std::fs::write(
        dir.path().join("q.sql"),
        format!("{wasm}\n{TABLES}INSERT INTO out SELECT * FROM every_second(input => TABLE orders PARTITION BY customer);\n"),
    )
    .expect("query");
    let out = anduin(dir.path(), &["run", "q.sql", "--no-api"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("user operator `every_second` at q.sql:5:31 ran out of resources on the row read from orders.csv:11: function `every_second` ran out of fuel"),
        "{stderr}"
    );
}

#[test]
fn an_on_timer_that_throws_stops_the_query_naming_the_key() {
    let timer =
        "CREATE FUNCTION f(amount BIGINT) RETURNS TABLE (n BIGINT) LANGUAGE javascript AS $$
export function process(s, amount) { return amount; }
export function timer(s) { return 0; }
export function on_timer(s, watermark) { if (s == 3) throw new Error('erin'); return null; }
$$;";
    let (_dir, code, stderr) = run(timer, CALL, &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("error: operator \"insert1_f\": user operator `f` at q.sql:9:31 failed in on_timer for key customer = erin: function `f` threw Error: erin (in on_timer(state, watermark)). The query stops: a timer is no row that could go to the dead letters"),
        "{stderr}"
    );
}

#[test]
fn an_operator_that_does_not_fit_its_table_or_module_is_refused_at_its_place() {
    let functions = "CREATE FUNCTION f(amount BIGINT, missing DOUBLE) RETURNS TABLE (n BIGINT) LANGUAGE javascript AS $$
export function process(s, amount) { return s; }
$$;
CREATE FUNCTION g(customer BIGINT) RETURNS TABLE (n BIGINT) LANGUAGE javascript AS $$
export function process(s, c) { return s; }
$$;";
    let inserts = "CREATE TABLE out2 WITH (connector = 'file', path = 'out2.csv');
CREATE TABLE out3 WITH (connector = 'file', path = 'out3.csv');
INSERT INTO out SELECT * FROM f(input => TABLE orders PARTITION BY customer);
INSERT INTO out2 SELECT * FROM g(input => TABLE orders PARTITION BY customer);
INSERT INTO out3 SELECT * FROM f(input => TABLE orders PARTITION BY nobody);";
    let (dir, code, stderr) = run(functions, inserts, &[]);
    assert_eq!(code, Some(1), "{stderr}");
    for expected in [
        "q.sql:12:31: operator `f` takes column `missing`: stream `orders` has no column `missing`; it has ts, customer, amount",
        "q.sql:13:32: operator `g` takes column `customer` as BIGINT, but `orders.customer` is Utf8: give it a column of that type (a view can CAST one)",
        "q.sql:14:69: PARTITION BY nobody: stream `orders` has no column `nobody`; it has ts, customer, amount",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
    assert!(!dir.path().join("out.csv").exists(), "nothing ran");

    let wasm = "CREATE FUNCTION h(amount BIGINT) RETURNS TABLE (n BIGINT) LANGUAGE wasm AS 'operators.wat';";
    let (_dir, code, stderr) = run(wasm, "INSERT INTO out SELECT * FROM h(TABLE orders);", &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("q.sql:1:17: operator `h` of module `operators.wat`: it exports no `h_state_size`, which the operator ABI needs: `h_state_size() -> i32`"),
        "{stderr}"
    );
}
