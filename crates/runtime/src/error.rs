//! Why a run failed.

use anduin_operator_api::OperatorError;

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
    /// The checkpoint to restore was taken of a query that differs where state is kept.
    #[error("cannot restore checkpoint {epoch}: operator \"{operator}\": {what}; run the query as it was, or start over with --from-scratch")]
    IncompatibleCheckpoint {
        /// The checkpoint.
        epoch: u64,
        /// The operator at fault.
        operator: String,
        /// What changed.
        what: String,
    },
    /// The query cannot take checkpoints as asked.
    #[error("cannot take checkpoints: operator \"{operator}\": {why}")]
    NotCheckpointable {
        /// The operator at fault.
        operator: String,
        /// Why.
        why: String,
    },
    /// Restoring an operator's state failed.
    #[error("cannot restore checkpoint {epoch}: {cause}")]
    Restore {
        /// The checkpoint.
        epoch: u64,
        /// What failed.
        cause: OperatorError,
    },
    /// The checkpoint directory cannot be used.
    #[error("checkpoint directory: {0}")]
    Checkpoint(anduin_checkpoint::CheckpointError),
    /// A thread could not be started.
    #[error("cannot start a thread for task {task}: {cause}")]
    Spawn {
        /// The task's index.
        task: usize,
        /// The OS error.
        cause: std::io::Error,
    },
}
