//! Text of the SQL source with its positions, so that errors in expressions taken from a
//! query point at the right line and column of the `.sql` file.
//!
//! sqlparser 0.62's spans do not say where an expression ends, nor always where it starts:
//! they leave out closing brackets (`ABS(x` for `ABS(x)`), and more (`y` for `CAST(y AS
//! DOUBLE)`, `x` for `x IS NULL` and for `NOT x`). So an expression's text is cut from the
//! script between tokens, [`Source::tokens_text`]: the first and the last token of the
//! expression, as the `MATCH_RECOGNIZE` clauses and the select list find them.

use anduin_types::Pos;
use sqlparser::tokenizer::{Location, Span, Token, TokenWithSpan};

use crate::Text;

/// A token of the script and its depth in parentheses (a `)` has the depth of its `(`).
#[derive(Debug, Clone)]
pub(crate) struct DepthToken {
    pub depth: usize,
    pub tok: TokenWithSpan,
}

/// `toks` with their depths, counted from 0 at the first.
pub(crate) fn with_depths(toks: impl IntoIterator<Item = TokenWithSpan>) -> Vec<DepthToken> {
    let mut depth = 0usize;
    toks.into_iter()
        .map(|tok| {
            if tok.token == Token::RParen {
                depth = depth.saturating_sub(1);
            }
            let t = DepthToken { depth, tok };
            if t.tok.token == Token::LParen {
                depth += 1;
            }
            t
        })
        .collect()
}

/// Whether `t` is the unquoted word `w` (in any case).
pub(crate) fn is_word(t: &TokenWithSpan, w: &str) -> bool {
    matches!(&t.token, Token::Word(word) if word.quote_style.is_none() && word.value.eq_ignore_ascii_case(w))
}

/// The SQL source, indexed by line, and its tokens.
pub(crate) struct Source<'a> {
    lines: Vec<&'a str>,
    tokens: Vec<DepthToken>,
}

impl<'a> Source<'a> {
    /// `tokens` are those of `src`, whitespace and comments included (none if it does not
    /// tokenize).
    pub(crate) fn new(src: &'a str, tokens: Vec<TokenWithSpan>) -> Self {
        Self {
            lines: src.split('\n').collect(),
            tokens: with_depths(tokens),
        }
    }

    /// The script's tokens, whitespace and comments included.
    pub(crate) fn tokens(&self) -> &[DepthToken] {
        &self.tokens
    }

    /// The text between the start and the end of `span`, with the position of each char.
    pub(crate) fn text(&self, span: Span) -> Option<Text> {
        let (s, e) = (span.start, span.end);
        if s.line == 0 || e.line == 0 || (e.line, e.column) < (s.line, s.column) {
            return None;
        }
        let mut value = String::new();
        let mut positions = Vec::new();
        for line_no in s.line..=e.line {
            let line = self.lines.get(usize::try_from(line_no).ok()? - 1)?;
            let from = if line_no == s.line { s.column } else { 1 };
            for (i, c) in line.chars().enumerate() {
                let col = i as u64 + 1;
                if col < from || (line_no == e.line && col >= e.column) {
                    continue;
                }
                value.push(c);
                positions.push(pos(Location::new(line_no, col)));
            }
            if line_no < e.line {
                value.push('\n');
                positions.push(pos(Location::new(line_no, line.chars().count() as u64 + 1)));
            }
        }
        let start = positions.first().copied().unwrap_or_default();
        Some(Text::with_positions(value, positions, start))
    }

    /// The script's text from the start of `toks[from]` to the end of `toks[to]`, as written
    /// (whitespace and comments between the tokens included), each char at its place; the
    /// tokens `skip` picks are left out, with the whitespace after them.
    pub(crate) fn tokens_text(
        &self,
        toks: &[DepthToken],
        from: usize,
        to: usize,
        skip: impl Fn(usize) -> bool,
    ) -> Option<Text> {
        let start_of = |i: usize| toks.get(i).map(|t| t.tok.span.start);
        let end = toks.get(to)?.tok.span.end;
        let mut pieces = Vec::new();
        let mut start = Some(start_of(from)?);
        for k in (from..=to).filter(|&k| skip(k)) {
            let here = start_of(k)?;
            if let Some(s) = start.filter(|s| *s != here) {
                pieces.push(self.text(Span::new(s, here))?);
            }
            start = if k < to { start_of(k + 1) } else { None };
        }
        if let Some(s) = start {
            pieces.push(self.text(Span::new(s, end))?);
        }
        Some(Text::join(&pieces, ""))
    }
}

/// A sqlparser location as a position.
pub(crate) fn pos(l: Location) -> Pos {
    Pos::new(
        u32::try_from(l.line).unwrap_or(u32::MAX),
        u32::try_from(l.column).unwrap_or(u32::MAX),
    )
}
