//! Tokens of the `.flow` language.

use anduin_types::{Diagnostic, Pos};

use crate::Text;

/// A token and where it starts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    pub kind: TokenKind,
    pub pos: Pos,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TokenKind {
    /// A word: keywords, attribute and parameter names, `true`/`false`.
    Ident(String),
    /// A quoted string, escapes resolved.
    Str(Text),
    Int(i64),
    Float(f64),
    Eq,
    Comma,
    LBrace,
    RBrace,
    /// Any other character: the parser says what it expected instead.
    Other(char),
    Eof,
}

impl TokenKind {
    /// How the token reads in a message: `` `=` ``, `` `<` ``, `end of file`.
    pub fn describe(&self) -> String {
        match self {
            TokenKind::Ident(s) => format!("`{s}`"),
            TokenKind::Str(t) => format!("string \"{}\"", abbreviate(t.as_str())),
            TokenKind::Int(v) => format!("number `{v}`"),
            TokenKind::Float(v) => format!("number `{v}`"),
            TokenKind::Eq => "`=`".into(),
            TokenKind::Comma => "`,`".into(),
            TokenKind::LBrace => "`{`".into(),
            TokenKind::RBrace => "`}`".into(),
            TokenKind::Other(c) => format!("`{c}`"),
            TokenKind::Eof => "end of file".into(),
        }
    }
}

fn abbreviate(s: &str) -> String {
    if s.chars().count() > 24 {
        let head: String = s.chars().take(21).collect();
        format!("{head}...")
    } else {
        s.to_string()
    }
}

/// Splits `src` into tokens; the last one is always `Eof`.
pub(crate) fn lex(src: &str) -> Result<Vec<Token>, Diagnostic> {
    let mut lx = Lexer {
        chars: src.chars().collect(),
        i: 0,
        line: 1,
        col: 1,
    };
    let mut out = Vec::new();
    loop {
        lx.skip_trivia();
        let pos = lx.pos();
        let Some(c) = lx.peek(0) else {
            out.push(Token {
                kind: TokenKind::Eof,
                pos,
            });
            return Ok(out);
        };
        let kind = match c {
            '=' => {
                lx.bump();
                TokenKind::Eq
            }
            ',' => {
                lx.bump();
                TokenKind::Comma
            }
            '{' => {
                lx.bump();
                TokenKind::LBrace
            }
            '}' => {
                lx.bump();
                TokenKind::RBrace
            }
            '"' => TokenKind::Str(lx.string(pos)?),
            c if c.is_ascii_digit()
                || (c == '-' && lx.peek(1).is_some_and(|d| d.is_ascii_digit())) =>
            {
                lx.number(pos)?
            }
            c if c.is_alphabetic() || c == '_' => {
                let mut word = String::new();
                while let Some(c) = lx.peek(0) {
                    if c.is_alphanumeric() || c == '_' || c == '-' || c == '.' {
                        word.push(c);
                        lx.bump();
                    } else {
                        break;
                    }
                }
                TokenKind::Ident(word)
            }
            other => {
                lx.bump();
                TokenKind::Other(other)
            }
        };
        out.push(Token { kind, pos });
    }
}

struct Lexer {
    chars: Vec<char>,
    i: usize,
    line: u32,
    col: u32,
}

impl Lexer {
    fn pos(&self) -> Pos {
        Pos::new(self.line, self.col)
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.i + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek(0)?;
        self.i += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn skip_trivia(&mut self) {
        while let Some(c) = self.peek(0) {
            if c.is_whitespace() {
                self.bump();
            } else if c == '#' || (c == '/' && self.peek(1) == Some('/')) {
                while let Some(c) = self.peek(0) {
                    if c == '\n' {
                        break;
                    }
                    self.bump();
                }
            } else {
                break;
            }
        }
    }

    /// A string starting at `"`: either `"…"` on one line, or `"""…"""` over several.
    fn string(&mut self, start: Pos) -> Result<Text, Diagnostic> {
        let triple = self.peek(1) == Some('"') && self.peek(2) == Some('"');
        let quotes = if triple { 3 } else { 1 };
        for _ in 0..quotes {
            self.bump();
        }
        let mut value = String::new();
        let mut positions = Vec::new();
        loop {
            let pos = self.pos();
            match self.peek(0) {
                None => {
                    return Err(Diagnostic::error(
                        start,
                        "unterminated string: expected a closing `\"`",
                    ))
                }
                Some('\n') if !triple => {
                    return Err(Diagnostic::error(
                        start,
                        "unterminated string: expected a closing `\"` before the end of the line (use \"\"\"…\"\"\" for text over several lines)",
                    ))
                }
                Some('"') if !triple => {
                    self.bump();
                    break;
                }
                Some('"') if self.peek(1) == Some('"') && self.peek(2) == Some('"') => {
                    for _ in 0..3 {
                        self.bump();
                    }
                    break;
                }
                Some('\\') => {
                    self.bump();
                    let c = match self.bump() {
                        Some('n') => '\n',
                        Some('t') => '\t',
                        Some('r') => '\r',
                        Some('"') => '"',
                        Some('\\') => '\\',
                        Some(other) => {
                            return Err(Diagnostic::error(
                                pos,
                                format!("unknown escape `\\{other}`: expected one of \\n \\t \\r \\\" \\\\"),
                            ))
                        }
                        None => {
                            return Err(Diagnostic::error(
                                start,
                                "unterminated string: expected a closing `\"`",
                            ))
                        }
                    };
                    value.push(c);
                    positions.push(pos);
                }
                Some(c) => {
                    self.bump();
                    value.push(c);
                    positions.push(pos);
                }
            }
        }
        Ok(Text::with_positions(value, positions, start))
    }

    fn number(&mut self, start: Pos) -> Result<TokenKind, Diagnostic> {
        let mut s = String::new();
        if self.peek(0) == Some('-') {
            s.push('-');
            self.bump();
        }
        let mut float = false;
        while let Some(c) = self.peek(0) {
            if c.is_ascii_digit() || c == '_' {
                if c != '_' {
                    s.push(c);
                }
                self.bump();
            } else if (c == '.' || c == 'e' || c == 'E') && !float {
                float = true;
                s.push(c);
                self.bump();
                if (c == 'e' || c == 'E') && matches!(self.peek(0), Some('-') | Some('+')) {
                    s.extend(self.bump());
                }
            } else {
                break;
            }
        }
        if let Some(c) = self.peek(0).filter(|c| c.is_alphabetic()) {
            return Err(Diagnostic::error(
                start,
                format!("unexpected `{c}` after number `{s}`: quote values with units, as in \"{s}{c}…\""),
            ));
        }
        if float {
            s.parse()
                .map(TokenKind::Float)
                .map_err(|_| Diagnostic::error(start, format!("malformed number `{s}`")))
        } else {
            s.parse().map(TokenKind::Int).map_err(|_| {
                Diagnostic::error(start, format!("integer `{s}` does not fit in 64 bits"))
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<TokenKind> {
        lex(src)
            .expect("lexes")
            .into_iter()
            .map(|t| t.kind)
            .collect()
    }

    #[test]
    fn lexes_a_param_line_with_positions() {
        let toks = lex("  param condition = \"x < 1\" # note\n}").expect("lexes");
        assert_eq!(toks[0].kind, TokenKind::Ident("param".into()));
        assert_eq!(toks[0].pos, Pos::new(1, 3));
        assert_eq!(toks[2].kind, TokenKind::Eq);
        assert_eq!(toks[2].pos, Pos::new(1, 19));
        let TokenKind::Str(t) = &toks[3].kind else {
            panic!("expected a string, got {:?}", toks[3].kind)
        };
        assert_eq!(t.as_str(), "x < 1");
        assert_eq!(t.pos_at_byte(2), Pos::new(1, 24));
        assert_eq!(toks[4].kind, TokenKind::RBrace);
        assert_eq!(toks[4].pos, Pos::new(2, 1));
    }

    #[test]
    fn lexes_numbers_escapes_and_other_characters() {
        assert_eq!(
            kinds("4 -2 1.5 < \"a\\\"b\""),
            vec![
                TokenKind::Int(4),
                TokenKind::Int(-2),
                TokenKind::Float(1.5),
                TokenKind::Other('<'),
                TokenKind::Str(Text::unplaced("a\"b")),
                TokenKind::Eof
            ]
        );
    }

    #[test]
    fn triple_quoted_strings_span_lines_and_keep_positions() {
        let toks = lex("\"\"\"a\n  b\"\"\"").expect("lexes");
        let TokenKind::Str(t) = &toks[0].kind else {
            panic!("expected a string")
        };
        assert_eq!(t.as_str(), "a\n  b");
        assert_eq!(t.pos_at_byte(4), Pos::new(2, 3));
    }

    #[test]
    fn an_unterminated_string_points_at_its_start() {
        let err = lex("x = \"abc\ny").expect_err("must fail");
        assert_eq!(err.pos, Pos::new(1, 5));
        assert!(err.message.starts_with("unterminated string"));
    }
}
