//! A token-level pass over the script before sqlparser parses it, for what sqlparser 0.62 does
//! not accept inside `MATCH_RECOGNIZE (…)`:
//!
//! - reluctant quantifiers (`D+?`) and anything else in `PATTERN (…)`: the pattern is taken as
//!   written, checked for constructs anduin does not support, and handed to the parser as its
//!   variables alone (`A B+ C D+?` becomes `A B  C D   `);
//! - Flink's `WITHIN INTERVAL '10' SECOND` after the pattern;
//! - `AFTER MATCH SKIP TO B` (the SQL standard's short form of `SKIP TO LAST B`);
//! - `RUNNING` / `FINAL` before a function call in `MEASURES` and `DEFINE` (the params keep
//!   them: the operator reads them).
//! - a subquery or a join in parentheses before `MATCH_RECOGNIZE`: a placeholder name stands
//!   in its place, and it is parsed on its own (`input.rs`).
//!
//! Each is remembered and blanked with spaces in the SQL given to the parser, so that every
//! line and column the parser reports is still true of the original script.

use anduin_types::{Diagnostic, Diagnostics};
use sqlparser::dialect::Dialect;
use sqlparser::tokenizer::{Location, Span, Token, TokenWithSpan, Tokenizer};

use super::input::{self, Input};
use super::pattern;
use crate::sql::source_text::{is_word, pos, with_depths, DepthToken};

/// The script as the parser gets it, and what was taken out of each `MATCH_RECOGNIZE`.
pub(crate) struct Prepared {
    pub sql: String,
    pub matches: Vec<RawMatch>,
    /// The tokens of the script as written, whitespace and comments included.
    pub tokens: Vec<TokenWithSpan>,
}

/// What the pass found in one `MATCH_RECOGNIZE (…)`.
#[derive(Debug)]
pub(crate) struct RawMatch {
    /// The `MATCH_RECOGNIZE` keyword.
    pub at: Location,
    /// Its parentheses.
    pub open: Location,
    pub close: Location,
    /// The tokens between them, without whitespace and comments, as in the original script,
    /// with their depth there (0: a clause keyword such as `DEFINE`).
    pub body: Vec<DepthToken>,
    /// The pattern between the parentheses of `PATTERN`, trimmed.
    pub pattern: Span,
    /// The pattern's variables, in order of first appearance.
    pub variables: Vec<String>,
    /// The `WITHIN` keyword and the tokens of its interval.
    pub within: Option<(Location, Vec<TokenWithSpan>)>,
    /// `AFTER MATCH SKIP TO var` (blanked): the keyword `AFTER` and the variable.
    pub skip_to: Option<(Location, String)>,
    /// `SUBSET U = (A, B), …` (blanked: sqlparser does not parse it): the text after the
    /// keyword, and the union variables' names (as [`pattern::var_name`] names them).
    pub subset: Option<(Span, Vec<String>)>,
    /// Its input when that is a subquery or a join in parentheses, not a table's name.
    pub input: Option<Input>,
}

/// The words that start a clause of `MATCH_RECOGNIZE`, which end the interval of `WITHIN`.
const CLAUSES: [&str; 9] = [
    "DEFINE",
    "SUBSET",
    "MEASURES",
    "PATTERN",
    "AFTER",
    "ONE",
    "ALL",
    "PARTITION",
    "ORDER",
];

/// Finds each `MATCH_RECOGNIZE (…)` in `src` and prepares the SQL for the parser. A script
/// that does not tokenize is handed on unchanged: the parser reports the error.
pub(crate) fn prepare(src: &str, dialect: &dyn Dialect) -> Result<Prepared, Diagnostics> {
    let Ok(all) = Tokenizer::new(dialect, src).tokenize_with_location() else {
        return Ok(Prepared {
            sql: src.to_string(),
            matches: Vec::new(),
            tokens: Vec::new(),
        });
    };
    let toks: Vec<TokenWithSpan> = all
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
        .cloned()
        .collect();
    let mut blanks = Vec::new();
    let mut matches = Vec::new();
    let mut diags = Diagnostics::default();
    let mut i = 0;
    while i < toks.len() {
        let opens = toks.get(i + 1).is_some_and(|t| t.token == Token::LParen);
        if !(is_word(&toks[i], "MATCH_RECOGNIZE") && opens) {
            i += 1;
            continue;
        }
        // `FROM (SELECT …) [AS s] MATCH_RECOGNIZE` and `FROM (a JOIN b ON …) MATCH_RECOGNIZE`,
        // which sqlparser does not parse: the input gets a placeholder (`input.rs`).
        let input = match input::before(&toks, i) {
            None => None,
            Some(Ok(span)) => Some(span),
            Some(Err(d)) => {
                diags.push(d);
                None
            }
        };
        let Some(close) = closing(&toks, i + 1) else {
            // Unbalanced: a clause inside a `(` left open says which; else the parser says
            // where.
            if let Some(d) = unclosed(&toks, i + 1) {
                diags.push(d);
            }
            break;
        };
        match scan(&toks[i..=close], &mut blanks) {
            Ok(Some(mut m)) => {
                m.input = input.map(|span| Input {
                    span,
                    sql: String::new(),
                    relation: None,
                });
                matches.push(m);
            }
            Ok(None) => {}
            Err(d) => diags.push(d),
        }
        i = close + 1;
    }
    if !diags.0.is_empty() {
        return Err(diags);
    }
    let mut lines = lines_of(src);
    blank_lines(&mut lines, &blanks);
    let spans: Vec<Span> = matches
        .iter()
        .filter_map(|m| m.input.as_ref().map(|i| i.span))
        .collect();
    for input in matches.iter_mut().filter_map(|m| m.input.as_mut()) {
        input.sql = input::text_of(&lines, input.span, &spans);
    }
    for span in &spans {
        input::put_placeholder(&mut lines, *span);
    }
    Ok(Prepared {
        sql: joined(&lines),
        matches,
        tokens: all,
    })
}

/// The index of the `)` closing the `(` at `open`.
fn closing(toks: &[TokenWithSpan], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (j, t) in toks.iter().enumerate().skip(open) {
        match t.token {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// The clause keywords that never stand inside an expression: one found inside a `(` of the
/// body shows that `(` left open.
const OPENING: [&str; 5] = ["DEFINE", "PATTERN", "MEASURES", "SUBSET", "PARTITION"];

/// In a `MATCH_RECOGNIZE (` at `open` whose parentheses do not balance: the `(` left open
/// before the first clause keyword found inside one (`PATTERN (A (B) DEFINE …`).
fn unclosed(toks: &[TokenWithSpan], open: usize) -> Option<Diagnostic> {
    let mut opened: Vec<(usize, &TokenWithSpan)> = Vec::new();
    for (j, t) in toks.iter().enumerate().skip(open) {
        match t.token {
            Token::LParen => opened.push((j, t)),
            Token::RParen => {
                opened.pop();
            }
            _ => {}
        }
        let [_, .., (at, left)] = opened.as_slice() else {
            continue;
        };
        let Some(word) = OPENING.iter().find(|w| is_word(t, w)) else {
            continue;
        };
        let of = at
            .checked_sub(1)
            .and_then(|k| toks.get(k))
            .filter(|b| OPENING.iter().any(|w| is_word(b, w)))
            .map_or(String::new(), |b| format!(" of {}", b.token));
        return Some(Diagnostic::error(
            pos(left.span.start),
            format!(
                "this `(`{of} is not closed before {word} (at {}:{}): MATCH_RECOGNIZE's clauses come one after the other, each `(` closed by a `)` before the next",
                t.span.start.line, t.span.start.column
            ),
        ));
    }
    None
}

/// The word at body index `j` (at depth 0), if it is one.
fn word_at(body: &[DepthToken], j: usize) -> Option<&TokenWithSpan> {
    body.get(j)
        .filter(|b| b.depth == 0 && matches!(b.tok.token, Token::Word(_)))
        .map(|b| &b.tok)
}

/// Clauses sqlparser would only say it expected `PATTERN` at: `ONE ROW PER MATCHES`, and
/// the standard's `INITIAL` / `SEEK` before `PATTERN`.
fn misworded(body: &[DepthToken], j: usize) -> Option<Diagnostic> {
    let top = |k: usize, w: &str| word_at(body, k).is_some_and(|t| is_word(t, w));
    let one = top(j, "ONE") && top(j + 1, "ROW");
    let all = top(j, "ALL") && top(j + 1, "ROWS");
    if (one || all) && top(j + 2, "PER") && !top(j + 3, "MATCH") {
        let wrong = body.get(j + 3)?;
        let rows = if one { "ONE ROW" } else { "ALL ROWS" };
        return Some(Diagnostic::error(
            pos(wrong.tok.span.start),
            format!(
                "`{rows} PER {}` is not a clause of MATCH_RECOGNIZE: write ONE ROW PER MATCH, or ALL ROWS PER MATCH [SHOW EMPTY MATCHES | OMIT EMPTY MATCHES | WITH UNMATCHED ROWS]",
                wrong.tok.token
            ),
        ));
    }
    for (w, what) in [
        (
            "INITIAL",
            "every match already starts at the row its attempt starts at, as INITIAL asks",
        ),
        (
            "SEEK",
            "a match starts at the row its attempt starts at, never at a later one",
        ),
    ] {
        if top(j, w) && top(j + 1, "PATTERN") {
            return Some(Diagnostic::error(
                pos(body[j].tok.span.start),
                format!("{w} before PATTERN is not supported in MATCH_RECOGNIZE ({what}): leave {w} out"),
            ));
        }
    }
    None
}

/// One `MATCH_RECOGNIZE ( … )`: `toks` runs from the keyword to the closing parenthesis.
/// `None` when it has no `PATTERN (…)` (the parser reports that).
fn scan(toks: &[TokenWithSpan], blanks: &mut Vec<Span>) -> Result<Option<RawMatch>, Diagnostic> {
    let (Some(kw), Some(open), Some(close)) = (toks.first(), toks.get(1), toks.last()) else {
        return Ok(None);
    };
    let inner = toks.get(2..toks.len() - 1).unwrap_or_default();
    let body = with_depths(inner.iter().cloned());
    let top = |j: usize, w: &str| {
        body.get(j)
            .is_some_and(|b| b.depth == 0 && is_word(&b.tok, w))
    };
    let mut pattern_found = None;
    let mut within = None;
    let mut skip_to = None;
    let mut subset = None;
    let mut j = 0;
    while j < body.len() {
        let b = &body[j];
        if let Some(d) = misworded(&body, j) {
            return Err(d);
        }
        if top(j, "SUBSET") {
            let stop = (j + 1..body.len())
                .find(|&k| CLAUSES.iter().any(|c| *c != "SUBSET" && top(k, c)))
                .unwrap_or(body.len());
            let items = body.get(j + 1..stop).unwrap_or_default();
            let (Some(first), Some(last)) = (items.first(), items.last()) else {
                return Err(Diagnostic::error(
                    pos(b.tok.span.start),
                    "SUBSET needs its union variables, such as SUBSET U = (A, B)",
                ));
            };
            let names = items
                .iter()
                .zip(items.iter().skip(1))
                .filter(|(n, eq)| n.depth == 0 && eq.tok.token == Token::Eq)
                .filter_map(|(n, _)| match &n.tok.token {
                    Token::Word(w) => Some(pattern::var_name(&w.value, w.quote_style)),
                    _ => None,
                })
                .collect();
            blanks.push(Span::new(b.tok.span.start, last.tok.span.end));
            subset = Some((Span::new(first.tok.span.start, last.tok.span.end), names));
            j = stop;
            continue;
        }
        if top(j, "AFTER") && top(j + 1, "MATCH") && top(j + 2, "SKIP") && top(j + 3, "TO") {
            if let Some(Token::Word(w)) = body.get(j + 4).map(|b| &b.tok.token) {
                let named = ["FIRST", "LAST", "NEXT"]
                    .iter()
                    .any(|k| w.quote_style.is_none() && w.value.eq_ignore_ascii_case(k));
                if !named {
                    skip_to = Some((
                        b.tok.span.start,
                        super::pattern::var_text(&w.value, w.quote_style),
                    ));
                    blanks.push(Span::new(b.tok.span.start, body[j + 4].tok.span.end));
                    j += 5;
                    continue;
                }
            }
        }
        if is_modifier(&body, j) {
            blanks.push(b.tok.span);
            j += 1;
            continue;
        }
        let opens = body
            .get(j + 1)
            .is_some_and(|n| n.tok.token == Token::LParen);
        if top(j, "PATTERN") && opens && pattern_found.is_none() {
            let end = (j + 2..body.len())
                .find(|&k| body[k].depth == 0 && body[k].tok.token == Token::RParen)
                .ok_or_else(|| {
                    Diagnostic::error(pos(b.tok.span.start), "PATTERN ( has no closing `)`")
                })?;
            let ptoks: Vec<TokenWithSpan> =
                body[j + 2..end].iter().map(|b| b.tok.clone()).collect();
            let variables = pattern::check(&ptoks, b.tok.span.start)?;
            for (k, t) in ptoks.iter().enumerate() {
                let permute = pattern::is_permute(t, ptoks.get(k + 1).map(|n| &n.token));
                if permute || !matches!(t.token, Token::Word(_)) {
                    blanks.push(t.span);
                }
            }
            let span = match (ptoks.first(), ptoks.last()) {
                (Some(f), Some(l)) => Span::new(f.span.start, l.span.end),
                _ => Span::empty(),
            };
            pattern_found = Some((span, variables));
            j = end + 1;
            if top(j, "WITHIN") {
                let w = &body[j];
                let stop = (j + 1..body.len())
                    .find(|&k| CLAUSES.iter().any(|c| top(k, c)))
                    .unwrap_or(body.len());
                let itoks: Vec<TokenWithSpan> =
                    body[j + 1..stop].iter().map(|b| b.tok.clone()).collect();
                let end = itoks.last().map_or(w.tok.span.end, |t| t.span.end);
                blanks.push(Span::new(w.tok.span.start, end));
                within = Some((w.tok.span.start, itoks));
                j = stop;
            }
            continue;
        }
        j += 1;
    }
    let Some((pattern, variables)) = pattern_found else {
        return Ok(None);
    };
    Ok(Some(RawMatch {
        at: kw.span.start,
        open: open.span.start,
        close: close.span.start,
        body,
        pattern,
        variables,
        within,
        skip_to,
        subset,
        input: None,
    }))
}

/// The aggregates a row pattern computes, by the names SQL (and Trino) call them.
pub const PATTERN_AGGREGATES: [&str; 24] = [
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "MAX_BY",
    "MIN_BY",
    "BOOL_AND",
    "BOOL_OR",
    "EVERY",
    "ANY_VALUE",
    "ARBITRARY",
    "COUNT_IF",
    "STDDEV",
    "STDDEV_SAMP",
    "STDDEV_POP",
    "VARIANCE",
    "VAR_SAMP",
    "VAR_POP",
    "VAR_POPULATION",
    "STRING_AGG",
    "LISTAGG",
    "APPROX_DISTINCT",
    "ARRAY_AGG",
];

/// The functions `RUNNING` and `FINAL` apply to besides the aggregates: navigation, and the
/// match's classifier and number.
const MODIFIED: [&str; 6] = [
    "FIRST",
    "LAST",
    "PREV",
    "NEXT",
    "CLASSIFIER",
    "MATCH_NUMBER",
];

/// `RUNNING` / `FINAL` before a function call (`FINAL LAST(D.ts)`), at any depth.
pub(crate) fn is_modifier(body: &[DepthToken], j: usize) -> bool {
    body.get(j)
        .is_some_and(|b| is_word(&b.tok, "RUNNING") || is_word(&b.tok, "FINAL"))
        && body.get(j + 1).is_some_and(|b| {
            MODIFIED
                .iter()
                .chain(&PATTERN_AGGREGATES)
                .any(|f| is_word(&b.tok, f))
        })
        && body
            .get(j + 2)
            .is_some_and(|b| b.tok.token == Token::LParen)
}

/// `src` as lines of chars.
fn lines_of(src: &str) -> Vec<Vec<char>> {
    src.split('\n').map(|l| l.chars().collect()).collect()
}

/// `lines` joined again.
pub(super) fn joined(lines: &[Vec<char>]) -> String {
    lines
        .iter()
        .map(|l| l.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `lines` with the characters of each span replaced by spaces (line breaks kept).
pub(super) fn blank_lines(lines: &mut [Vec<char>], spans: &[Span]) {
    for s in spans {
        let last = (lines.len() as u64).min(s.end.line);
        for line in s.start.line..=last {
            let Some(chars) = usize::try_from(line)
                .ok()
                .and_then(|l| l.checked_sub(1))
                .and_then(|l| lines.get_mut(l))
            else {
                continue;
            };
            let from = if line == s.start.line {
                s.start.column
            } else {
                1
            };
            let to = if line == s.end.line {
                s.end.column
            } else {
                u64::MAX
            };
            for (k, c) in chars.iter_mut().enumerate() {
                let col = k as u64 + 1;
                if col >= from && col < to && *c != '\r' {
                    *c = ' ';
                }
            }
        }
    }
}

impl RawMatch {
    /// Whether `loc` lies between the parentheses.
    pub(crate) fn contains(&self, loc: Location) -> bool {
        (self.open.line, self.open.column) < (loc.line, loc.column)
            && (loc.line, loc.column) < (self.close.line, self.close.column)
    }

    /// The index of the body token that starts at `loc`.
    pub(crate) fn token_at(&self, loc: Location) -> Option<usize> {
        self.body.iter().position(|b| b.tok.span.start == loc)
    }

    /// The index of the clause keyword `word` (at depth 0).
    pub(crate) fn keyword(&self, word: &str) -> Option<usize> {
        self.body
            .iter()
            .position(|b| b.depth == 0 && is_word(&b.tok, word))
    }

    /// The token at `i`.
    pub(crate) fn tok(&self, i: usize) -> Option<&TokenWithSpan> {
        self.body.get(i).map(|b| &b.tok)
    }

    /// Whether the token at `i` is the unquoted word `w`.
    pub(crate) fn is_word(&self, i: usize, w: &str) -> bool {
        self.tok(i).is_some_and(|t| is_word(t, w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::dialect::AnduinDialect;

    fn prepared(sql: &str) -> Prepared {
        prepare(sql, &AnduinDialect::default()).unwrap_or_else(|d| panic!("{d}"))
    }

    #[test]
    fn blanking_keeps_every_column_and_line() {
        let sql = "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts\n  PATTERN (A B+? {- C -})\n  DEFINE A AS true)";
        let err = prepare(sql, &AnduinDialect::default())
            .err()
            .map(|d| d.to_string());
        assert_eq!(err, None, "an exclusion passes");
        let sql = "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts\n  PATTERN (A B+? - C)\n  DEFINE A AS true)";
        let err = prepare(sql, &AnduinDialect::default())
            .err()
            .map(|d| d.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.starts_with("2:18: unexpected `-` in PATTERN")),
            "{err:?}"
        );
        let sql = "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES FINAL LAST(B.x) AS y\n  AFTER MATCH SKIP TO B PATTERN (A (B|C)+? D{2,}?) WITHIN INTERVAL '1' SECOND\n  DEFINE A AS true)";
        let p = prepared(sql);
        assert_eq!(p.sql.len(), sql.len());
        assert_eq!(p.sql.lines().count(), sql.lines().count());
        let second = p.sql.lines().nth(1).unwrap_or_default();
        assert_eq!(
            second,
            format!(
                "{}PATTERN (A  B C    D     ){}",
                " ".repeat(24),
                " ".repeat(27)
            )
        );
        assert!(
            p.sql
                .contains(&format!("MEASURES{}LAST(B.x) AS y", " ".repeat(7))),
            "{}",
            p.sql
        );
        let [m] = p.matches.as_slice() else {
            panic!("one match: {:?}", p.matches);
        };
        assert_eq!(m.variables, ["A", "B", "C", "D"]);
        assert_eq!(m.skip_to, Some((Location::new(2, 3), "B".to_string())));
        assert_eq!(
            m.within.as_ref().map(|(at, t)| (*at, t.len())),
            Some((Location::new(2, 52), 3))
        );
    }
}
