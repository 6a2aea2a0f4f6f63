//! Issue 21: user aggregates in a GROUP BY without a window (the updating `aggregate` of issue
//! 17). JavaScript and WebAssembly aggregates with a `retract` (`js_sum`, `js_max`,
//! `int_avg`) per sensor over the generated events (an append-only input), and per bucket of
//! sensors over that GROUP BY's own changes (an updating input: each `-U` taken out of its
//! group with the aggregate's `retract`, each `+U` added), written as changelogs one row per
//! batch, fold to the tables the same query with `SUM`, `MAX` and `AVG` folds to. An
//! aggregate without a `retract` is refused over the updating input, naming it and its place,
//! and accepted over the append-only one.

use crate::common;

use std::path::Path;

use common::udfs::{int_avg_module, RETRACTING_AGGREGATES};
use common::{anduin, anduin_ok, fold_changes, rows_in_order};

/// Per sensor (append-only input) and per bucket of sensors (updating input), with the
/// aggregates `sum`, `max` and `avg`.
fn query(sum: &str, max: &str, avg: &str) -> String {
    format!(
        r#"{RETRACTING_AGGREGATES}
CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'generator', profile = 'events', seed = '9', count = '3000', event_time = 'ts');
CREATE TABLE per_sensor WITH (connector = 'file', path = '${{OUT1}}', mode = 'changelog');
CREATE TABLE per_bucket WITH (connector = 'file', path = '${{OUT2}}', mode = 'changelog');
INSERT INTO per_sensor
SELECT sensor, {sum}(value) AS total, {max}(value) AS hi, {avg}(value) AS mean, COUNT(*) AS n
FROM events
GROUP BY sensor;
INSERT INTO per_bucket
SELECT hi % 4 AS bucket, {sum}(n) AS total, {max}(n) AS most, {avg}(n) AS mean, COUNT(*) AS sensors
FROM (SELECT sensor, COUNT(*) AS n, MAX(value) AS hi FROM events GROUP BY sensor) s
GROUP BY hi % 4;
"#
    )
}

/// Runs `text` as `q.sql` in `dir`, one row per batch; the tables its two changelogs fold to.
fn folded(dir: &Path, text: &str) -> [std::collections::BTreeMap<String, String>; 2] {
    std::fs::write(dir.join("q.sql"), text).expect("query");
    let _ = std::fs::remove_file(dir.join("out1"));
    let _ = std::fs::remove_file(dir.join("out2"));
    anduin_ok(
        dir,
        &[
            "run",
            "q.sql",
            "--no-api",
            "--var",
            "OUT1=out1",
            "--var",
            "OUT2=out2",
            "--batch-size",
            "7",
        ],
    );
    ["out1", "out2"].map(|f| {
        let rows = rows_in_order(&dir.join(f));
        assert!(
            rows.iter().any(|r| r.starts_with("-U,")),
            "{f} updates its groups"
        );
        fold_changes(rows.iter().map(String::as_str), false)
    })
}

#[test]
fn user_aggregates_fold_to_the_tables_of_sum_max_and_avg_over_append_only_and_updating_inputs() {
    let dir = tempfile::tempdir().expect("tempdir");
    int_avg_module(dir.path());
    let expected = folded(dir.path(), &query("SUM", "MAX", "AVG"));
    assert!(
        expected[0].len() > 3 && expected[1].len() > 1,
        "{expected:?}"
    );
    let got = folded(dir.path(), &query("js_sum", "js_max", "int_avg"));
    assert_eq!(got[0], expected[0], "per sensor (append-only input)");
    assert_eq!(got[1], expected[1], "per bucket (updating input)");
}

/// `js_count` has no `retract`.
const NO_RETRACT: &str = r#"CREATE AGGREGATE js_count(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$
export function create_state() { return 0; }
export function accumulate(s, x) { return s + 1; }
$$;
CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
WITH (connector = 'generator', profile = 'events', seed = '9', count = '300', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}', mode = 'changelog');
INSERT INTO out
"#;

#[test]
fn an_aggregate_without_retract_is_refused_over_an_updating_input_naming_it_and_its_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let over_updating = format!(
        "{NO_RETRACT}SELECT n % 2 AS parity, js_count(n) AS c\nFROM (SELECT sensor, COUNT(*) AS n FROM events GROUP BY sensor) s\nGROUP BY n % 2;\n"
    );
    std::fs::write(dir.path().join("q.sql"), &over_updating).expect("query");
    let out = anduin(
        dir.path(),
        &["run", "q.sql", "--no-api", "--var", "OUTPUT=out"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // Where `js_count(n)` is written.
    let line = over_updating
        .lines()
        .position(|l| l.contains("js_count(n)"))
        .expect("the call")
        + 1;
    let col = over_updating
        .lines()
        .nth(line - 1)
        .and_then(|l| l.find("js_count(n)"))
        .expect("the call")
        + 1;
    assert!(
        stderr.contains(&format!("q.sql:{line}:{col}:"))
            && stderr.contains("aggregate `js_count` has no `retract`")
            && stderr.contains("its input is updating"),
        "{stderr}"
    );
    assert!(!dir.path().join("out").exists(), "nothing ran");

    // Over the events themselves (append-only) it runs: one count per sensor.
    let append_only =
        format!("{NO_RETRACT}SELECT sensor, js_count(value) AS c, COUNT(*) AS n FROM events GROUP BY sensor;\n");
    std::fs::write(dir.path().join("q.sql"), append_only).expect("query");
    anduin_ok(
        dir.path(),
        &["run", "q.sql", "--no-api", "--var", "OUTPUT=out"],
    );
    let table = fold_changes(
        rows_in_order(&dir.path().join("out"))
            .iter()
            .map(String::as_str),
        false,
    );
    assert!(!table.is_empty());
    for row in table.values() {
        let cols: Vec<&str> = row.split(',').collect();
        assert_eq!(cols[1], cols[2], "js_count is COUNT: {row}");
    }
}
