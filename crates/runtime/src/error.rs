//! Why a run failed.

use anduin_operators::OperatorError;

/// A run failed to start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// An operator could not be created (a missing input file, an unwritable output): nothing
    /// ran.
    #[error("cannot start: {0}")]
    Start(OperatorError),
    /// An operator failed while running; the query stopped.
    #[error("{0}")]
    Operator(OperatorError),
    /// A task panicked: a bug in anduin.
    #[error(
        "task {task} ({operators}) panicked: {message}; this is a bug in anduin, please report it"
    )]
    Panicked {
        /// The task's index in the physical plan.
        task: usize,
        /// The operators of the task.
        operators: String,
        /// The panic message.
        message: String,
    },
    /// A thread could not be started.
    #[error("cannot start a thread for task {task}: {cause}")]
    Spawn {
        /// The task's index.
        task: usize,
        /// The OS error.
        cause: std::io::Error,
    },
}
