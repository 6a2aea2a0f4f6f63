//! Why a run failed: [`RuntimeError`] for the run, [`TaskError`] for one task instance.

use anduin_operator_api::OperatorError;

use crate::topology::InstanceRef;

/// A run failed to start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// An operator could not be created (a missing input file, an unwritable output): nothing
    /// ran.
    #[error("cannot start: {0}")]
    Start(OperatorError),
    /// A task instance failed while running; the query stopped.
    #[error("{0}")]
    Task(Box<TaskError>),
    /// A copy of a hot standby failed (the query went on without it) and the query failed
    /// (every copy lost, say: the stream selector fails then): both, the copy's first, as
    /// it is most often the cause.
    #[error("a copy of a hot standby failed: {copy}; and the query failed: {query}")]
    WithCopyLost {
        /// The (earliest) copy's failure.
        copy: Box<TaskError>,
        /// What stopped the query.
        query: Box<TaskError>,
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
    /// A thread could not be started for a task instance.
    #[error("cannot start a thread for task {task}: {cause}")]
    Spawn {
        /// The instance's number in the run.
        task: usize,
        /// The OS error.
        cause: std::io::Error,
    },
    /// A thread of the runtime itself (the checkpoint coordinator, the committer) could not be
    /// started.
    #[error("cannot start the thread {thread}: {cause}")]
    SpawnHelper {
        /// The thread's name.
        thread: &'static str,
        /// The OS error.
        cause: std::io::Error,
    },
    /// A channel between two processes failed.
    #[error("{edge}: {message}")]
    Network {
        /// The channel.
        edge: String,
        /// What went wrong.
        message: String,
    },
    /// The query could not be planned (the partitioning or pipelining rules could not split
    /// it): nothing ran.
    #[error("cannot plan the query: {0}")]
    Plan(anduin_graph::PlanError),
}

/// One task instance failed: which one, and why.
///
/// Its message is the cause's, named by the operator when an operator failed (as the user
/// knows the query by its operators), by the task otherwise.
#[derive(Debug)]
#[non_exhaustive]
pub struct TaskError {
    /// The instance's number in the run (the `task` of its
    /// [`EngineEvent`](crate::EngineEvent)s).
    pub id: usize,
    /// Which task of the plan, and which instance of it.
    pub at: InstanceRef,
    /// The task's operators (and ` #i` when the task runs as several instances).
    pub name: String,
    /// Why it failed.
    pub cause: TaskFailure,
}

impl TaskError {
    /// Instance `id` (`at`, named `name`) failed because of `cause`.
    pub fn new(id: usize, at: InstanceRef, name: impl Into<String>, cause: TaskFailure) -> Self {
        Self {
            id,
            at,
            name: name.into(),
            cause,
        }
    }

    /// Whether this failure is only a consequence of another task's (a channel closed because
    /// its other end failed): the other task's error says what went wrong.
    pub fn is_secondary(&self) -> bool {
        self.cause.is_secondary()
    }

    /// Whether this failure is a bug in anduin rather than a problem of the query or its data.
    pub fn is_internal(&self) -> bool {
        self.cause.is_internal()
    }

    /// The operator that failed, when an operator did.
    pub fn operator(&self) -> Option<&str> {
        match &self.cause {
            TaskFailure::Operator(e) | TaskFailure::Internal(e) => operator_of(e),
            TaskFailure::DownstreamGone { operator } => Some(operator),
            TaskFailure::UpstreamGone { .. }
            | TaskFailure::CommitterGone { .. }
            | TaskFailure::Panicked { .. } => None,
        }
    }
}

impl std::fmt::Display for TaskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = &self.name;
        match &self.cause {
            TaskFailure::Operator(e) | TaskFailure::Internal(e) => write!(f, "{e}"),
            TaskFailure::DownstreamGone { operator } => {
                write!(f, "downstream of operator \"{operator}\" has stopped")
            }
            TaskFailure::UpstreamGone { port } => write!(
                f,
                "task \"{name}\": a producer of input {port} stopped without ending its output"
            ),
            TaskFailure::CommitterGone { epoch } => write!(
                f,
                "operator \"{name}\": the checkpoint committer has stopped (checkpoint {epoch})"
            ),
            TaskFailure::Panicked { message } => write!(
                f,
                "task {} ({name}) panicked: {message}; this is a bug in anduin, please report it",
                self.id
            ),
        }
    }
}

impl std::error::Error for TaskError {}

/// Why a task instance failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskFailure {
    /// An operator failed on the query's input or configuration (a malformed record or a row
    /// an expression fails on under `on_error = "fail"`, a file that cannot be read or
    /// written): the user can do something about it.
    #[error("{0}")]
    Operator(OperatorError),
    /// An operator or the runtime found one of anduin's invariants broken
    /// ([`OperatorError::Internal`]): a bug in anduin.
    #[error("{0}")]
    Internal(OperatorError),
    /// Operator `operator` could not send: the task it sends to has stopped, because it
    /// failed (its own error says why).
    #[error("downstream of operator \"{operator}\" has stopped")]
    DownstreamGone {
        /// The operator that could not send.
        operator: String,
    },
    /// A channel into input `port` closed without the end of its data: its producer failed
    /// (its own error says why).
    #[error("a producer of input {port} stopped without ending its output")]
    UpstreamGone {
        /// The input port of the task's head.
        port: usize,
    },
    /// The checkpoint committer stopped before the task could hand it its snapshots of
    /// checkpoint `epoch`. (A snapshot that cannot be written, as on a full disk, fails the
    /// checkpoint, not the task.)
    #[error("the checkpoint committer has stopped (checkpoint {epoch})")]
    CommitterGone {
        /// The checkpoint.
        epoch: u64,
    },
    /// The task's thread panicked: a bug in anduin.
    #[error("panicked: {message}")]
    Panicked {
        /// The panic's message.
        message: String,
    },
}

impl TaskFailure {
    /// Whether this failure is only a consequence of another task's.
    pub fn is_secondary(&self) -> bool {
        matches!(
            self,
            TaskFailure::DownstreamGone { .. } | TaskFailure::UpstreamGone { .. }
        )
    }

    /// Whether this failure is a bug in anduin.
    pub fn is_internal(&self) -> bool {
        matches!(
            self,
            TaskFailure::Internal(_) | TaskFailure::Panicked { .. }
        )
    }
}

/// An operator's error, classified: an internal error stays apart from the user's, a send to
/// a task that has gone is a consequence of that task's failure.
impl From<OperatorError> for TaskFailure {
    fn from(e: OperatorError) -> Self {
        match e {
            OperatorError::DownstreamGone { operator } => TaskFailure::DownstreamGone { operator },
            e if e.is_internal() => TaskFailure::Internal(e),
            e => TaskFailure::Operator(e),
        }
    }
}

/// The operator an error names.
fn operator_of(e: &OperatorError) -> Option<&str> {
    match e {
        OperatorError::Config { operator, .. }
        | OperatorError::Io { operator, .. }
        | OperatorError::BadRecord { operator, .. }
        | OperatorError::Execution { operator, .. }
        | OperatorError::Internal { operator, .. }
        | OperatorError::DownstreamGone { operator } => Some(operator),
        OperatorError::BadRow(row) | OperatorError::Exhausted(row) => Some(row.operator.as_str()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(cause: TaskFailure) -> TaskError {
        TaskError::new(
            3,
            InstanceRef {
                task: 1,
                instance: 1,
            },
            "join -> map #1",
            cause,
        )
    }

    #[test]
    fn an_internal_operator_error_stays_apart_from_the_users() {
        let internal = failed(OperatorError::internal("join", "a broken invariant").into());
        assert!(internal.is_internal() && !internal.is_secondary());
        assert_eq!(internal.operator(), Some("join"));
        let user: TaskFailure = OperatorError::Execution {
            operator: "map".into(),
            message: "no such column".into(),
        }
        .into();
        assert!(matches!(user, TaskFailure::Operator(_)));
        assert!(!failed(user).is_internal());
    }

    #[test]
    fn a_send_to_a_task_that_has_gone_is_secondary_and_keeps_its_message() {
        let gone = failed(
            OperatorError::DownstreamGone {
                operator: "map".into(),
            }
            .into(),
        );
        assert!(gone.is_secondary());
        assert_eq!(
            gone.to_string(),
            "downstream of operator \"map\" has stopped"
        );
        assert!(failed(TaskFailure::UpstreamGone { port: 0 }).is_secondary());
    }

    #[test]
    fn a_panic_names_the_task_and_says_it_is_a_bug() {
        let e = RuntimeError::Task(Box::new(failed(TaskFailure::Panicked {
            message: "boom".into(),
        })));
        assert_eq!(
            e.to_string(),
            "task 3 (join -> map #1) panicked: boom; this is a bug in anduin, please report it"
        );
    }
}
