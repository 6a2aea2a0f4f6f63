//! The select list and the `WHERE` condition of a SELECT as written in the script, for the
//! map, filter and window operators. Where each item and the condition begin and end, the
//! parser says: it is run again over the script's tokens from the token after `SELECT` (and
//! after `WHERE`), and an item runs from the token the parser starts at to the last one before
//! the token it stops at (a comma, `FROM`, `GROUP`, `;`). The text between is cut from the
//! script with [`Source::tokens_text`], so each character keeps its line and column.

use sqlparser::ast::{Select, SelectItem, Spanned, TableFactor};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Location, Span, Token, TokenWithSpan, Tokenizer};

use super::dialect::AnduinDialect;
use super::source_text::{is_word, pos, DepthToken, Source};
use crate::Text;

/// The texts of a SELECT's items and of its `WHERE` condition.
pub(super) struct Written {
    pub items: Vec<Text>,
    pub condition: Option<Text>,
}

/// Each select item and the condition of `s` as written; should the tokens not agree with
/// the parsed SELECT, sqlparser's rendering of it at its start.
pub(super) fn written(source: &Source<'_>, s: &Select) -> Written {
    let select_at = s.select_token.0.span.start;
    let toks = source.tokens();
    let cut = cut(toks, s);
    let cut_text = |range: Option<(usize, usize)>| {
        range.and_then(|(from, to)| source.tokens_text(toks, from, to, |_| false))
    };
    let rendered = |node: &dyn std::fmt::Display, span: Span| {
        let at = if span.start.line == 0 {
            select_at
        } else {
            span.start
        };
        Text::at(node.to_string(), pos(at))
    };
    let items = s
        .projection
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let range = cut.as_ref().and_then(|c| c.items.get(i).copied().flatten());
            cut_text(range).unwrap_or_else(|| rendered(item, item.span()))
        })
        .collect();
    let condition = s.selection.as_ref().map(|cond| {
        cut_text(cut.as_ref().and_then(|c| c.condition))
            .unwrap_or_else(|| rendered(cond, cond.span()))
    });
    Written { items, condition }
}

/// The first and last token of each select item (none for an item not written in the script)
/// and of the condition.
struct Cut {
    items: Vec<Option<(usize, usize)>>,
    condition: Option<(usize, usize)>,
}

fn cut(toks: &[DepthToken], s: &Select) -> Option<Cut> {
    let select = index(toks, s.select_token.0.span.start)?;
    let depth = toks.get(select)?.depth;
    // The statement's tokens after SELECT: a `;` is never inside an expression.
    let end = (select..toks.len())
        .find(|&k| toks[k].tok.token == Token::SemiColon)
        .unwrap_or(toks.len());
    // One dialect per parser: each counts the readings of its own parse.
    let parser = |from: usize, dialect| {
        let tokens: Vec<TokenWithSpan> = toks[from..end].iter().map(|t| t.tok.clone()).collect();
        Parser::new(dialect)
            .with_recursion_limit(crate::nesting::PARSER_RECURSION_LIMIT)
            .with_tokens_with_locations(tokens)
    };
    let items_dialect = AnduinDialect::default();
    let mut p = parser(select + 1, &items_dialect);
    let mut items = Vec::new();
    let stop = loop {
        let first = index(toks, p.peek_token().span.start)?;
        let item = p.parse_select_item().ok()?;
        if items_dialect.rereading.exceeded().is_some() {
            return None;
        }
        let stop = stop_index(toks, &p.peek_token(), end)?;
        let last = last_before(toks, first, stop)?;
        if !agrees(toks, (first, last), item_span(&item)) {
            return None;
        }
        items.push((first, last));
        if !p.consume_token(&Token::Comma) {
            break stop;
        }
    };
    let items = if items.len() == s.projection.len() && s.projection.iter().all(is_written) {
        items.into_iter().map(Some).collect()
    } else {
        // A SELECT lowered without some of its items (a top-N's row number), or with items
        // of its own (what a top-N's OVER (…) computes): each item kept is the one written
        // where it is; one made while lowering, rendered.
        s.projection
            .iter()
            .map(|item| {
                let span = item_span(item);
                if span.start.line == 0 || !is_written(item) {
                    return None;
                }
                items.iter().copied().find(|r| agrees(toks, *r, span))
            })
            .collect()
    };
    let condition = match &s.selection {
        None => None,
        Some(cond) => {
            // The WHERE of this SELECT: at its depth, after the FROM clause.
            let kw = (stop..end)
                .take_while(|&k| toks[k].depth >= depth)
                .find(|&k| toks[k].depth == depth && is_word(&toks[k].tok, "WHERE"))?;
            let where_dialect = AnduinDialect::default();
            let mut p = parser(kw + 1, &where_dialect);
            let first = index(toks, p.peek_token().span.start)?;
            p.parse_expr().ok()?;
            if where_dialect.rereading.exceeded().is_some() {
                return None;
            }
            let stop = stop_index(toks, &p.peek_token(), end)?;
            let range = (first, last_before(toks, first, stop)?);
            if !agrees(toks, range, cond.span()) {
                return None;
            }
            Some(range)
        }
    };
    Some(Cut { items, condition })
}

/// Whether `item` was written in the script, not made while lowering (a named item whose
/// name has no place in the script).
fn is_written(item: &SelectItem) -> bool {
    !matches!(item, SelectItem::ExprWithAlias { alias, .. } if alias.span.start.line == 0)
}

/// The span of an item's expression and alias (its own span may be empty).
fn item_span(item: &SelectItem) -> Span {
    match item {
        SelectItem::ExprWithAlias { expr, alias } => expr.span().union(&alias.span),
        other => other.span(),
    }
}

/// The index of the token that starts at `loc`.
fn index(toks: &[DepthToken], loc: Location) -> Option<usize> {
    let key = |l: Location| (l.line, l.column);
    toks.binary_search_by_key(&key(loc), |t| key(t.tok.span.start))
        .ok()
}

/// The index of the token the parser stopped at (`end` for the end of its tokens).
fn stop_index(toks: &[DepthToken], next: &TokenWithSpan, end: usize) -> Option<usize> {
    if next.token == Token::EOF {
        Some(end)
    } else {
        index(toks, next.span.start)
    }
}

/// The last token before `stop` that is not whitespace or a comment, from `first` on.
fn last_before(toks: &[DepthToken], first: usize, stop: usize) -> Option<usize> {
    (first..stop)
        .rev()
        .find(|&k| !matches!(toks[k].tok.token, Token::Whitespace(_)))
}

/// Whether the parsed node's span, when it has one, lies within tokens `from..=to` (sqlparser
/// spans may be shorter than the node, never longer).
fn agrees(toks: &[DepthToken], (from, to): (usize, usize), span: Span) -> bool {
    if span.start.line == 0 {
        return true;
    }
    let key = |l: Location| (l.line, l.column);
    let (Some(a), Some(b)) = (toks.get(from), toks.get(to)) else {
        return false;
    };
    key(a.tok.span.start) <= key(span.start) && key(span.end) <= key(b.tok.span.end)
}

/// `text`, a select item or the WHERE over `rel`, without the qualifier `m.` in `m.column`
/// when `rel` has the alias `m` (`MATCH_RECOGNIZE (…) AS m`, `(SELECT …) AS m`, `bid AS m`),
/// or is a table or view `m` without one (a view's stream has a name of its own): the
/// operators after it know its columns by their names alone.
pub(super) fn unqualified(rel: &TableFactor, text: Text) -> Text {
    let qualifier = match rel {
        TableFactor::MatchRecognize {
            alias: Some(alias), ..
        }
        | TableFactor::Derived {
            alias: Some(alias), ..
        }
        | TableFactor::Table {
            alias: Some(alias), ..
        }
        | TableFactor::TableFunction {
            alias: Some(alias), ..
        } => alias.name.value.clone(),
        TableFactor::Table {
            alias: None,
            name,
            args: None,
            ..
        } => match name.0.as_slice() {
            [part] => match part.as_ident() {
                Some(i) => i.value.clone(),
                None => return text,
            },
            _ => return text,
        },
        _ => return text,
    };
    let dialect = AnduinDialect::default();
    let Ok(toks) = Tokenizer::new(&dialect, text.as_str()).tokenize_with_location() else {
        return text;
    };
    let toks: Vec<_> = toks
        .into_iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
        .collect();
    // The char index of a location in `text`.
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(
            text.as_str()
                .chars()
                .enumerate()
                .filter(|(_, c)| *c == '\n')
                .map(|(i, _)| i + 1),
        )
        .collect();
    let index = |l: Location| {
        let line = usize::try_from(l.line).ok()?.checked_sub(1)?;
        let col = usize::try_from(l.column).ok()?.checked_sub(1)?;
        Some(line_starts.get(line)? + col)
    };
    let mut pieces = Vec::new();
    let mut from = 0;
    for (k, t) in toks.iter().enumerate() {
        let Token::Word(w) = &t.token else {
            continue;
        };
        let qualifies = w.value.eq_ignore_ascii_case(&qualifier)
            && toks.get(k + 1).is_some_and(|n| n.token == Token::Period)
            && toks
                .get(k + 2)
                .is_some_and(|n| matches!(n.token, Token::Word(_) | Token::Mul))
            && !(k > 0 && toks.get(k - 1).is_some_and(|p| p.token == Token::Period));
        let cut = toks
            .get(k + 1)
            .and_then(|period| Some((index(t.span.start)?, index(period.span.end)?)));
        if let (true, Some((start, end))) = (qualifies, cut) {
            pieces.push(text.sub(from, start));
            from = end;
        }
    }
    if pieces.is_empty() {
        return text;
    }
    pieces.push(text.sub(from, text.as_str().chars().count()));
    pieces.retain(|p| !p.as_str().is_empty());
    Text::join(&pieces, "")
}
