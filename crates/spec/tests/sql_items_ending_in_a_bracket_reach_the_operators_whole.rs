//! Select items, WHERE conditions, GROUP BY keys, window table function arguments and join
//! conditions that end in a closing bracket (or start with `NOT`, or end in `IS NULL`, which
//! sqlparser 0.62's spans also leave out) reach the operators' params whole, as written, with
//! each character at its line and column of the script.

use anduin_spec::{parse_sql, Spec, Text, Value};
use anduin_types::Pos;
use sqlparser::ast::{visit_expressions, Expr};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use std::ops::ControlFlow;

const TABLES: &str = "CREATE TABLE t (ts TIMESTAMP, x BIGINT, y BIGINT)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts', watermark = '1 second');
CREATE TABLE u (ts TIMESTAMP, x BIGINT, z BIGINT)
WITH (connector = 'file', path = 'in2.csv', format = 'csv', event_time = 'ts', watermark = '1 second');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv', format = 'csv');
";

/// The script's line of the first line of the INSERT.
const FIRST_LINE: u32 = 6;

fn lowered(sql: &str) -> Spec {
    parse_sql(&format!("{TABLES}{sql}")).unwrap_or_else(|d| panic!("{sql}\n{d}"))
}

/// The param `name` of the operator of kind `kind`.
fn param(spec: &Spec, kind: &str, name: &str) -> Text {
    let op = spec
        .operators
        .iter()
        .find(|o| o.kind.as_str() == kind)
        .unwrap_or_else(|| panic!("no {kind} operator"));
    op.params
        .iter()
        .find(|p| p.name.as_str() == name)
        .map(|p| match &p.value {
            Value::String(t) => t.clone(),
            other => panic!("param {name} of {kind} is not a string: {other:?}"),
        })
        .unwrap_or_else(|| panic!("{kind} has no param {name}"))
}

fn text(spec: &Spec, kind: &str, name: &str) -> String {
    param(spec, kind, name).as_str().to_string()
}

/// Parses `text` as a select list, as the map and window operators do: a text cut short
/// (`ABS(x`) is a syntax error here.
fn select_list(text: &str) -> Vec<sqlparser::ast::SelectItem> {
    Parser::new(&GenericDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_comma_separated(Parser::parse_select_item))
        .unwrap_or_else(|e| panic!("`{text}` does not parse: {e}"))
}

#[test]
fn select_items_and_the_where_condition_keep_their_closing_brackets() {
    let spec =
        lowered("INSERT INTO o SELECT ABS(x), (x + 1), CAST(y AS DOUBLE) FROM t WHERE (x > 1);");
    let columns = text(&spec, "map", "columns");
    assert_eq!(columns, "ABS(x), (x + 1), CAST(y AS DOUBLE)");
    assert_eq!(select_list(&columns).len(), 3);
    assert_eq!(text(&spec, "filter", "condition"), "(x > 1)");
}

#[test]
fn aliases_comments_and_several_lines_are_kept_as_written() {
    let spec = lowered(
        "INSERT INTO o
SELECT ABS(x) AS a, -- the size
       [1, 2][1],
       x IS DISTINCT FROM y /* a comment */
FROM t
WHERE x IN (1,
            2)
;",
    );
    assert_eq!(
        text(&spec, "map", "columns"),
        "ABS(x) AS a, [1, 2][1], x IS DISTINCT FROM y"
    );
    assert_eq!(
        text(&spec, "filter", "condition"),
        "x IN (1,\n            2)"
    );
}

#[test]
fn a_leading_not_and_a_trailing_is_null_stay_in_the_text() {
    // sqlparser's spans of `NOT c` and `x IS NULL` are those of `c` and `x`.
    let spec = lowered("INSERT INTO o SELECT -x, x IS NULL FROM t WHERE NOT (ABS(x) > ABS(y))");
    assert_eq!(text(&spec, "map", "columns"), "-x, x IS NULL");
    assert_eq!(text(&spec, "filter", "condition"), "NOT (ABS(x) > ABS(y))");
    let spec = lowered("INSERT INTO o SELECT x FROM t WHERE y IS NULL");
    assert_eq!(text(&spec, "filter", "condition"), "y IS NULL");
}

#[test]
fn an_unaliased_function_in_a_windowed_select_is_a_whole_aggregate() {
    let spec = lowered(
        "INSERT INTO o
SELECT window_start, x, MAX(ABS(y)), COUNT(*), SUM(y) AS s
FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR((ts)), (INTERVAL '1' SECOND)))
WHERE (y > 0)
GROUP BY window_start, window_end, (x)",
    );
    let aggregates = text(&spec, "window", "aggregates");
    assert_eq!(aggregates, "MAX(ABS(y)), COUNT(*), SUM(y) AS s");
    assert_eq!(select_list(&aggregates).len(), 3);
    assert_eq!(text(&spec, "window", "keys"), "x");
    assert_eq!(text(&spec, "window", "time"), "ts");
    assert_eq!(text(&spec, "window", "size"), "1000ms");
    // The map names the window's unaliased aggregates as the window operator does.
    assert_eq!(
        text(&spec, "map", "columns"),
        r#"window_start, x, "MAX(ABS(y))", "COUNT(*)", "s""#
    );
    assert_eq!(text(&spec, "filter", "condition"), "(y > 0)");
}

#[test]
fn hop_arguments_in_brackets_are_intervals() {
    let spec = lowered(
        "INSERT INTO o SELECT window_start, COUNT(*) AS n
FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND, (INTERVAL '2' SECOND)))
GROUP BY window_start, window_end",
    );
    assert_eq!(text(&spec, "window", "slide"), "1000ms");
    assert_eq!(text(&spec, "window", "size"), "2000ms");
}

#[test]
fn join_conditions_ending_in_a_bracket_are_read_whole() {
    let spec = lowered(
        "INSERT INTO o SELECT t.x, ABS(u.z) FROM t JOIN u
ON (t.x = u.x) AND (t.ts BETWEEN u.ts - (INTERVAL '1' SECOND) AND u.ts + INTERVAL '2' SECOND)
WHERE (u.z > ABS(t.y))",
    );
    assert_eq!(text(&spec, "join", "on"), r#""t"."x" = "u"."x""#);
    // The bounds on u.ts - t.ts.
    assert_eq!(text(&spec, "join", "lower"), "-2000ms");
    assert_eq!(text(&spec, "join", "upper"), "1000ms");
    assert_eq!(text(&spec, "filter", "condition"), r#""z" > ABS("y")"#);
    assert_eq!(text(&spec, "map", "columns"), r#""x", ABS("z")"#);
}

#[test]
fn the_select_over_a_match_keeps_its_brackets() {
    let spec = lowered(
        "INSERT INTO o SELECT x, (n + 1) AS m1, ABS(m.n) FROM t
MATCH_RECOGNIZE (PARTITION BY x ORDER BY ts MEASURES COUNT(B.y) AS n
  PATTERN (A B+) DEFINE B AS B.y > A.y) AS m
WHERE (m.n > ABS(x))",
    );
    assert_eq!(text(&spec, "map", "columns"), "x, (n + 1) AS m1, ABS(n)");
    assert_eq!(text(&spec, "filter", "condition"), "(n > ABS(x))");
}

/// Where a checker of the param's text would report an error at `ident` (as the operators
/// do: the line and column in the text, mapped back with `Text::pos_at_line_col`).
fn error_at(text: &Text, ident: &str) -> Pos {
    let items = select_list(text.as_str());
    let mut found = None;
    let _ = visit_expressions(&items, |e| {
        if let Expr::Identifier(i) = e {
            if i.value == ident {
                found = Some(i.span.start);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    let at = found.unwrap_or_else(|| panic!("no `{ident}` in `{}`", text.as_str()));
    text.pos_at_line_col(at.line, at.column)
}

#[test]
fn an_error_inside_an_item_points_at_its_place_in_the_script() {
    let spec = lowered(
        "INSERT INTO o
SELECT ABS(x),
       CAST(nope AS DOUBLE)
FROM t",
    );
    let columns = param(&spec, "map", "columns");
    // One line in the param, two in the script.
    assert_eq!(columns.as_str(), "ABS(x), CAST(nope AS DOUBLE)");
    assert_eq!(error_at(&columns, "nope"), Pos::new(FIRST_LINE + 2, 13));
    assert_eq!(
        columns.pos_at_byte(columns.as_str().len() - 1),
        Pos::new(FIRST_LINE + 2, 27)
    );

    let spec = lowered(
        "INSERT INTO o
SELECT window_start,
       MAX(ABS(nope))
FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY window_start, window_end",
    );
    let aggregates = param(&spec, "window", "aggregates");
    assert_eq!(error_at(&aggregates, "nope"), Pos::new(FIRST_LINE + 2, 16));
}
