//! Errors of operators: while building them, while running them, and when changing them.

use std::path::PathBuf;

/// An operator failed to start or to process its input. Each variant names the operator.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OperatorError {
    /// The operator cannot start as configured (a missing input file, an unwritable output).
    #[error("operator \"{operator}\": {message}")]
    Config {
        /// The operator's name.
        operator: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// Reading or writing a file failed.
    #[error("operator \"{operator}\": {path}: {source}")]
    Io {
        /// The operator's name.
        operator: String,
        /// The file, or `-` for stdin/stdout.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A malformed input record, with `on_error = "fail"`.
    #[error("operator \"{operator}\": malformed record at {source_name}:{line}: {reason} (the query stops because of `param on_error = \"fail\"`)")]
    BadRecord {
        /// The operator's name.
        operator: String,
        /// The input file (or `-`).
        source_name: String,
        /// 1-based line of the record.
        line: u64,
        /// Why it was rejected.
        reason: String,
    },
    /// An expression failed on a row, with `on_error = "fail"`.
    #[error("{0}")]
    BadRow(Box<BadRow>),
    /// Processing failed (a schema problem, a bug).
    #[error("operator \"{operator}\": {message}")]
    Execution {
        /// The operator's name.
        operator: String,
        /// What failed.
        message: String,
    },
    /// The next task stopped: there is nobody to send to. Not a cause of its own.
    #[error("downstream of operator \"{operator}\" has stopped")]
    DownstreamGone {
        /// The operator's name.
        operator: String,
    },
}

impl OperatorError {
    /// Whether this error is only a consequence of another task's failure.
    pub fn is_secondary(&self) -> bool {
        matches!(self, OperatorError::DownstreamGone { .. })
    }
}

/// A run-time parameter change was rejected; the operator is unchanged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// The parameter cannot be changed while running.
    #[error("param `{param}` of operator \"{operator}\" cannot be changed while running (adjustable: {adjustable})")]
    NotAdjustable {
        /// The operator's name.
        operator: String,
        /// The param asked for.
        param: String,
        /// The params that can be changed, comma separated (may be empty).
        adjustable: String,
    },
    /// The new value is not valid.
    #[error("param `{param}` of operator \"{operator}\": {message}")]
    Invalid {
        /// The operator's name.
        operator: String,
        /// The param.
        param: String,
        /// Why the value is rejected.
        message: String,
    },
}

/// A row on which an expression failed, stopping the query (`on_error = "fail"`).
#[derive(Debug, thiserror::Error)]
#[error("operator \"{operator}\": {} failed{}{}: {reason} (the query stops because of `on_error = \"fail\"`; without it the row would go to the dead letters and the query would go on)",
    expression.as_deref().unwrap_or("an expression"),
    at.as_ref().map(|a| format!(" at {a}")).unwrap_or_default(),
    origin.as_ref().map(|(s, l)| format!(" on the row read from {s}:{l}")).unwrap_or_else(|| " on a row".into()))]
pub struct BadRow {
    /// The operator's name.
    pub operator: String,
    /// The expression, with its role ("column `q` `a / b`").
    pub expression: Option<String>,
    /// Where the expression is in the query, `FILE:LINE:COL`.
    pub at: Option<String>,
    /// The input file and line the row was read from, when known.
    pub origin: Option<(String, u64)>,
    /// The expression's error.
    pub reason: String,
}
