//! Issue 21, aggregates: a JavaScript aggregate that throws or runs away stops the query with
//! an error naming the aggregate's column, its place in the query, the window and the
//! function; one that cannot serve where it is used (no `merge` for a sliding window, an
//! argument of another type, a body without `accumulate`) is refused before anything runs,
//! at its place.

use crate::common;

use std::path::Path;

use common::{anduin, repo};

fn run(dir: &Path, aggregate: &str, window: &str) -> std::process::Output {
    std::fs::write(
        dir.join("q.sql"),
        format!(
            "{aggregate}
CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = '${{INPUT}}', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = '${{OUTPUT}}');
INSERT INTO out
SELECT window_start, customer, f(amount) AS total
FROM TABLE({window})
GROUP BY window_start, window_end, customer;"
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

const TUMBLE: &str = "TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' MINUTES)";

#[test]
fn a_throw_stops_the_query_naming_the_aggregate_its_column_and_its_window() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        dir.path(),
        "CREATE AGGREGATE f(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$
export function create_state() { return 0; }
export function accumulate(s, x) { if (x == 7) throw new RangeError('no sevens'); return s + x; }
$$;",
        TUMBLE,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("operator \"insert1_window\": aggregate `total` `f(amount)` at q.sql:9:32 failed in the window starting at 2023-11-14T22:10:00: function `f` threw RangeError: no sevens (in accumulate(state, …)). The query stops"),
        "{stderr}"
    );
}

#[test]
fn a_runaway_stops_the_query_naming_the_aggregate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        dir.path(),
        "CREATE AGGREGATE f(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$
export function create_state() { return 0; }
export function accumulate(s, x) { while (x == 7) {} return s + x; }
$$;",
        TUMBLE,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("aggregate `total` `f(amount)` at q.sql:9:32 failed in the window starting at 2023-11-14T22:10:00: function `f` ran out of fuel: it did not return within 10000000 instructions (a runaway loop?)"),
        "{stderr}"
    );
}

#[test]
fn a_state_json_cannot_hold_or_a_finish_of_another_type_stops_the_query() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        dir.path(),
        "CREATE AGGREGATE f(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$
export function create_state() { return { seen: new Set() }; }
export function accumulate(s, x) { s.seen.add(x); return s; }
$$;",
        TUMBLE,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "aggregate `f`: a state it returned holds a Set: a state must be plain JSON data"
        ),
        "{stderr}"
    );
    let out = run(
        dir.path(),
        "CREATE AGGREGATE f(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$
export function create_state() { return 0; }
export function accumulate(s, x) { return s + x; }
export function finish(s) { return 'total ' + s; }
$$;",
        TUMBLE,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("function `f`: it returned the string \"total "),
        "{stderr}"
    );
}

#[test]
fn what_cannot_serve_where_it_is_used_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sum = "CREATE AGGREGATE f(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$
export function create_state() { return 0; }
export function accumulate(s, x) { return s + x; }
$$;";
    // A sliding window combines its panes' states.
    let hop = run(
        dir.path(),
        sum,
        "HOP(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTES, INTERVAL '10' MINUTES)",
    );
    let stderr = String::from_utf8_lossy(&hop.stderr);
    assert_eq!(hop.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("q.sql:9:32: aggregate `f` has no `merge`, which a sliding window (it combines the states of its panes) needs: give it one (JavaScript: `export function merge(state1, state2)`; WebAssembly: `f_merge`), or use a tumbling window"),
        "{stderr}"
    );
    assert!(!dir.path().join("out.csv").exists());
    // Its declared argument type, at plan time.
    std::fs::write(
        dir.path().join("q.sql"),
        format!(
            "{sum}
CREATE TABLE orders (ts TIMESTAMP, customer STRING, amount BIGINT)
WITH (connector = 'file', path = 'orders.csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv');
INSERT INTO out
SELECT window_start, f(customer) AS total
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' MINUTES))
GROUP BY window_start, window_end;"
        ),
    )
    .expect("query");
    let out = anduin(dir.path(), &["check", "q.sql"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("q.sql:9:22: aggregate `f` takes BIGINT as argument 1, but is given Utf8: CAST it (e.g. CAST(… AS BIGINT))"),
        "{stderr}"
    );
    // A body without `accumulate`, at the body.
    let out = run(
        dir.path(),
        "CREATE AGGREGATE f(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$
export function create_state() { return 0; }
$$;",
        TUMBLE,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("q.sql:1:68: aggregate `f`: its body exports no `accumulate`, which adds a row to a state: write `export function accumulate(state, …) { … }`"),
        "{stderr}"
    );
}
