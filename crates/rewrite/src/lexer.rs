//! Tokens of the rule language and of the compact graph notation (they share one lexer).
//!
//! Identifiers are `[A-Za-z_][A-Za-z0-9_-]*` (so `stream-selector` is one identifier);
//! strings are double-quoted with `\"` and `\\` escapes; numbers are `-?digits[.digits]`;
//! `#` starts a comment to the end of the line; a placement `@{…}` is one token holding the
//! text between the braces.

use crate::error::{Pos, SyntaxError};

/// A token kind.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    Ident(String),
    Str(String),
    Num(String),
    /// The text inside `@{…}`.
    Placement(String),
    Assign,
    Arrow,
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Comma,
    Colon,
    Semi,
    Pipe,
    Star,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Eof,
}

impl Tok {
    /// How the token is named in "expected …, found …" messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Str(s) => format!("string {s:?}"),
            Tok::Num(s) => format!("number {s}"),
            Tok::Placement(s) => format!("`@{{{s}}}`"),
            Tok::Assign => "`:=`".into(),
            Tok::Arrow => "`=>`".into(),
            Tok::LParen => "`(`".into(),
            Tok::RParen => "`)`".into(),
            Tok::LBrace => "`{`".into(),
            Tok::RBrace => "`}`".into(),
            Tok::LBracket => "`[`".into(),
            Tok::RBracket => "`]`".into(),
            Tok::Comma => "`,`".into(),
            Tok::Colon => "`:`".into(),
            Tok::Semi => "`;`".into(),
            Tok::Pipe => "`|`".into(),
            Tok::Star => "`*`".into(),
            Tok::Eq => "`=`".into(),
            Tok::Ne => "`!=`".into(),
            Tok::Lt => "`<`".into(),
            Tok::Le => "`<=`".into(),
            Tok::Gt => "`>`".into(),
            Tok::Ge => "`>=`".into(),
            Tok::Eof => "the end of the text".into(),
        }
    }
}

/// A token and where it starts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub pos: Pos,
}

/// How deep rules and graphs may nest (parentheses, braces, `not`s in a row): the parsers
/// recurse once per level, and a deeper text is refused rather than overflow the stack.
pub(crate) const MAX_NESTING: usize = 256;

/// The first place where `tokens` nest deeper than [`MAX_NESTING`], if any.
fn too_deep(tokens: &[Token]) -> Option<Pos> {
    let (mut depth, mut nots) = (0usize, 0usize);
    for t in tokens {
        match &t.tok {
            Tok::LParen | Tok::LBrace => depth += 1,
            Tok::RParen | Tok::RBrace => depth = depth.saturating_sub(1),
            _ => {}
        }
        nots = match &t.tok {
            Tok::Ident(w) if w == "not" => nots + 1,
            _ => 0,
        };
        if depth + nots > MAX_NESTING {
            return Some(t.pos);
        }
    }
    None
}

/// Splits `text` into tokens, ending with [`Tok::Eof`].
pub(crate) fn lex(file: &str, text: &str) -> Result<Vec<Token>, SyntaxError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let err = |pos: Pos, message: String| SyntaxError {
        file: file.to_string(),
        pos,
        message,
    };
    while let Some(&c) = chars.get(i) {
        let pos = Pos { line, col };
        let next = chars.get(i + 1).copied();
        // Advances over `n` characters of the current line.
        let take = |n: usize, i: &mut usize, col: &mut u32| {
            *i += n;
            *col += n as u32;
        };
        if c == '\n' {
            i += 1;
            line += 1;
            col = 1;
            continue;
        }
        if c.is_whitespace() {
            take(1, &mut i, &mut col);
            continue;
        }
        if c == '#' {
            while chars.get(i).is_some_and(|c| *c != '\n') {
                take(1, &mut i, &mut col);
            }
            continue;
        }
        let two = |a: char, b: char| c == a && next == Some(b);
        let (tok, len) = if two(':', '=') {
            (Tok::Assign, 2)
        } else if two('=', '>') {
            (Tok::Arrow, 2)
        } else if two('!', '=') {
            (Tok::Ne, 2)
        } else if two('<', '=') {
            (Tok::Le, 2)
        } else if two('>', '=') {
            (Tok::Ge, 2)
        } else if c == '@' {
            if next != Some('{') {
                return Err(err(
                    pos,
                    "expected `{` after `@` (a placement `@{p1}`)".into(),
                ));
            }
            let start = i + 2;
            let Some(end) = (start..chars.len()).find(|k| chars.get(*k) == Some(&'}')) else {
                return Err(err(pos, "expected `}` closing the placement `@{`".into()));
            };
            let inner: String = chars.get(start..end).unwrap_or_default().iter().collect();
            if inner.contains('\n') {
                return Err(err(
                    pos,
                    "expected `}` closing the placement on its line".into(),
                ));
            }
            (Tok::Placement(inner.trim().to_string()), end + 1 - i)
        } else if c == '"' {
            let mut s = String::new();
            let mut k = i + 1;
            loop {
                match chars.get(k) {
                    None | Some('\n') => {
                        return Err(err(pos, "expected `\"` closing the string".into()))
                    }
                    Some('"') => break,
                    Some('\\') => {
                        match chars.get(k + 1) {
                            Some(e @ ('"' | '\\')) => s.push(*e),
                            Some('n') => s.push('\n'),
                            _ => {
                                let at = Pos {
                                    line,
                                    col: col + (k - i) as u32,
                                };
                                return Err(err(
                                    at,
                                    "expected `\\\"`, `\\\\` or `\\n` after `\\` in a string"
                                        .into(),
                                ));
                            }
                        }
                        k += 2;
                    }
                    Some(ch) => {
                        s.push(*ch);
                        k += 1;
                    }
                }
            }
            (Tok::Str(s), k + 1 - i)
        } else if c.is_ascii_digit() || (c == '-' && next.is_some_and(|n| n.is_ascii_digit())) {
            let mut k = i + 1;
            while chars.get(k).is_some_and(|c| c.is_ascii_digit()) {
                k += 1;
            }
            if chars.get(k) == Some(&'.') && chars.get(k + 1).is_some_and(|c| c.is_ascii_digit()) {
                k += 1;
                while chars.get(k).is_some_and(|c| c.is_ascii_digit()) {
                    k += 1;
                }
            }
            let s: String = chars.get(i..k).unwrap_or_default().iter().collect();
            (Tok::Num(s), k - i)
        } else if c.is_ascii_alphabetic() || c == '_' {
            let mut k = i + 1;
            while chars
                .get(k)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            {
                k += 1;
            }
            let s: String = chars.get(i..k).unwrap_or_default().iter().collect();
            (Tok::Ident(s), k - i)
        } else {
            let tok = match c {
                '(' => Tok::LParen,
                ')' => Tok::RParen,
                '{' => Tok::LBrace,
                '}' => Tok::RBrace,
                '[' => Tok::LBracket,
                ']' => Tok::RBracket,
                ',' => Tok::Comma,
                ':' => Tok::Colon,
                ';' => Tok::Semi,
                '|' => Tok::Pipe,
                '*' => Tok::Star,
                '=' => Tok::Eq,
                '<' => Tok::Lt,
                '>' => Tok::Gt,
                other => {
                    return Err(err(
                        pos,
                        format!(
                            "expected a name, a string, a number or punctuation, found {other:?}"
                        ),
                    ))
                }
            };
            (tok, 1)
        };
        out.push(Token { tok, pos });
        take(len, &mut i, &mut col);
    }
    out.push(Token {
        tok: Tok::Eof,
        pos: Pos { line, col },
    });
    if let Some(pos) = too_deep(&out) {
        return Err(err(
            pos,
            format!("nested more than {MAX_NESTING} levels deep (parentheses, braces and `not`s in a row): split the rule"),
        ));
    }
    Ok(out)
}

/// A cursor over tokens with the helpers both parsers use.
pub(crate) struct Cursor {
    file: String,
    toks: Vec<Token>,
    at: usize,
}

impl Cursor {
    pub(crate) fn new(file: &str, text: &str) -> Result<Self, SyntaxError> {
        Ok(Self {
            file: file.to_string(),
            toks: lex(file, text)?,
            at: 0,
        })
    }

    /// The current token (the last one is always `Eof`).
    pub(crate) fn peek(&self) -> &Tok {
        self.peek_at(0)
    }

    /// The token `n` ahead of the current one.
    pub(crate) fn peek_at(&self, n: usize) -> &Tok {
        self.toks
            .get(self.at + n)
            .or(self.toks.last())
            .map(|t| &t.tok)
            .unwrap_or(&Tok::Eof)
    }

    /// Where the current token starts.
    pub(crate) fn pos(&self) -> Pos {
        self.toks
            .get(self.at)
            .or(self.toks.last())
            .map(|t| t.pos)
            .unwrap_or_default()
    }

    /// Moves past the current token and returns it.
    pub(crate) fn bump(&mut self) -> Tok {
        let t = self.peek().clone();
        if self.at + 1 < self.toks.len() {
            self.at += 1;
        }
        t
    }

    /// Moves past the current token if it is `tok`.
    pub(crate) fn eat(&mut self, tok: &Tok) -> bool {
        if self.peek() == tok {
            self.bump();
            true
        } else {
            false
        }
    }

    /// An error at the current token: "expected {what}, found {token}".
    pub(crate) fn expected(&self, what: &str) -> SyntaxError {
        self.error_at(
            self.pos(),
            format!("expected {what}, found {}", self.peek().describe()),
        )
    }

    /// An error at a position.
    pub(crate) fn error_at(&self, pos: Pos, message: String) -> SyntaxError {
        SyntaxError {
            file: self.file.clone(),
            pos,
            message,
        }
    }

    /// Consumes `tok` or fails with "expected {what}".
    pub(crate) fn expect(&mut self, tok: &Tok, what: &str) -> Result<(), SyntaxError> {
        if self.eat(tok) {
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    /// Consumes an identifier or fails with "expected {what}".
    pub(crate) fn ident(&mut self, what: &str) -> Result<String, SyntaxError> {
        match self.peek() {
            Tok::Ident(s) => {
                let s = s.clone();
                self.bump();
                Ok(s)
            }
            _ => Err(self.expected(what)),
        }
    }

    /// The names of all identifiers directly followed by `:=` (the explicitly named operators).
    pub(crate) fn defined_names(&self) -> Vec<String> {
        self.toks
            .windows(2)
            .filter_map(|w| match w {
                [Token {
                    tok: Tok::Ident(n), ..
                }, Token {
                    tok: Tok::Assign, ..
                }] => Some(n.clone()),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Result<Vec<Tok>, SyntaxError> {
        Ok(lex("t", text)?.into_iter().map(|t| t.tok).collect())
    }

    #[test]
    fn text_nested_deeper_than_the_limit_is_refused_not_overflowing_the_stack() {
        let nots = format!("f := filter [{} stateless(f)] => f", "not ".repeat(3000));
        let e = lex("deep.rules", &nots).expect_err("too deep");
        assert!(e.to_string().starts_with("deep.rules:1:"), "{e}");
        assert!(e.message.contains("nested more than 256 levels"), "{e}");
        let parens = format!("{}x{}", "(".repeat(300), ")".repeat(300));
        assert!(lex("t", &parens).is_err());
        let fine = format!("{}x{}", "(".repeat(200), ")".repeat(200));
        assert!(lex("t", &fine).is_ok());
    }

    #[test]
    fn names_may_hold_dashes_and_placements_are_one_token() -> Result<(), SyntaxError> {
        assert_eq!(
            kinds("s := stream-selector@{p#} # comment\n")?,
            vec![
                Tok::Ident("s".into()),
                Tok::Assign,
                Tok::Ident("stream-selector".into()),
                Tok::Placement("p#".into()),
                Tok::Eof
            ]
        );
        Ok(())
    }

    #[test]
    fn comparisons_numbers_and_strings_are_told_apart() -> Result<(), SyntaxError> {
        assert_eq!(
            kinds(r#">= -2.5 "a\"b" != =>"#)?,
            vec![
                Tok::Ge,
                Tok::Num("-2.5".into()),
                Tok::Str("a\"b".into()),
                Tok::Ne,
                Tok::Arrow,
                Tok::Eof
            ]
        );
        Ok(())
    }

    #[test]
    fn an_unclosed_string_is_reported_at_its_start() {
        let err = lex("rules.txt", "x\n  \"abc").err();
        assert_eq!(
            err.map(|e| e.to_string()),
            Some("rules.txt:2:3: expected `\"` closing the string".into())
        );
    }
}
