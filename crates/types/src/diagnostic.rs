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
    /// An error at `pos`.
    pub fn error(pos: Pos, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            pos,
            message: message.into(),
        }
    }

    /// A warning at `pos`.
    pub fn warning(pos: Pos, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            pos,
            message: message.into(),
        }
    }

    /// Renders as `FILE:LINE:COL: message` (errors) or `FILE:LINE:COL: warning: message`.
    pub fn render(&self, file: &str) -> String {
        let warn = match self.severity {
            Severity::Error => "",
            Severity::Warning => "warning: ",
        };
        if self.pos.is_known() {
            format!(
                "{file}:{}:{}: {warn}{}",
                self.pos.line, self.pos.col, self.message
            )
        } else {
            format!("{file}: {warn}{}", self.message)
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.pos.line, self.pos.col, self.message)
    }
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
