//! Issue 21, first slice: a WebAssembly scalar function declared with `CREATE FUNCTION`
//! (or loaded whole with `--udf`) is called like a built-in one in a WHERE, a select list
//! and a window aggregate's argument, over data/orders.csv.

use crate::common;

use std::path::Path;

use common::udfs::{example_modules, orders_flow, ORDERS};
use common::{anduin_ok, repo};

fn run(dir: &Path, query: &str, more: &[&str]) -> String {
    std::fs::write(dir.join("q.sql"), query).expect("query");
    let input = format!("INPUT={}", repo().join("data/orders.csv").display());
    let mut args = vec!["run", "q.sql", "--var", &input, "--var", "OUTPUT=out.csv"];
    args.extend_from_slice(more);
    anduin_ok(dir, &args);
    std::fs::read_to_string(dir.join("out.csv")).expect("output")
}

#[test]
fn a_bigint_and_a_string_function_filter_and_compute_columns() {
    let dir = tempfile::tempdir().expect("tempdir");
    example_modules(dir.path());
    let out = run(
        dir.path(),
        &format!(
            "CREATE FUNCTION add_one(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'udfs/add_one.wasm';
CREATE FUNCTION shout(s VARCHAR) RETURNS VARCHAR LANGUAGE wasm AS 'udfs/shout.wasm';
{ORDERS}INSERT INTO out
SELECT shout(customer) AS who, add_one(amount) AS next
FROM orders
WHERE add_one(amount) > 13;"
        ),
        &[],
    );
    assert_eq!(
        out,
        "who,next\nALICE!,31\nBOB!,41\nALICE!,31\nCAROL!,19\nALICE!,91\nCAROL!,19\n"
    );
}

#[test]
fn a_window_aggregates_what_a_function_computes() {
    let dir = tempfile::tempdir().expect("tempdir");
    example_modules(dir.path());
    let out = run(
        dir.path(),
        &format!(
            "CREATE FUNCTION add_one(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'udfs/add_one.wasm';
{ORDERS}INSERT INTO out
SELECT window_start, SUM(add_one(amount)) AS total, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY window_start, window_end;"
        ),
        &[],
    );
    // 31+13+6+41+31+8+19+13+91 (the NULL amount adds nothing) and 4+19.
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(rows.len(), 3, "{out}");
    assert!(rows[1].ends_with(",253,10"), "{out}");
    assert!(rows[2].ends_with(",23,2"), "{out}");
}

#[test]
fn udf_loads_the_functions_a_module_declares_for_a_flow_query_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    example_modules(dir.path());
    std::fs::write(dir.path().join("q.flow"), orders_flow(None)).expect("query");
    let input = format!("INPUT={}", repo().join("data/orders.csv").display());
    anduin_ok(
        dir.path(),
        &[
            "run",
            "q.flow",
            "--udf",
            "udfs/add_one.wasm",
            "--var",
            &input,
            "--var",
            "OUTPUT=out.csv",
        ],
    );
    let out = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
    assert_eq!(out, "next,h,customer\n41,20.0,bob\n91,45.0,alice\n");
}

#[test]
fn a_udf_block_loads_a_module_for_a_flow_query_as_udf_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    example_modules(dir.path());
    // Beside the query file, in a folder of its own: the path is the query's folder's.
    std::fs::create_dir_all(dir.path().join("q")).expect("folder");
    std::fs::rename(dir.path().join("udfs"), dir.path().join("q/udfs")).expect("moved");
    // Named twice (`./` is the folder): loaded once.
    let query = orders_flow(Some("udfs/add_one.wasm")) + "udf path = \"./udfs/add_one.wasm\"\n";
    std::fs::write(dir.path().join("q/q.flow"), query).expect("query");
    let input = format!("INPUT={}", repo().join("data/orders.csv").display());
    anduin_ok(
        dir.path(),
        &[
            "run",
            "q/q.flow",
            "--var",
            &input,
            "--var",
            "OUTPUT=out.csv",
        ],
    );
    let out = std::fs::read_to_string(dir.path().join("out.csv")).expect("output");
    assert_eq!(out, "next,h,customer\n41,20.0,bob\n91,45.0,alice\n");
    // A module that is not there is an error at its block.
    std::fs::write(
        dir.path().join("q/q.flow"),
        orders_flow(Some("udfs/missing.wasm")),
    )
    .expect("query");
    let out = common::anduin(dir.path(), &["check", "q/q.flow"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("q/q.flow:1:12:")
            && stderr.contains("missing.wasm"),
        "{stderr}"
    );
}

#[test]
fn the_example_runs_its_text_format_modules_as_documented() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("udf.csv");
    anduin_ok(
        &repo(),
        &[
            "run",
            "examples/udf.sql",
            "--no-api",
            "--var",
            "INPUT=data/orders.csv",
            "--var",
            &format!("OUTPUT={}", out.display()),
        ],
    );
    assert_eq!(
        std::fs::read_to_string(out).expect("output"),
        "ts,who,next\n1700000000000,ALICE!,31\n1700000000400,BOB!,41\n1700000000500,ALICE!,31\n1700000000700,CAROL!,19\n1700000000900,ALICE!,91\n1700000001100,CAROL!,19\n"
    );
}

#[test]
fn a_pattern_calls_a_function_in_define_and_measures() {
    let dir = tempfile::tempdir().expect("tempdir");
    example_modules(dir.path());
    let out = run(
        dir.path(),
        &format!(
            "CREATE FUNCTION add_one(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'udfs/add_one.wasm';
{ORDERS}INSERT INTO out
SELECT * FROM orders
MATCH_RECOGNIZE (
  PARTITION BY customer
  ORDER BY ts
  MEASURES A.amount AS first_amount, add_one(B.amount) AS next_plus_one
  ONE ROW PER MATCH
  PATTERN (A B)
  DEFINE B AS add_one(B.amount) > A.amount
) AS m;"
        ),
        &[],
    );
    let mut rows: Vec<&str> = out.lines().skip(1).collect();
    rows.sort_unstable();
    // alice 30, 5, 30, 90: (5, 30); bob 12, 40, 12: (12, 40); carol NULL, 18, 18: (18, 18).
    assert_eq!(rows, ["alice,5,31", "bob,12,41", "carol,18,19"], "{out}");
}
