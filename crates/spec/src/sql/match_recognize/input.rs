//! The input of a `MATCH_RECOGNIZE` when it is not a table's name: a subquery, `FROM (SELECT
//! … FROM t WHERE …) [AS s] MATCH_RECOGNIZE (…)`, or a parenthesized join, `FROM (a JOIN b ON
//! …) MATCH_RECOGNIZE (…)`, as Trino and Oracle accept them.
//!
//! sqlparser 0.62 parses `MATCH_RECOGNIZE` only after a table's name. So the pre-pass
//! ([`super::prepare`]) puts a one-character name, `_`, where the parenthesized input starts
//! and blanks the rest of it; the input is parsed on its own, from a copy of the script in
//! which everything else is blanked (so that its lines and columns are those of the script),
//! and lowered in its place: a subquery as any subquery in `FROM`, a join as `SELECT *` over
//! it. A table function before `MATCH_RECOGNIZE` (`TABLE(TUMBLE(…))`) is still refused.

use anduin_types::{Diagnostic, Pos};
use sqlparser::ast::{Select, SelectItem, Spanned, TableAlias, TableFactor};
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Span, Token, TokenWithSpan};

use crate::ast::Spec;
use crate::sql::derived::Derived;
use crate::sql::dialect::AnduinDialect;
use crate::sql::insert::{lower_select, subquery_name, unsupported, Script};
use crate::sql::source_text::{is_word, pos};
use crate::sql::tables::Tables;

/// The error for a `MATCH_RECOGNIZE` over a table function.
pub(crate) const OVER_TABLE_FUNCTION: &str =
    "MATCH_RECOGNIZE over a table function (its input is a table's name, a subquery `(SELECT …)` or a join `(a JOIN b ON …)`)";

/// A parenthesized input of one `MATCH_RECOGNIZE`.
#[derive(Debug)]
pub(crate) struct Input {
    /// From its `(` to just after its `)`.
    pub span: Span,
    /// The text the parser reads it from: the script with all else blanked.
    pub sql: String,
    /// What the parser made of it, once parsed ([`parse`]).
    pub relation: Option<TableFactor>,
}

/// The span of `(…)` in `(…) [[AS] alias] MATCH_RECOGNIZE` when the `MATCH_RECOGNIZE` keyword
/// is `toks[i]`; `Err` when the parentheses are a table function's (`TABLE(…)`).
pub(crate) fn before(toks: &[TokenWithSpan], i: usize) -> Option<Result<Span, Diagnostic>> {
    let mut j = i.checked_sub(1)?;
    if matches!(toks.get(j)?.token, Token::Word(_)) {
        j = j.checked_sub(1)?;
        if is_word(toks.get(j)?, "AS") {
            j = j.checked_sub(1)?;
        }
    }
    let close = toks.get(j).filter(|t| t.token == Token::RParen)?;
    let mut depth = 0usize;
    let open = (0..=j).rev().find(|&k| {
        match toks[k].token {
            Token::RParen => depth += 1,
            Token::LParen => depth = depth.saturating_sub(1),
            _ => {}
        }
        depth == 0
    })?;
    // In FROM, after a JOIN or a comma: a relation of its own, not a function's arguments.
    let relation = open
        .checked_sub(1)
        .and_then(|k| toks.get(k))
        .is_some_and(|t| is_word(t, "FROM") || is_word(t, "JOIN") || t.token == Token::Comma);
    Some(if relation {
        Ok(Span::new(toks[open].span.start, close.span.end))
    } else {
        Err(unsupported(pos(toks[open].span.start), OVER_TABLE_FUNCTION))
    })
}

/// `lines` with `span` replaced by the name `_` and spaces.
pub(crate) fn put_placeholder(lines: &mut [Vec<char>], span: Span) {
    super::prepare::blank_lines(lines, &[span]);
    let at = usize::try_from(span.start.line)
        .ok()
        .and_then(|l| l.checked_sub(1))
        .zip(
            usize::try_from(span.start.column)
                .ok()
                .and_then(|c| c.checked_sub(1)),
        );
    if let Some(c) = at.and_then(|(l, c)| lines.get_mut(l)?.get_mut(c)) {
        *c = '_';
    }
}

/// The text each input is parsed from: `blanked` (the script as the parser gets it, before
/// the placeholders) with everything outside `span` blanked, and the inputs inside it
/// replaced by their placeholders.
pub(crate) fn text_of(blanked: &[Vec<char>], span: Span, all: &[Span]) -> String {
    let mut lines = blanked.to_vec();
    let key = |l: Location| (l.line, l.column);
    for inner in all {
        let inside = key(span.start) < key(inner.start) && key(inner.end) <= key(span.end);
        if inside {
            put_placeholder(&mut lines, *inner);
        }
    }
    let last = lines.len() as u64;
    let after_last = lines.last().map_or(1, |l| l.len() as u64 + 1);
    super::prepare::blank_lines(
        &mut lines,
        &[
            Span::new(Location::new(1, 1), span.start),
            Span::new(span.end, Location::new(last, after_last + 1)),
        ],
    );
    super::prepare::joined(&lines)
}

/// Parses each match's parenthesized input as a relation.
pub(crate) fn parse(
    matches: &mut [super::RawMatch],
    dialect: &AnduinDialect,
) -> Result<(), ParserError> {
    for input in matches.iter_mut().filter_map(|m| m.input.as_mut()) {
        let relation = Parser::new(dialect)
            .with_recursion_limit(crate::nesting::PARSER_RECURSION_LIMIT)
            .try_with_sql(&input.sql)
            .and_then(|mut p| {
                let query = matches!(
                    p.peek_tokens(),
                    [Token::LParen, Token::Word(w)]
                        if ["SELECT", "WITH", "VALUES"].iter().any(|k| w.quote_style.is_none() && w.value.eq_ignore_ascii_case(k))
                );
                let r = if query {
                    // A subquery, parsed as one so that its syntax errors are its own.
                    p.expect_token(&Token::LParen)?;
                    let subquery = p.parse_query()?;
                    p.expect_token(&Token::RParen)?;
                    TableFactor::Derived {
                        lateral: false,
                        subquery,
                        alias: None,
                        sample: None,
                    }
                } else {
                    p.parse_table_factor()?
                };
                p.expect_token(&Token::EOF)?;
                Ok(r)
            })?;
        input.relation = Some(relation);
    }
    Ok(())
}

/// Whether `rel`, the table before a `MATCH_RECOGNIZE`, is the placeholder of `input`.
pub(crate) fn is_placeholder(rel: &TableFactor, input: &Input) -> bool {
    matches!(rel, TableFactor::Table { name, args: None, .. }
        if name.to_string() == "_" && rel.span().start == input.span.start)
}

/// What errors call `input`.
pub(crate) fn described(input: &Input) -> &'static str {
    match input.relation {
        Some(TableFactor::NestedJoin { .. }) => "the join",
        _ => "the subquery",
    }
}

/// Lowers `input` (called `alias`, the placeholder's alias) to operators named after
/// `prefix`; returns the name of its stream.
pub(crate) fn lower(
    input: &Input,
    alias: Option<&TableAlias>,
    prefix: &str,
    script: &Script<'_, '_>,
    tables: &mut Tables,
    spec: &mut Spec,
) -> Result<String, Diagnostic> {
    let at = pos(input.span.start);
    let internal = || {
        Diagnostic::error(
            at,
            "internal error in the SQL frontend: the input of MATCH_RECOGNIZE was not parsed",
        )
    };
    match input.relation.as_ref().ok_or_else(internal)? {
        TableFactor::Derived {
            lateral: false,
            subquery,
            alias: None,
            ..
        } => crate::sql::insert::lower_subquery(subquery, alias, prefix, script, tables, spec),
        TableFactor::NestedJoin {
            table_with_joins,
            alias: None,
        } => {
            let name = subquery_name(alias, prefix, spec)?;
            let select = star_over(table_with_joins, input.span.start)?;
            let lowered = lower_select(&select, &name, script, tables, spec)?;
            tables.derive(Derived {
                stream: lowered.stream.clone(),
                columns: lowered.columns,
            });
            Ok(lowered.stream)
        }
        other => Err(unsupported(
            at,
            format!("MATCH_RECOGNIZE over `{other}` (its input is a table's name, a subquery `(SELECT …)` or a join `(a JOIN b ON …)`)"),
        )),
    }
}

/// `SELECT * FROM joined`, its `SELECT` at `at` (the join's `(`).
fn star_over(joined: &sqlparser::ast::TableWithJoins, at: Location) -> Result<Select, Diagnostic> {
    let dialect = AnduinDialect::default();
    let mut select = Parser::new(&dialect)
        .try_with_sql("SELECT * FROM _")
        .and_then(|mut p| p.parse_select())
        .map_err(|e| {
            Diagnostic::error(
                Pos::new(1, 1),
                format!("internal error in the SQL frontend: {e}"),
            )
        })?;
    select.from = vec![joined.clone()];
    select.select_token.0.span = Span::new(at, at);
    for item in &mut select.projection {
        if let SelectItem::Wildcard(star) = item {
            star.wildcard_token.0.span = Span::new(at, at);
        }
    }
    Ok(select)
}
