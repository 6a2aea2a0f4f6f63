//! Issue 21: `${NAME}` in the path of a WebAssembly module (`CREATE FUNCTION … LANGUAGE wasm
//! AS '${DIR}/shout.wasm'`, a `.flow` `udf path = "${DIR}/add_one.wasm"` block) is replaced
//! by its `--var` value as in every other string of the query, for `anduin run` and for
//! `anduin submit` (which reads the module from there and sends it); a variable that is not
//! set is refused at its place, as elsewhere: `q.sql:1:…: variable `DIR` is not set`.

use crate::common;

use common::cluster::{assert_submitted_output, LocalCluster};
use common::udfs::{example_modules, orders_flow, ORDERS};
use common::{anduin, anduin_ok, output_rows, repo};

fn input() -> String {
    format!("INPUT={}", repo().join("data/orders.csv").display())
}

/// A SQL query calling `shout` from `${DIR}/shout.wasm`.
fn sql() -> String {
    format!(
        "CREATE FUNCTION shout(s VARCHAR) RETURNS VARCHAR LANGUAGE wasm AS '${{DIR}}/shout.wasm';
{ORDERS}INSERT INTO out SELECT amount, shout(customer) AS who FROM orders WHERE amount > 13;"
    )
}

/// Where `${DIR}` starts in the first line of `text` (`1:COL`), less `back` columns: a SQL
/// module path's errors point at its quote, one column before.
fn dir_at(text: &str, back: usize) -> String {
    let col = text
        .lines()
        .next()
        .and_then(|l| l.find("${DIR}"))
        .expect("a variable");
    format!("1:{}", col + 1 - back)
}

#[test]
fn a_module_path_s_variable_is_its_var_value_in_sql_and_in_a_flow_udf_block() {
    let work = tempfile::tempdir().expect("tempdir");
    example_modules(work.path());
    let input = input();
    let text = sql();
    std::fs::write(work.path().join("q.sql"), &text).expect("query");
    let run = |file: &str, vars: &[&str]| {
        anduin(
            work.path(),
            &[&["run", file, "--no-api", "--var", &input][..], vars].concat(),
        )
    };
    let out = run("q.sql", &["--var", "OUTPUT=sql.csv", "--var", "DIR=udfs"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = output_rows(&work.path().join("sql.csv"));
    assert!(
        !rows.is_empty() && rows.iter().all(|r| r.ends_with('!')),
        "shout ran: {rows:?}"
    );

    // Not set: refused at the variable, as in any other string.
    let out = run("q.sql", &["--var", "OUTPUT=unset.csv"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "q.sql:{}: variable `DIR` is not set: pass `--var DIR=VALUE`",
            dir_at(&text, 1)
        )),
        "{stderr}"
    );

    // A `.flow` file's `udf` block.
    let flow = orders_flow(Some("${DIR}/add_one.wasm"));
    std::fs::write(work.path().join("q.flow"), &flow).expect("query");
    let out = run("q.flow", &["--var", "OUTPUT=flow.csv", "--var", "DIR=udfs"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        output_rows(&work.path().join("flow.csv")),
        ["41,20.0,bob", "91,45.0,alice"]
    );
    let out = run("q.flow", &["--var", "OUTPUT=unset.csv"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "q.flow:{}: variable `DIR` is not set",
            dir_at(&flow, 0)
        )),
        "{stderr}"
    );
}

#[test]
fn a_submitted_query_s_module_path_variable_is_substituted_and_its_module_sent() {
    let work = tempfile::tempdir().expect("tempdir");
    example_modules(work.path());
    let input = input();
    let text = sql();
    std::fs::write(work.path().join("q.sql"), &text).expect("query");
    anduin_ok(
        work.path(),
        &[
            "run",
            "q.sql",
            "--no-api",
            "--var",
            &input,
            "--var",
            "OUTPUT=embedded.csv",
            "--var",
            "DIR=udfs",
        ],
    );
    let expected = output_rows(&work.path().join("embedded.csv"));
    assert!(!expected.is_empty());

    let cluster = LocalCluster::start(1, 8);
    // Not set: refused by the client at the variable, before anything is sent.
    let out = cluster
        .submit(
            work.path(),
            "q.sql",
            &["--var", &input, "--var", "OUTPUT=out"],
        )
        .wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains(&format!(
                "q.sql:{}: variable `DIR` is not set: pass `--var DIR=VALUE`",
                dir_at(&text, 1)
            )),
        "{stderr}"
    );
    let submit = cluster.submit(
        work.path(),
        "q.sql",
        &["--var", &input, "--var", "OUTPUT=out", "--var=DIR=udfs"],
    );
    assert_submitted_output(&cluster, submit, &work.path().join("out"), &expected);
}
