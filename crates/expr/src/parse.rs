//! Expression text to sqlparser's syntax tree, measured first: text that nests too deeply is
//! refused before any tree is built (see [`anduin_spec::nesting`]), and what is accepted is
//! parsed with the stack its depth needs, and stopped where the parser reads one place too
//! often (see [`anduin_spec::rereading`]).

use anduin_spec::nesting::{depth_bound, with_stack, PARSER_RECURSION_LIMIT};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::dialect::ExprDialect;
use crate::ExprError;

/// Expression text, tokenized, with a bound on the depth of its tree.
pub(crate) struct Tokens {
    tokens: Vec<TokenWithSpan>,
    /// At most how many levels deep the parsed tree is.
    pub depth: usize,
}

/// Tokenizes and measures `text`.
pub(crate) fn tokenize(text: &str) -> Result<Tokens, ExprError> {
    let dialect = GenericDialect {};
    let tokens = Tokenizer::new(&dialect, text)
        .tokenize_with_location()
        .map_err(|e| parse_error(ParserError::TokenizerError(e.to_string())))?;
    let depth =
        depth_bound(&tokens).map_err(|e| ExprError::at(e.at.line, e.at.column, e.message))?;
    Ok(Tokens { tokens, depth })
}

impl Tokens {
    /// Parses the tokens with `f` (a sqlparser entry point) and refuses anything left after
    /// it. Call it inside [`with_stack`] for [`Tokens::depth`].
    pub(crate) fn parse<T>(
        self,
        f: impl FnOnce(&mut Parser<'_>) -> Result<T, ParserError>,
    ) -> Result<T, ExprError> {
        let dialect = ExprDialect::default();
        let parsed = self.parse_in(&dialect, f);
        match dialect.rereading.exceeded() {
            // The parse was stopped: whatever it returned is not what the text says.
            Some(e) => Err(ExprError::at(e.at.line, e.at.column, e.message)),
            None => parsed,
        }
    }

    fn parse_in<T>(
        self,
        dialect: &ExprDialect,
        f: impl FnOnce(&mut Parser<'_>) -> Result<T, ParserError>,
    ) -> Result<T, ExprError> {
        // Where the text ends: an expression cut short is reported there.
        let end = self
            .tokens
            .iter()
            .rev()
            .find(|t| !matches!(t.token, Token::EOF | Token::Whitespace(_)))
            .map(|t| t.span.end);
        let mut parser = Parser::new(dialect)
            .with_recursion_limit(PARSER_RECURSION_LIMIT)
            .with_tokens_with_locations(self.tokens);
        let v = f(&mut parser).map_err(|e| {
            let e = parse_error(e);
            match end {
                Some(end) if e.line == 0 && e.message.ends_with("found: EOF") => ExprError::at(
                    end.line,
                    end.column,
                    e.message
                        .replace("found: EOF", "found the end of the expression"),
                ),
                _ => e,
            }
        })?;
        let next = parser.peek_token();
        if next.token != Token::EOF {
            let loc = next.span.start;
            return Err(ExprError::at(
                loc.line,
                loc.column,
                format!(
                    "unexpected `{}` after the end of the expression",
                    next.token
                ),
            ));
        }
        Ok(v)
    }
}

/// Parses `text` with `f` (a sqlparser entry point) and refuses anything left after it; errors
/// carry their line and column in `text`. Text nesting deeper than
/// [`MAX_DEPTH`](anduin_spec::nesting::MAX_DEPTH) is refused, with where and why.
pub fn parse_text<T>(
    text: &str,
    f: impl FnOnce(&mut Parser<'_>) -> Result<T, ParserError>,
) -> Result<T, ExprError> {
    let tokens = tokenize(text)?;
    with_stack(tokens.depth, || tokens.parse(f))
}

/// [`parse_text`], then `then` on what it parsed, both with the stack the text's depth needs:
/// for a caller that walks the syntax tree itself (the pattern operator compiles its
/// conditions so).
pub fn parse_then<T, R>(
    text: &str,
    parse: impl FnOnce(&mut Parser<'_>) -> Result<T, ParserError>,
    then: impl FnOnce(T) -> Result<R, ExprError>,
) -> Result<R, ExprError> {
    let tokens = tokenize(text)?;
    with_stack(tokens.depth, || then(tokens.parse(parse)?))
}

/// [`parse_then`], whose `then` also gets the bound on the depth of the parsed tree.
pub fn parse_then_with_depth<T, R>(
    text: &str,
    parse: impl FnOnce(&mut Parser<'_>) -> Result<T, ParserError>,
    then: impl FnOnce(T, usize) -> Result<R, ExprError>,
) -> Result<R, ExprError> {
    let tokens = tokenize(text)?;
    let depth = tokens.depth;
    with_stack(depth, || then(tokens.parse(parse)?, depth))
}

fn parse_error(e: ParserError) -> ExprError {
    let msg = match e {
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => m,
        ParserError::RecursionLimitExceeded => "expression nested too deeply".into(),
    };
    // sqlparser appends " at Line: L, Column: C" to its messages.
    if let Some((head, tail)) = msg.rsplit_once(" at Line: ") {
        if let Some((l, c)) = tail.split_once(", Column: ") {
            if let (Ok(l), Ok(c)) = (l.trim().parse(), c.trim().parse()) {
                return ExprError::at(l, c, format!("syntax error: {head}"));
            }
        }
    }
    ExprError::whole(format!("syntax error: {msg}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expression_cut_short_is_reported_where_it_ends() {
        let e = parse_text("value <", |p| p.parse_expr()).expect_err("cut short");
        assert_eq!((e.line, e.col), (1, 8), "{e:?}");
        assert!(
            e.message.contains("found the end of the expression"),
            "{e:?}"
        );
    }

    #[test]
    fn sixty_nots_parse() {
        let text = format!("{}x", "NOT ".repeat(60));
        parse_text(&text, |p| p.parse_expr()).expect("60 NOTs are 61 levels");
    }

    #[test]
    fn a_chain_too_long_is_refused_where_it_crosses_the_limit() {
        let text = format!("{} > 0", vec!["value"; 3_000].join(" + "));
        let e = parse_text(&text, |p| p.parse_expr()).expect_err("too long");
        assert_eq!((e.line, e.col), (1, 8 * 1001 - 1));
        assert!(
            e.message.starts_with(
                "the expression has 3000 operators in a row; anduin accepts at most 1000"
            ),
            "{}",
            e.message
        );
    }
}
