//! Positions in a query file and the diagnostics that point at them.

use std::fmt;

/// A 1-based line and column in a query file. Line 0 means "no position known" (for example
/// a graph read from JSON).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    /// 1-based line, or 0 when unknown.
    pub line: u32,
    /// 1-based column in characters, or 0 when unknown.
    pub col: u32,
}

impl Pos {
    /// A known position.
    pub fn new(line: u32, col: u32) -> Self {
        Self { line, col }
    }

    /// The position `n` characters to the right on the same line.
    pub fn right(self, n: usize) -> Self {
        if self.line == 0 {
            return self;
        }
        Self {
            line: self.line,
            col: self
                .col
                .saturating_add(u32::try_from(n).unwrap_or(u32::MAX)),
        }
    }

    /// Whether this is a real position.
    pub fn is_known(self) -> bool {
        self.line > 0
    }
}

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The query cannot run.
    Error,
    /// The query runs, but probably not as meant.
    Warning,
}

/// A message about a place in a query file: `FILE:LINE:COL: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// Where, in the query file.
    pub pos: Pos,
    /// What is wrong and, where possible, what was expected or what to do.
    pub message: String,
}

impl Diagnostic {
    /// An error at `pos`. User text quoted in `message` is abbreviated (see [`abbreviate`]).
    pub fn error(pos: Pos, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            pos,
            message: abbreviate(&message.into()),
        }
    }

    /// A warning at `pos`. User text quoted in `message` is abbreviated (see [`abbreviate`]).
    pub fn warning(pos: Pos, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            pos,
            message: abbreviate(&message.into()),
        }
    }

    /// Renders as `FILE:LINE:COL: message` (errors) or `FILE:LINE:COL: warning: message`.
    /// Long quoted text in the message is abbreviated, even if the message was set directly.
    pub fn render(&self, file: &str) -> String {
        let warn = match self.severity {
            Severity::Error => "",
            Severity::Warning => "warning: ",
        };
        if self.pos.is_known() {
            format!(
                "{file}:{}:{}: {warn}{}",
                self.pos.line,
                self.pos.col,
                abbreviate(&self.message)
            )
        } else {
            format!("{file}: {warn}{}", abbreviate(&self.message))
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.pos.line, self.pos.col, self.message)
    }
}

/// The most characters of one piece of quoted text (between `` ` `` or `"`), or of one word,
/// that a message repeats.
pub const QUOTED_MAX: usize = 80;

/// `message` with each piece of quoted text, and each word, longer than [`QUOTED_MAX`]
/// characters cut to its start, `…` and its length: a query can hold a 10 MB identifier, and
/// a message should not repeat it whole.
///
/// # Examples
/// ```
/// let long = "x".repeat(1000);
/// let m = anduin_types::abbreviate(&format!("unknown column `{long}`: stream `s` has a"));
/// assert_eq!(m, format!("unknown column `{}…` (1000 characters): stream `s` has a", "x".repeat(79)));
/// assert_eq!(anduin_types::abbreviate(&m), m);
/// ```
pub fn abbreviate(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(4 * QUOTED_MAX));
    let mut rest = message;
    while let Some(c) = rest.chars().next() {
        let quoted = (c == '`' || c == '"')
            .then(|| rest.get(1..).and_then(|r| r.find(c)).map(|end| end + 1))
            .flatten();
        let (piece, after) = match quoted {
            // A quoted piece, quotes included.
            Some(end) => rest.split_at(end + 1),
            // A word: up to the next whitespace or quote.
            None if c.is_whitespace() => rest.split_at(c.len_utf8()),
            None => {
                let end = rest
                    .char_indices()
                    .skip(1)
                    .find(|(_, ch)| ch.is_whitespace() || *ch == '`' || *ch == '"')
                    .map_or(rest.len(), |(i, _)| i);
                rest.split_at(end)
            }
        };
        let inner = match quoted {
            Some(_) => piece.get(1..piece.len() - 1).unwrap_or_default(),
            None => piece,
        };
        let chars = inner.chars().count();
        if chars > QUOTED_MAX {
            // With `…`, QUOTED_MAX characters: abbreviating again changes nothing.
            let head: String = inner.chars().take(QUOTED_MAX - 1).collect();
            match quoted {
                Some(_) => out.push_str(&format!("{c}{head}…{c} ({chars} characters)")),
                None => out.push_str(&format!("{head}… ({chars} characters)")),
            }
        } else {
            out.push_str(piece);
        }
        rest = after;
    }
    out
}

/// The diagnostics of one check, in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Adds one.
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    /// Adds all of `other`.
    pub fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }

    /// Whether any of them is an error.
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(|d| d.severity == Severity::Error)
    }

    /// The errors only.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter().filter(|d| d.severity == Severity::Error)
    }

    /// Sorts by position (stable, so equal positions keep their order).
    pub fn sort(&mut self) {
        self.0.sort_by_key(|d| d.pos);
    }

    /// Renders every diagnostic, one per line, for `file`.
    pub fn render(&self, file: &str) -> String {
        let mut out = String::new();
        for d in &self.0 {
            out.push_str(&d.render(file));
            out.push('\n');
        }
        out
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Self(vec![d])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_words_and_quotes_are_cut_and_short_ones_kept() {
        let long = "é".repeat(200);
        let m = abbreviate(&format!(
            "syntax error: found: {long} here, `ok` and \"{long}\""
        ));
        let head = "é".repeat(QUOTED_MAX - 1);
        assert_eq!(
            m,
            format!("syntax error: found: {head}… (200 characters) here, `ok` and \"{head}…\" (200 characters)")
        );
        assert_eq!(
            abbreviate("expected a closing `\"` here"),
            "expected a closing `\"` here"
        );
        let d = Diagnostic::error(Pos::new(1, 2), format!("unknown type `{long}`"));
        assert!(d.render("q.flow").len() < 300);
        assert_eq!(abbreviate(&m), m, "abbreviating twice changes nothing");
    }
}
