//! Where a query is in its life, and why it is recovering or has failed.

use std::fmt;

use anduin_types::Epoch;
use serde::{Deserialize, Serialize};

use crate::ids::{TaskRef, WorkerId};

/// Where a query is in its life. The last three are terminal: nothing moves a query out of
/// them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum QueryState {
    /// Recorded in the catalog; nothing placed yet.
    Submitted,
    /// Its tasks are being given worker slots.
    Scheduling,
    /// Every task is placed and started; no checkpoint is in flight.
    Running,
    /// Running, with the barriers of checkpoint `epoch` in flight.
    Checkpointing {
        /// The checkpoint in flight.
        epoch: Epoch,
    },
    /// Some tasks are being placed again and restored; the others keep running.
    Recovering {
        /// What started the recovery (later failures during it are events, not a new reason).
        reason: RecoveryReason,
    },
    /// Draining after a stop request: the sources stop, the tasks finish what they hold.
    Stopping,
    /// Every task finished (a bounded input ended, or a stop drained it). Terminal.
    Finished,
    /// It cannot go on. Terminal.
    Failed {
        /// Why.
        reason: FailureReason,
    },
    /// Cancelled at a user's request. Terminal.
    Cancelled,
}

impl QueryState {
    /// Whether nothing can move the query out of this state.
    pub fn is_terminal(&self) -> bool {
        self.kind().is_terminal()
    }

    /// The state without its details.
    pub fn kind(&self) -> StateKind {
        match self {
            QueryState::Submitted => StateKind::Submitted,
            QueryState::Scheduling => StateKind::Scheduling,
            QueryState::Running => StateKind::Running,
            QueryState::Checkpointing { .. } => StateKind::Checkpointing,
            QueryState::Recovering { .. } => StateKind::Recovering,
            QueryState::Stopping => StateKind::Stopping,
            QueryState::Finished => StateKind::Finished,
            QueryState::Failed { .. } => StateKind::Failed,
            QueryState::Cancelled => StateKind::Cancelled,
        }
    }
}

impl fmt::Display for QueryState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryState::Checkpointing { epoch } => write!(f, "checkpointing epoch {}", epoch.0),
            QueryState::Recovering { reason } => write!(f, "recovering ({reason})"),
            QueryState::Failed { reason } => write!(f, "failed: {reason}"),
            other => other.kind().fmt(f),
        }
    }
}

/// A [`QueryState`] without its details: for messages, metrics and the table of legal
/// transitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)] // The variants are those of `QueryState`.
pub enum StateKind {
    Submitted,
    Scheduling,
    Running,
    Checkpointing,
    Recovering,
    Stopping,
    Finished,
    Failed,
    Cancelled,
}

impl StateKind {
    /// Every kind, in the order of a query's life.
    pub const ALL: [StateKind; 9] = [
        StateKind::Submitted,
        StateKind::Scheduling,
        StateKind::Running,
        StateKind::Checkpointing,
        StateKind::Recovering,
        StateKind::Stopping,
        StateKind::Finished,
        StateKind::Failed,
        StateKind::Cancelled,
    ];

    /// Whether nothing can move a query out of this state.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            StateKind::Finished | StateKind::Failed | StateKind::Cancelled
        )
    }
}

impl fmt::Display for StateKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StateKind::Submitted => "submitted",
            StateKind::Scheduling => "scheduling",
            StateKind::Running => "running",
            StateKind::Checkpointing => "checkpointing",
            StateKind::Recovering => "recovering",
            StateKind::Stopping => "stopping",
            StateKind::Finished => "finished",
            StateKind::Failed => "failed",
            StateKind::Cancelled => "cancelled",
        })
    }
}

/// What started a recovery.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RecoveryReason {
    /// One task instance failed on a worker that is still alive.
    TaskFailed {
        /// The task instance.
        task: TaskRef,
        /// Where it ran.
        worker: WorkerId,
        /// What it reported.
        cause: String,
    },
    /// A worker stopped heartbeating: every task instance on it is lost.
    WorkerDead {
        /// The worker.
        worker: WorkerId,
    },
    /// A restarted coordinator found these tasks running nowhere: their worker went while no
    /// coordinator ran.
    LostWhileNoCoordinator {
        /// The tasks.
        tasks: Vec<TaskRef>,
    },
}

impl fmt::Display for RecoveryReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecoveryReason::TaskFailed {
                task,
                worker,
                cause,
            } => write!(f, "task {task} failed on {worker}: {cause}"),
            RecoveryReason::WorkerDead { worker } => write!(f, "{worker} is dead"),
            RecoveryReason::LostWhileNoCoordinator { tasks } => {
                write!(f, "tasks ")?;
                for (i, t) in tasks.iter().enumerate() {
                    write!(f, "{}{t}", if i == 0 { "" } else { ", " })?;
                }
                write!(f, " ran nowhere when the coordinator restarted")
            }
        }
    }
}

/// Why a query failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureReason {
    /// Its tasks could not be given worker slots.
    CannotPlace {
        /// Slots the placement needed.
        needed: u32,
        /// Free slots on live workers.
        free: u32,
        /// The placement's own words (which constraint, which task).
        why: String,
    },
    /// A recovery could not be carried out (a checkpoint unreadable, a task refusing its state).
    RecoveryFailed {
        /// What went wrong.
        why: String,
    },
}

impl fmt::Display for FailureReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailureReason::CannotPlace { why, .. } => f.write_str(why),
            FailureReason::RecoveryFailed { why } => write!(f, "recovery failed: {why}"),
        }
    }
}
