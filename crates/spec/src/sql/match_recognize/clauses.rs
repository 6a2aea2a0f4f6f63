//! The clauses of `MATCH_RECOGNIZE` as the pattern operator's params: expressions as the
//! script's text (with its positions) taken between the tokens the parser found, keywords
//! as lower-case words, the interval of `WITHIN` as a duration.

use anduin_types::{Diagnostic, Pos};
use sqlparser::ast::{AfterMatchSkip, Expr, Measure, OrderByExpr, Spanned, SymbolDefinition};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Location, Span, Token};

use super::pattern::{name_of_text, var_text};
use super::{internal, prepare, RawMatch};
use crate::sql::dialect::AnduinDialect;
use crate::sql::source_text::{pos, Source};
use crate::sql::window_tvf::interval_ms;
use crate::Text;

/// The event-time column of `ORDER BY`, and its tie-breakers as `(column, DESC?, NULLS
/// FIRST?)` (`None`: as the direction has it).
pub(super) type Order<'e> = (&'e Expr, Vec<(&'e Expr, bool, Option<bool>)>);

/// `ORDER BY`: the event-time column, ascending, then tie-breakers (each ascending or
/// descending, NULLS FIRST or LAST).
pub(super) fn order<'e>(
    order_by: &'e [OrderByExpr],
    raw: &RawMatch,
    at: Pos,
) -> Result<Order<'e>, Diagnostic> {
    let [first, rest @ ..] = order_by else {
        return Err(Diagnostic::error(
            at,
            "MATCH_RECOGNIZE needs ORDER BY its table's event-time column, such as ORDER BY ts",
        ));
    };
    // The token after a column: DESC, ASC, NULLS.
    let after = |o: &OrderByExpr| {
        let p = pos(o.expr.span().start);
        raw.token_at(o.expr.span().start)
            .map(|i| (i..i + 6).find(|&k| raw.is_word(k, "DESC") || raw.is_word(k, "NULLS")))
            .and_then(|k| k.and_then(|k| raw.tok(k)))
            .map_or(p, |t| pos(t.span.start))
    };
    if first.options.asc == Some(false) {
        return Err(Diagnostic::error(
            after(first),
            format!(
                "ORDER BY {} DESC is not supported in MATCH_RECOGNIZE: a pattern reads rows in ascending event time (tie-breakers after it may be DESC)",
                first.expr
            ),
        ));
    }
    if first.options.nulls_first.is_some() {
        return Err(Diagnostic::error(
            after(first),
            format!(
                "NULLS FIRST / LAST after the event time {} changes nothing: a row without an event time goes to the dead letters, never into a match (leave it out; tie-breakers after it may have one)",
                first.expr
            ),
        ));
    }
    let ties = rest
        .iter()
        .map(|o| (&o.expr, o.options.asc == Some(false), o.options.nulls_first))
        .collect();
    Ok((&first.expr, ties))
}

/// The text of body tokens `from..=to`, `RUNNING` and `FINAL` included (the operator reads
/// them); `FINAL` where `no_final` says why it is not allowed is an error.
fn expression(
    raw: &RawMatch,
    source: &Source<'_>,
    from: usize,
    to: usize,
    no_final: Option<&str>,
) -> Result<Text, Diagnostic> {
    let fallback = raw.tok(from).map_or(Pos::default(), |t| pos(t.span.start));
    let modifiers = (from..=to).filter(|&k| prepare::is_modifier(&raw.body, k));
    if let Some(why) = no_final {
        if let Some(t) = modifiers
            .filter(|&k| raw.is_word(k, "FINAL"))
            .find_map(|k| raw.tok(k))
        {
            return Err(Diagnostic::error(pos(t.span.start), why));
        }
    }
    source
        .tokens_text(&raw.body, from, to, |_| false)
        .ok_or_else(|| internal(fallback, "an expression"))
}

fn span_text(
    source: &Source<'_>,
    from: Location,
    to: Location,
    at: Pos,
) -> Result<Text, Diagnostic> {
    source
        .text(Span::new(from, to))
        .ok_or_else(|| internal(at, "the text of an expression"))
}

/// `DEFINE V AS condition, …` as `"V AS condition, …"`.
pub(super) fn define(
    symbols: &[SymbolDefinition],
    raw: &RawMatch,
    source: &Source<'_>,
) -> Result<Text, Diagnostic> {
    let idx = symbols
        .iter()
        .map(|d| {
            raw.token_at(d.symbol.span.start)
                .ok_or_else(|| internal(pos(d.symbol.span.start), "a DEFINE"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut items = Vec::new();
    for (n, d) in symbols.iter().enumerate() {
        // Whether each variable is one of the pattern's, once, the operator checks.
        let p = pos(d.symbol.span.start);
        let i = idx[n];
        let end = match idx.get(n + 1) {
            Some(next) => next.checked_sub(2), // before the comma
            None => raw.body.len().checked_sub(1),
        }
        .ok_or_else(|| internal(p, "a DEFINE"))?;
        let var = span_text(source, d.symbol.span.start, d.symbol.span.end, p)?;
        let cond = expression(
            raw,
            source,
            i + 2,
            end,
            Some("FINAL in DEFINE: a condition sees the rows matched so far (RUNNING)"),
        )?;
        items.push(Text::join(&[var, cond], " AS "));
    }
    Ok(Text::join(&items, ", "))
}

/// A measure: `expression AS name` and its name.
pub(super) struct Measured {
    pub text: Text,
    pub name: String,
    pub at: Pos,
}

/// `MEASURES expression [AS] name, …`, each as `"expression AS name"`.
pub(super) fn measures_of(
    measures: &[Measure],
    raw: &RawMatch,
    source: &Source<'_>,
) -> Result<Vec<Measured>, Diagnostic> {
    let mut items = Vec::new();
    let mut start = raw.keyword("MEASURES").map(|k| k + 1);
    for m in measures {
        let p = pos(m.alias.span.start);
        let alias = raw
            .token_at(m.alias.span.start)
            .ok_or_else(|| internal(p, "a measure"))?;
        let from = start.ok_or_else(|| internal(p, "MEASURES"))?;
        let written_as = raw.is_word(alias.saturating_sub(1), "AS");
        let to = alias
            .checked_sub(if written_as { 2 } else { 1 })
            .filter(|to| *to >= from)
            .ok_or_else(|| internal(p, "a measure"))?;
        let expr = expression(raw, source, from, to, None)?;
        let name = span_text(source, m.alias.span.start, m.alias.span.end, p)?;
        items.push(Measured {
            text: Text::join(&[expr, name], " AS "),
            name: m.alias.value.clone(),
            at: p,
        });
        start = Some(alias + 2); // past the comma
    }
    Ok(items)
}

/// `AFTER MATCH SKIP …` in lower-case words.
pub(super) fn after_match(
    skip: Option<&AfterMatchSkip>,
    raw: &RawMatch,
    at: Pos,
) -> Result<Option<Text>, Diagnostic> {
    let kw = raw
        .keyword("AFTER")
        .and_then(|i| raw.tok(i))
        .map_or(at, |t| pos(t.span.start));
    let (words, var) = match (&raw.skip_to, skip) {
        (Some((loc, v)), _) => ("skip to", Some((v.clone(), pos(*loc)))),
        (None, None) => return Ok(None),
        (None, Some(AfterMatchSkip::PastLastRow)) => ("skip past last row", None),
        (None, Some(AfterMatchSkip::ToNextRow)) => ("skip to next row", None),
        (None, Some(AfterMatchSkip::ToFirst(v))) => (
            "skip to first",
            Some((var_text(&v.value, v.quote_style), pos(v.span.start))),
        ),
        (None, Some(AfterMatchSkip::ToLast(v))) => (
            "skip to last",
            Some((var_text(&v.value, v.quote_style), pos(v.span.start))),
        ),
    };
    let Some((v, p)) = var else {
        return Ok(Some(Text::at(words, kw)));
    };
    let name = name_of_text(&v);
    let unions = raw
        .subset
        .as_ref()
        .map_or(&[][..], |(_, names)| names.as_slice());
    if !raw.variables.contains(&name) && !unions.contains(&name) {
        return Err(Diagnostic::error(
            p,
            format!(
                "AFTER MATCH {} {v}: `{v}` is neither a variable of the pattern, which has {}, nor a SUBSET variable",
                words.to_uppercase(),
                raw.variables.join(", ")
            ),
        ));
    }
    let text = format!("{words} {v}");
    Ok(Some(Text::at(text, kw)))
}

/// `WITHIN INTERVAL '10' SECOND` as `"10s"`.
pub(super) fn within(raw: &RawMatch) -> Result<Option<Text>, Diagnostic> {
    let Some((loc, toks)) = &raw.within else {
        return Ok(None);
    };
    let at = pos(*loc);
    let Some(first) = toks.first() else {
        return Err(Diagnostic::error(
            at,
            "WITHIN needs an interval, such as WITHIN INTERVAL '10' SECOND",
        ));
    };
    let dialect = AnduinDialect::default();
    let mut parser = Parser::new(&dialect)
        .with_recursion_limit(crate::nesting::PARSER_RECURSION_LIMIT)
        .with_tokens_with_locations(toks.clone());
    let parsed = parser.parse_expr();
    if let Some(e) = dialect.rereading.exceeded() {
        return Err(Diagnostic::error(pos(e.at), e.message));
    }
    let expr = parsed.map_err(|e| crate::sql::syntax_error(e, crate::sql::end_of(toks)))?;
    let rest = parser.peek_token();
    if rest.token != Token::EOF {
        return Err(Diagnostic::error(
            pos(rest.span.start),
            format!(
                "unexpected `{}` after the interval of WITHIN (DEFINE comes next)",
                rest.token
            ),
        ));
    }
    if !matches!(expr, Expr::Interval(_)) {
        return Err(Diagnostic::error(
            pos(first.span.start),
            format!("WITHIN takes an interval, such as WITHIN INTERVAL '10' SECOND, not `{expr}`"),
        ));
    }
    let ms = interval_ms(&expr)?;
    let text = if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    };
    Ok(Some(Text::at(text, pos(first.span.start))))
}
