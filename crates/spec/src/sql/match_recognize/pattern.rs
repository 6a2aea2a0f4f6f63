//! The tokens of `PATTERN ( … )`: what anduin's pattern operator takes (variables, `( )`,
//! `|`, `PERMUTE( … , … )`, the anchors `^` and `$`, exclusion `{- … -}`, and the quantifiers `* + ? {n} {n,} {,m} {n,m}`, each optionally followed by `?` to
//! be reluctant) and errors for the rest of the SQL standard's row pattern syntax.

use std::collections::HashSet;

use anduin_types::Diagnostic;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan};

use crate::sql::source_text::pos;

/// A pattern variable's name as the pattern operator knows it: unquoted, in upper case (SQL
/// identifiers are case-insensitive: `a` is `A`); quoted, as written.
pub(super) fn var_name(value: &str, quote_style: Option<char>) -> String {
    match quote_style {
        None => value.to_uppercase(),
        Some(_) => value.to_string(),
    }
}

/// A pattern variable as the pattern operator's params write it: quoted again if it was.
pub(super) fn var_text(value: &str, quote_style: Option<char>) -> String {
    match quote_style {
        None => value.to_string(),
        Some(_) => format!("\"{}\"", value.replace('"', "\"\"")),
    }
}

/// The name of a variable written as [`var_text`] writes it.
pub(super) fn name_of_text(text: &str) -> String {
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => text.to_uppercase(),
    }
}

/// Whether `t` is the keyword `PERMUTE` (followed by `next`, its parenthesis).
pub(super) fn is_permute(t: &TokenWithSpan, next: Option<&Token>) -> bool {
    matches!(&t.token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("PERMUTE"))
        && next == Some(&Token::LParen)
}

/// Checks the tokens between the parentheses of `PATTERN` (at `at`); returns the variables
/// in order of first appearance, named as [`var_name`] names them.
pub(super) fn check(toks: &[TokenWithSpan], at: Location) -> Result<Vec<String>, Diagnostic> {
    let mut vars: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut in_braces = false;
    // For each open parenthesis, whether it is PERMUTE's (whose parts a comma separates).
    let mut groups: Vec<bool> = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let here = pos(t.span.start);
        let next = toks.get(i + 1).map(|n| &n.token);
        match &t.token {
            Token::Word(_) if is_permute(t, next) => {
                groups.push(true);
            }
            Token::LParen if !in_braces => {
                // PERMUTE's own parenthesis was pushed with the keyword.
                let after_permute = i
                    .checked_sub(1)
                    .and_then(|p| toks.get(p))
                    .is_some_and(|p| is_permute(p, Some(&t.token)));
                if !after_permute {
                    groups.push(false);
                }
            }
            Token::RParen if !in_braces => {
                groups.pop();
            }
            Token::Comma if !in_braces && groups.last() == Some(&true) => {}
            // sqlparser reads `B$` as one word and `$B` as a placeholder: a pattern variable
            // is letters, digits and `_`, and `$` the anchor (the operator reads the text).
            Token::Word(w) if w.quote_style.is_none() && w.value.contains('$') && !in_braces => {
                for name in w.value.split('$').filter(|n| !n.is_empty()) {
                    let name = var_name(name, None);
                    if seen.insert(name.clone()) {
                        vars.push(name);
                    }
                }
            }
            Token::Placeholder(p) if p.starts_with('$') && !in_braces => {
                for name in p.split('$').filter(|n| !n.is_empty()) {
                    let name = var_name(name, None);
                    if seen.insert(name.clone()) {
                        vars.push(name);
                    }
                }
            }
            Token::Word(w) if !in_braces => {
                let name = var_name(&w.value, w.quote_style);
                if seen.insert(name.clone()) {
                    vars.push(name);
                }
            }
            Token::Caret if !in_braces => {}
            // Exclusion `{- … -}`: its braces and minuses are not a quantifier's.
            Token::LBrace if !in_braces && next == Some(&Token::Minus) => {}
            Token::Minus
                if !in_braces
                    && (next == Some(&Token::RBrace)
                        || i.checked_sub(1).and_then(|p| toks.get(p)).map(|p| &p.token)
                            == Some(&Token::LBrace)) => {}
            Token::RBrace
                if !in_braces
                    && i.checked_sub(1).and_then(|p| toks.get(p)).map(|p| &p.token)
                        == Some(&Token::Minus) => {}
            Token::LBrace if !in_braces => in_braces = true,
            Token::RBrace if in_braces => in_braces = false,
            Token::Number(..) | Token::Comma if in_braces => {}
            Token::Pipe | Token::Plus | Token::Mul if !in_braces => {}
            Token::Placeholder(p) if p == "?" && !in_braces => {}
            other => {
                return Err(Diagnostic::error(
                    here,
                    format!(
                        "unexpected `{other}` in PATTERN: a pattern holds variables, ( ), |, and the quantifiers * + ? {{n,m}}, each of which may end with ? to be reluctant"
                    ),
                ));
            }
        }
    }
    if vars.is_empty() {
        return Err(Diagnostic::error(
            pos(at),
            "PATTERN ( ) names no variable: write one such as PATTERN (A B+ C)",
        ));
    }
    Ok(vars)
}
