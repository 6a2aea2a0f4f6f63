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
    /// A function ran out of resources on a row (a user-defined function's fuel: a runaway
    /// loop): the query stops whatever `on_error` says.
    #[error("{}", exhausted_message(.0))]
    Exhausted(Box<BadRow>),
    /// Processing failed (a schema problem, a bug).
    #[error("operator \"{operator}\": {message}")]
    Execution {
        /// The operator's name.
        operator: String,
        /// What failed.
        message: String,
    },
    /// Something anduin itself got wrong (a broken invariant), not the user's query or data.
    #[error("operator \"{operator}\": {message}; this is a bug in anduin, please report it")]
    Internal {
        /// The operator's name.
        operator: String,
        /// What went wrong.
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
    /// A bug in anduin, found in operator `operator`.
    pub fn internal(operator: impl Into<String>, message: impl Into<String>) -> Self {
        OperatorError::Internal {
            operator: operator.into(),
            message: message.into(),
        }
    }

    /// Whether this error is a bug in anduin rather than a problem of the query or its data.
    pub fn is_internal(&self) -> bool {
        matches!(self, OperatorError::Internal { .. })
    }

    /// Whether this error is only a consequence of another task's failure.
    pub fn is_secondary(&self) -> bool {
        matches!(self, OperatorError::DownstreamGone { .. })
    }
}

/// A keyed table's error names the operator already: it becomes an execution error of that
/// operator, its message the table's problem (which says what to do).
impl From<anduin_state::TableError> for OperatorError {
    fn from(e: anduin_state::TableError) -> Self {
        OperatorError::Execution {
            operator: e.operator,
            message: e.problem.to_string(),
        }
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

/// What [`OperatorError::Exhausted`] says.
fn exhausted_message(r: &BadRow) -> String {
    format!(
        "operator \"{}\": {}{} ran out of resources{}: {} (the query stops whatever `on_error` says: a runaway function is no row's fault, and would take as long on every row)",
        r.operator,
        r.expression.as_deref().unwrap_or("an expression"),
        r.at.as_ref().map(|a| format!(" at {a}")).unwrap_or_default(),
        r.origin
            .as_ref()
            .map(|(s, l)| format!(" on the row read from {s}:{l}"))
            .unwrap_or_else(|| " on a row".into()),
        r.reason
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bug_in_anduin_says_so_and_is_told_apart_from_bad_input() {
        let e = OperatorError::internal("w", "the join has no buffered rows to gather from");
        assert!(e.is_internal());
        assert_eq!(
            e.to_string(),
            "operator \"w\": the join has no buffered rows to gather from; this is a bug in anduin, please report it"
        );
        let bad = OperatorError::Execution {
            operator: "w".into(),
            message: "x".into(),
        };
        assert!(!bad.is_internal());
    }
}
