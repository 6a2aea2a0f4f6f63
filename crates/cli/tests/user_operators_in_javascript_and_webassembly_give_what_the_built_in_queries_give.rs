//! Issue 21, operators with keyed state: a user operator called in FROM as Flink's process
//! table functions (`FROM first_row(input => TABLE events PARTITION BY sensor)`), in
//! JavaScript and in WebAssembly (examples/udfs/operators.wat), gives what the equivalent
//! built-in query gives over 60 000 generated events of 1000 sensors: the first event of each
//! sensor by event time, emitted once the watermark passes it (a timer per key), as
//! `ROW_NUMBER() … = 1` keeps it; and every second event of a sensor with its running count
//! and total, as `COUNT(*)` and `SUM` over `ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW`
//! filtered to even counts give them. A `.flow` query naming the module's operator in a
//! `user_operator` block gives the same rows; so do two instances of each operator; and a
//! rewriting rule that puts the module's keep-first in place of a `.flow` query's `top_n`
//! writes the rows the `top_n` writes. `examples/user_operators.sql` gives its documented
//! output.

use crate::common;

use common::udfs::{operators_module, EVENTS, OPERATORS};
use common::{anduin_ok, output_rows};

fn user_query() -> String {
    format!(
        "{OPERATORS}{EVENTS}
CREATE TABLE o1 WITH (connector = 'file', path = 'js_first.csv');
CREATE TABLE o2 WITH (connector = 'file', path = 'wasm_first.csv');
CREATE TABLE o3 WITH (connector = 'file', path = 'js_every.csv');
CREATE TABLE o4 WITH (connector = 'file', path = 'wasm_every.csv');
INSERT INTO o1 SELECT * FROM js_first(input => TABLE events PARTITION BY sensor);
INSERT INTO o2 SELECT sensor, ts, value FROM TABLE(first_row(input => TABLE events PARTITION BY sensor));
INSERT INTO o3 SELECT * FROM js_every(input => TABLE events PARTITION BY sensor);
INSERT INTO o4 SELECT e.sensor, e.n, e.total FROM every_second(TABLE events PARTITION BY (sensor)) AS e;
"
    )
}

const BUILT_IN: &str = "
CREATE TABLE o1 WITH (connector = 'file', path = 'first.csv');
CREATE TABLE o2 WITH (connector = 'file', path = 'every.csv');
INSERT INTO o1
SELECT sensor, CAST(ts AS BIGINT) AS ts, value
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY sensor ORDER BY ts) AS rn FROM events)
WHERE rn = 1;
INSERT INTO o2
SELECT sensor, n, total FROM (
  SELECT sensor,
    COUNT(*) OVER (PARTITION BY sensor ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n,
    SUM(value) OVER (PARTITION BY sensor ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS total
  FROM events)
WHERE n % 2 = 0;
";

/// The `.flow` form of `every_second`: the module loaded by a `udf` block, its operator
/// named by a `user_operator`.
const FLOW: &str = r#"udf path = "operators.wat"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "events", type = "generator" {
  param profile = "events"
  param seed = 13
  param count = 60000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "every", type = "user_operator" {
  input name = "events"
  param function = "every_second"
  param keys = "sensor"
  output name = "every"
}
operator name = "out", type = "writer" {
  input name = "every"
  param path = "flow_every.csv"
}
"#;

#[test]
fn user_operators_in_javascript_and_webassembly_give_what_the_built_in_queries_give() {
    let dir = tempfile::tempdir().expect("tempdir");
    operators_module(dir.path());
    std::fs::write(
        dir.path().join("builtin.sql"),
        format!("{EVENTS}{BUILT_IN}"),
    )
    .expect("query");
    anduin_ok(dir.path(), &["run", "builtin.sql", "--no-api"]);
    let first = output_rows(&dir.path().join("first.csv"));
    let every = output_rows(&dir.path().join("every.csv"));
    assert_eq!(first.len(), 1000, "one row per sensor");
    assert!(every.len() > 25_000, "{} rows", every.len());

    std::fs::write(dir.path().join("q.sql"), user_query()).expect("query");
    for parallelism in ["1", "2"] {
        anduin_ok(
            dir.path(),
            &["run", "q.sql", "--no-api", "--parallelism", parallelism],
        );
        let rows = |f: &str| output_rows(&dir.path().join(f));
        assert!(
            rows("js_first.csv") == first,
            "JavaScript keep-first, parallelism {parallelism}"
        );
        assert!(
            rows("wasm_first.csv") == first,
            "WebAssembly keep-first, parallelism {parallelism}"
        );
        assert!(
            rows("js_every.csv") == every,
            "JavaScript every second, parallelism {parallelism}"
        );
        assert!(
            rows("wasm_every.csv") == every,
            "WebAssembly every second, parallelism {parallelism}"
        );
    }

    std::fs::write(dir.path().join("q.flow"), FLOW).expect("query");
    anduin_ok(dir.path(), &["run", "q.flow", "--no-api"]);
    assert!(
        output_rows(&dir.path().join("flow_every.csv")) == every,
        "the .flow query's user_operator"
    );
}

/// `examples/user_operators.sql`, as docs/sql.md shows it: the first bid of each auction
/// (JavaScript, through its timers) and every second bid of a bidder (WebAssembly).
#[test]
fn the_example_gives_its_documented_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (first, every) = (dir.path().join("first.csv"), dir.path().join("every.csv"));
    anduin_ok(
        &common::repo(),
        &[
            "run",
            "examples/user_operators.sql",
            "--no-api",
            "--var",
            "INPUT=data/bids.csv",
            "--var",
            &format!("OUTPUT={}", first.display()),
            "--var",
            &format!("OUTPUT2={}", every.display()),
        ],
    );
    let read = |p: &std::path::Path| std::fs::read_to_string(p).expect("output");
    assert_eq!(
        read(&first),
        "auction,ts,bidder,price\n1,1700000000500,10,4\n2,1700000001100,11,7\n3,1700000001600,16,1\n"
    );
    assert_eq!(
        read(&every),
        "bidder,n,total\n10,2,9\n17,2,12\n11,2,22\n12,2,13\n"
    );
}

/// A `.flow` keep-first deduplication by the built-in `top_n`, and the rule that exchanges it
/// for the module's `first_row` (the paper's rewriting rules exchanging an operator's
/// implementation, §4.1).
const DEDUP_FLOW: &str = r#"udf path = "operators.wat"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "events", type = "generator" {
  param profile = "events"
  param seed = 13
  param count = 20000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "first", type = "top_n" {
  input name = "events"
  param keys = "sensor"
  param order = "ts"
  param limit = 1
  param time = "ts"
  output name = "first"
}
operator name = "out", type = "writer" {
  input name = "first"
  param path = "${OUT}"
}
"#;

const DEDUP_RULE: &str = r#"# keep-first deduplication by a user's operator instead of the built-in top_n
rule user_dedup:
  w := writer(t := top_n(a := any*)) [param(t, "limit") = "1"]
    => w(user_operator{function = "first_row", keys = "sensor"}(a))
"#;

#[test]
fn a_rewriting_rule_exchanges_a_built_in_deduplication_for_a_user_operator() {
    let dir = tempfile::tempdir().expect("tempdir");
    operators_module(dir.path());
    std::fs::write(dir.path().join("q.flow"), DEDUP_FLOW).expect("query");
    std::fs::write(dir.path().join("my.rules"), DEDUP_RULE).expect("rules");
    anduin_ok(
        dir.path(),
        &["run", "q.flow", "--no-api", "--var", "OUT=builtin.csv"],
    );
    let out = anduin_ok(
        dir.path(),
        &[
            "run",
            "q.flow",
            "--no-api",
            "--var",
            "OUT=user.csv",
            "--rules",
            "my.rules",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[user_operator] 20000 rows in, 1000 rows out")
            && !stderr.contains("[top_n]"),
        "the rule put the user's operator in the top-N's place: {stderr}"
    );
    // The built-in writes ts, sensor, value; the user's operator its key first.
    let builtin: Vec<String> = {
        let mut rows: Vec<String> = output_rows(&dir.path().join("builtin.csv"))
            .iter()
            .map(|r| {
                let c: Vec<&str> = r.split(',').collect();
                format!("{},{},{}", c[1], c[0], c[2])
            })
            .collect();
        rows.sort();
        rows
    };
    assert_eq!(builtin.len(), 1000);
    assert!(output_rows(&dir.path().join("user.csv")) == builtin);
}
