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
}

impl ExprError {
    /// An error at a known place in the expression text.
    pub fn at(line: u64, col: u64, message: impl Into<String>) -> Self {
        Self {
            line,
            col,
            message: message.into(),
        }
    }

    /// An error about the expression as a whole.
    pub fn whole(message: impl Into<String>) -> Self {
        Self::at(0, 0, message)
    }
}
