//! Errors of expression compilation and evaluation.

/// A problem with an expression, located in the expression's own text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ExprError {
    /// 1-based line in the expression text, or 0 when the place is unknown.
    pub line: u64,
    /// 1-based column in the expression text, or 0 when the place is unknown.
    pub col: u64,
    /// What is wrong, and what was expected.
    pub message: String,
    /// Whose fault it is, and so whether a row it fails on can go to the dead letters.
    pub kind: ExprErrorKind,
}

/// What an evaluation error says about the row it failed on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExprErrorKind {
    /// The expression fails on the row's values (a division by zero, an overflow, a
    /// function that traps on them): the row may go to the dead letters and the query go
    /// on. Every compile-time error is of this kind too.
    #[default]
    Row,
    /// A function ran out of the resources a call gets (a user-defined function's fuel: a
    /// runaway loop). No row's fault that the dead letters could hold, and it would cost as
    /// long on every row: the query stops, naming the function, whatever `on_error` says.
    Exhausted,
}

impl ExprError {
    /// An error at a known place in the expression text.
    pub fn at(line: u64, col: u64, message: impl Into<String>) -> Self {
        Self {
            line,
            col,
            message: message.into(),
            kind: ExprErrorKind::Row,
        }
    }

    /// Whether a function ran out of resources ([`ExprErrorKind::Exhausted`]).
    pub fn is_exhausted(&self) -> bool {
        self.kind == ExprErrorKind::Exhausted
    }

    /// An error about the expression as a whole.
    pub fn whole(message: impl Into<String>) -> Self {
        Self::at(0, 0, message)
    }
}
