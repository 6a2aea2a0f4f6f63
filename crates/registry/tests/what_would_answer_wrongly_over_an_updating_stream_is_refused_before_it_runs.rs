//! Over an updating stream (a `GROUP BY` without a window), a row taken back is computed again
//! when its retraction comes, and a writer in upsert mode keeps one row per primary key. What
//! would make either silently wrong is refused when the query is checked, naming the cause:
//! a volatile function (`random()`) or the change kind read in a filter or a map; a change
//! to such an operator's params while it runs; a primary key without the grouping columns, or
//! over columns no longer known to identify the rows; an output column named `op` beside the
//! change column of a changelog; and the reserved name `__op` anywhere a user names a column.

use crate::common;

use anduin_graph::{check_change, ChangeRejected};
use anduin_registry::BuiltinCatalog;
use common::{check_errors, readings_then};

/// A query: a generator, `GROUP BY sensor` (an updating stream `totals`), then `rest`.
fn query(rest: &str) -> String {
    readings_then(&format!(
        r#"operator name = "per_sensor", type = "aggregate" {{
  input name = "readings"
  param keys = "sensor"
  param aggregates = "SUM(value) AS total, COUNT(*) AS n"
  output name = "totals"
}}
{rest}"#
    ))
}

/// Operator `name` of type `kind` over `input` with `params`, its output discarded.
fn dropped(name: &str, kind: &str, input: &str, params: &str) -> String {
    format!(
        r#"operator name = "{name}", type = "{kind}" {{
  input name = "{input}"
  {params}
  output name = "{name}_out"
}}
operator name = "drop", type = "discard" {{ input name = "{name}_out" }}"#
    )
}

/// A writer of `input` with `params`.
fn writer(input: &str, params: &str) -> String {
    format!(
        r#"operator name = "out", type = "writer" {{
  input name = "{input}"
  param path = "/dev/null"
  {params}
}}"#
    )
}

/// The errors `anduin check` gives for the query, rendered; empty when it passes.
fn errors(rest: &str) -> String {
    check_errors(&query(rest))
}

fn refused(rest: &str, expected: &str) {
    let e = errors(rest);
    assert!(e.contains(expected), "expected {expected:?} in:\n{e}");
}

#[test]
fn a_filter_and_a_map_over_the_updating_stream_that_are_safe_pass() {
    let rest = format!(
        r#"operator name = "big", type = "filter" {{
  input name = "totals"
  param condition = "total > 10"
  output name = "bigs"
}}
operator name = "named", type = "map" {{
  input name = "bigs"
  param columns = "sensor AS id, total * 2 AS twice"
  output name = "named_totals"
}}
{}"#,
        writer(
            "named_totals",
            r#"param mode = "upsert"
  param primary_key = "id""#
        )
    );
    assert_eq!(errors(&rest), "");
}

#[test]
fn a_volatile_function_over_the_updating_stream_is_refused() {
    refused(
        &dropped(
            "noisy",
            "filter",
            "totals",
            "param condition = \"random() < 0.5\"",
        ),
        "`random()` gives another value at each call",
    );
    refused(
        &dropped(
            "noisy",
            "map",
            "totals",
            "param columns = \"sensor, total * random() AS x\"",
        ),
        "`random()` gives another value at each call",
    );
}

#[test]
fn the_change_kind_cannot_be_read_or_named_as_a_column() {
    refused(
        &dropped(
            "kinds",
            "filter",
            "totals",
            "param condition = \"__op = 0\"",
        ),
        "cannot be read as a column",
    );
    refused(
        &dropped(
            "named",
            "map",
            "readings",
            "param columns = \"ts, value AS __op\"",
        ),
        "which a column cannot take",
    );
    // A source whose declared rows have a column of that name.
    let e = errors(
        r#"type name = "Odd" {
  column name = "ts", type = "timestamp"
  column name = "__op", type = "int"
  column name = "value", type = "int"
}
operator name = "odd", type = "generator" {
  param count = 1
  output name = "odds", type = "Odd"
}
operator name = "drop", type = "discard" { input name = "odds" }"#,
    );
    assert!(e.contains("a column is named `__op`"), "{e}");
}

#[test]
fn an_upsert_key_that_does_not_identify_the_rows_is_refused() {
    refused(
        &writer(
            "totals",
            "param mode = \"upsert\"\n  param primary_key = \"total\"",
        ),
        "it lacks `sensor`",
    );
    refused(
        &format!(
            r#"operator name = "computed", type = "map" {{
  input name = "totals"
  param columns = "sensor % 2 AS parity, total"
  output name = "parities"
}}
{}"#,
            writer(
                "parities",
                "param mode = \"upsert\"\n  param primary_key = \"parity\""
            )
        ),
        "no column of the input is known to identify its rows",
    );
    assert_eq!(
        errors(&writer(
            "totals",
            "param mode = \"upsert\"\n  param primary_key = \"sensor, total\""
        )),
        ""
    );
}

#[test]
fn a_column_named_op_beside_the_change_column_is_refused() {
    refused(
        &format!(
            r#"operator name = "renamed", type = "map" {{
  input name = "totals"
  param columns = "sensor, n AS op"
  output name = "ops"
}}
{}"#,
            writer("ops", "param mode = \"changelog\"")
        ),
        "the input has a column named `op`",
    );
}

#[test]
fn a_change_to_an_operator_over_the_updating_stream_is_refused_while_it_runs() {
    let rest = format!(
        r#"operator name = "big", type = "filter" {{
  input name = "totals"
  param condition = "total > 10"
  output name = "bigs"
}}
{}"#,
        writer("bigs", "param mode = \"changelog\"")
    );
    let spec = anduin_spec::parse_flow(&query(&rest)).expect("parses");
    let (graph, _) = anduin_graph::check(&spec, &BuiltinCatalog).expect("checks");
    match check_change(&graph, &BuiltinCatalog, "big", "condition", "total > 20") {
        Err(ChangeRejected::Invalid(m)) => {
            assert!(m.contains("reads the updating stream \"totals\""), "{m}")
        }
        other => panic!("{other:?}"),
    }
    // The writer's path is not computed into rows: it may change.
    check_change(&graph, &BuiltinCatalog, "out", "path", "/dev/null").expect("a new path");
}

#[test]
fn a_volatile_having_or_aggregate_argument_and_a_read_of_the_change_kind_are_refused() {
    // HAVING is evaluated again at each change of a group, even over an append-only input.
    refused(
        &dropped("some", "aggregate", "readings", "param keys = \"sensor\"\n  param aggregates = \"COUNT(*) AS c\"\n  param having = \"random() < 0.5\""),
        "not supported in HAVING",
    );
    refused(
        &dropped(
            "again",
            "aggregate",
            "totals",
            "param aggregates = \"SUM(total * random()) AS s\"",
        ),
        "`random()` gives another value at each call",
    );
    refused(
        &dropped(
            "again",
            "aggregate",
            "totals",
            "param aggregates = \"COUNT(*) FILTER (WHERE __op = 1) AS s\"",
        ),
        "cannot be read as a column",
    );
}

#[test]
fn a_control_input_of_an_operator_over_the_updating_stream_is_refused() {
    refused(
        r#"type name = "Change" {
  column name = "operator", type = "string"
  column name = "param", type = "string"
  column name = "value", type = "string"
}
operator name = "changes", type = "reader" {
  param path = "/dev/null"
  output name = "change_rows", type = "Change"
}
operator name = "big", type = "filter" {
  input name = "totals"
  control name = "change_rows"
  param condition = "total > 10"
  output name = "bigs"
}
operator name = "drop", type = "discard" { input name = "bigs" }"#,
        "a control input cannot change its params while it runs",
    );
}
