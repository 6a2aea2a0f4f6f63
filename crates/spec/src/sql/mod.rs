//! The SQL frontend: a script of `CREATE TABLE … WITH (…)` and `INSERT INTO … SELECT …`
//! statements, lowered to the same [`Spec`] as a `.flow` file (tables become readers and
//! writers, a `WHERE` a filter, a window table function with `GROUP BY` a window, a `JOIN`
//! with a time bound a join, a `MATCH_RECOGNIZE` a pattern, the select list a map).
//!
//! ```sql
//! CREATE TABLE events (ts TIMESTAMP, sensor BIGINT, value BIGINT)
//! WITH (connector = 'file', path = '${INPUT}', format = 'csv', event_time = 'ts', watermark = '2 seconds');
//! CREATE TABLE out WITH (connector = 'file', path = '${OUTPUT}', format = 'csv');
//! INSERT INTO out
//! SELECT window_start, sensor, COUNT(*) AS cnt, MAX(value) AS max
//! FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '1' SECOND))
//! GROUP BY window_start, window_end, sensor;
//! ```
//! `CREATE VIEW name AS SELECT …` names a query that FROM reads as a table (`views.rs`).
//! What it does not support yet is an error naming the construct and its position.

mod aliases;
mod derived;
mod dialect;
mod functions;
mod group;
mod group_updating;
mod insert;
mod join;
mod legacy_window;
mod match_recognize;
mod over;
mod over_aggregates;
mod process;
mod qos;

pub use match_recognize::PATTERN_AGGREGATES;
mod reserved;
pub use reserved::reserved_function;
mod select_text;
mod settings;
mod source_text;
mod tables;
mod temporal;
mod top_n;
mod views;
mod window_tvf;

use anduin_types::{Diagnostic, Diagnostics, Pos};
use sqlparser::ast::Spanned;
use sqlparser::ast::Statement;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::ast::Spec;
use crate::nesting;
use dialect::AnduinDialect;
use source_text::{pos, Source};
use tables::Tables;

/// Parses a SQL script into a spec.
///
/// # Examples
/// ```
/// let spec = anduin_spec::parse_sql(
///     "CREATE TABLE t (x BIGINT) WITH (connector = 'file', path = 'in.csv');
///      CREATE TABLE o WITH (connector = 'file', path = 'out.csv');
///      INSERT INTO o SELECT x * 2 AS y FROM t WHERE x > 0;",
/// ).expect("parses");
/// let kinds: Vec<&str> = spec.operators.iter().map(|o| o.kind.as_str()).collect();
/// assert_eq!(kinds, ["reader", "filter", "map", "writer"]);
/// ```
pub fn parse_sql(src: &str) -> Result<Spec, Diagnostics> {
    let src = crate::source::without_bom(src);
    let dialect = AnduinDialect::default();
    // What sqlparser does not parse of MATCH_RECOGNIZE, taken out with its positions kept.
    let prepared = match_recognize::prepare(src, &dialect)?;
    let depth = nesting::depth_bound(&prepared.tokens)
        .map_err(|e| Diagnostics::from(Diagnostic::error(pos(e.at), e.message)))?;
    nesting::with_stack(depth, || lower_script(src, &dialect, prepared))
}

/// Parses and lowers a script whose nesting is measured.
fn lower_script(
    src: &str,
    dialect: &AnduinDialect,
    prepared: match_recognize::Prepared,
) -> Result<Spec, Diagnostics> {
    let end = end_of(&prepared.tokens);
    let parsed = Parser::new(dialect)
        .with_recursion_limit(nesting::PARSER_RECURSION_LIMIT)
        .try_with_sql(&prepared.sql)
        .and_then(|mut p| p.parse_statements());
    if let Some(e) = dialect.rereading.exceeded() {
        return Err(Diagnostics::from(Diagnostic::error(pos(e.at), e.message)));
    }
    let statements = parsed.map_err(|e| Diagnostics::from(syntax_error(e, end)))?;
    let mut prepared = prepared;
    match_recognize::parse_inputs(&mut prepared.matches, dialect)
        .map_err(|e| Diagnostics::from(syntax_error(e, end)))?;
    temporal::refuse_versions_outside_joins(&statements)?;
    let source = Source::new(src, prepared.tokens);
    let mut tables = Tables::default();
    let mut inserts = Vec::new();
    let mut diags = Diagnostics::default();
    let mut functions: Vec<crate::ast::FunctionDef> = Vec::new();
    let mut settings = settings::Settings::default();
    for st in &statements {
        match st {
            Statement::Set(set) => {
                if let Err(d) = settings.take(set, inserts.is_empty()) {
                    diags.push(d);
                }
            }
            Statement::CreateFunction(cf) => match functions::declare(cf) {
                Ok(f) => match functions.iter().find(|g| g.name.as_str() == f.name.as_str()) {
                    Some(g) => diags.push(Diagnostic::error(
                        f.pos,
                        format!(
                            "function `{}` is created twice (first at {}:{})",
                            f.name.as_str(),
                            g.pos.line,
                            g.pos.col
                        ),
                    )),
                    None => functions.push(f),
                },
                Err(d) => diags.push(d),
            },
            Statement::CreateTable(ct) => {
                if let Err(d) = tables.declare(ct, &source) {
                    diags.push(d);
                }
            }
            Statement::CreateView(cv) => {
                let script = insert::Script {
                    source: &source,
                    matches: &prepared.matches,
                };
                if let Err(d) = views::declare(cv, &script, &mut tables, &functions) {
                    diags.push(d);
                }
            }
            Statement::Insert(ins) => inserts.push(ins),
            other => diags.push(Diagnostic::error(
                pos(other.span().start),
                format!(
                    "`{}` is not supported: a script holds SET '…' = '…', CREATE TABLE … WITH (…), CREATE VIEW … AS SELECT …, CREATE FUNCTION …, CREATE AGGREGATE … and INSERT INTO … SELECT … statements",
                    first_words(&other.to_string())
                ),
            )),
        }
    }
    if inserts.is_empty() && diags.0.is_empty() {
        diags.push(Diagnostic::error(
            Pos::new(1, 1),
            "the script has no INSERT INTO … SELECT …: nothing would run",
        ));
    }
    let mut spec = Spec {
        functions,
        ..Spec::default()
    };
    for (i, ins) in inserts.iter().enumerate() {
        if let Err(d) = insert::lower(
            ins,
            i + 1,
            &mut tables,
            &source,
            &prepared.matches,
            &mut spec,
        ) {
            diags.push(d);
        }
    }
    if !diags.0.is_empty() {
        diags.sort();
        return Err(diags);
    }
    tables.finish(&mut spec);
    settings.apply(&mut spec);
    Ok(spec)
}

/// Where the text of `tokens` ends: just after its last token that is not whitespace (1:1
/// for none).
pub(crate) fn end_of(tokens: &[TokenWithSpan]) -> Pos {
    tokens
        .iter()
        .rev()
        .find(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
        .map_or(Pos::new(1, 1), |t| pos(t.span.end))
}

fn first_words(s: &str) -> String {
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// The word of row pattern recognition in a window (`MEASURES`, `PATTERN`, …) that the
/// parser met where a window's frame was expected, if that is what `head` (a parser error
/// without its position) says.
fn window_pattern_word(head: &str) -> Option<&'static str> {
    let (expected, found) = head.rsplit_once("found: ")?;
    if !expected.contains("ROWS, RANGE, GROUPS") && !expected.contains("Expected: )") {
        return None;
    }
    let found = found.trim().trim_end_matches(',').to_ascii_uppercase();
    ["MEASURES", "PATTERN", "INITIAL", "SEEK", "SUBSET", "DEFINE"]
        .into_iter()
        .find(|w| found == *w)
}

/// A parser error at the position sqlparser reports; at `end`, the end of the text, when the
/// text ended too early (sqlparser gives no position then).
pub(crate) fn syntax_error(e: ParserError, end: Pos) -> Diagnostic {
    let msg = match e {
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => m,
        ParserError::RecursionLimitExceeded => "the statement is nested too deeply".into(),
    };
    if let Some((head, tail)) = msg.rsplit_once(" at Line: ") {
        if let Some((l, c)) = tail.split_once(", Column: ") {
            if let (Ok(l), Ok(c)) = (l.trim().parse(), c.trim().parse()) {
                if let Some(word) = window_pattern_word(head) {
                    return Diagnostic::error(
                        Pos::new(l, c),
                        format!("`{word}` in a window: row pattern recognition in a window (`WINDOW w AS (… MEASURES … PATTERN (…) DEFINE …)`, SQL:2016's R020) is not supported; write the pattern as MATCH_RECOGNIZE (PARTITION BY … ORDER BY … MEASURES … PATTERN (…) DEFINE …) after the table"),
                    );
                }
                return Diagnostic::error(Pos::new(l, c), format!("syntax error: {head}"));
            }
        }
    }
    match msg.strip_suffix("found: EOF") {
        Some(head) => Diagnostic::error(
            end,
            format!("syntax error: {head}found the end of the text"),
        ),
        None => Diagnostic::error(Pos::new(1, 1), format!("syntax error: {msg}")),
    }
}
