//! A script whose expressions make sqlparser read the same place again and again (nested
//! `CAST(`s without `AS type`, each read again as a call `cast(…)`: 2^N readings for N of them)
//! is refused where a place is read more than 64 times, instead of parsing for hours; see
//! `anduin_spec::rereading`. The expressions of `.flow` files are guarded the same way, in
//! anduin-expr's `calls_the_parser_would_read_again_and_again_are_refused_at_once`.

use anduin_spec::parse_sql;

const TABLES: &str = "CREATE TABLE t (ts TIMESTAMP, v BIGINT) WITH (connector = 'file', path = 'in.csv', event_time = 'ts');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv');
";

const READ_TOO_OFTEN: &str = "the SQL parser reads this place more than 64 times";

/// The one error of `sql` after the tables: (line, column, message).
fn error(sql: &str) -> (u32, u32, String) {
    let d = parse_sql(&format!("{TABLES}{sql}")).expect_err("refused");
    let errors: Vec<_> = d.errors().collect();
    assert_eq!(errors.len(), 1, "{d}");
    let e = errors[0];
    (e.pos.line, e.pos.col, e.message.clone())
}

#[test]
fn nested_casts_without_their_type_in_a_select_are_refused_in_their_line() {
    let (line, col, message) = error(&format!(
        "INSERT INTO o SELECT {}v FROM t;",
        "CAST( ".repeat(40)
    ));
    assert!(message.starts_with(READ_TOO_OFTEN), "{message}");
    assert_eq!(line, 3);
    assert!(col > 21, "{col}");
}

#[test]
fn nested_calls_in_a_where_condition_are_refused() {
    let (line, _, message) = error(&format!(
        "INSERT INTO o SELECT v FROM t WHERE {}v > 0;",
        "NOT ( ".repeat(40)
    ));
    assert!(message.starts_with(READ_TOO_OFTEN), "{message}");
    assert_eq!(line, 3);
}

#[test]
fn deep_casts_that_parse_in_one_pass_are_accepted() {
    let sql = format!(
        "{TABLES}INSERT INTO o SELECT {}v{} AS w FROM t;",
        "CAST( ".repeat(150),
        " AS BIGINT)".repeat(150)
    );
    parse_sql(&sql).unwrap_or_else(|d| panic!("{d}"));
}
