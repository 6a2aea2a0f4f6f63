//! What the coordinator feeds a query's life ([`Input`]: facts it learnt and requests it got),
//! what the life asks it to do in return ([`Action`]), and what it records ([`LifeEvent`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use anduin_types::Epoch;
use serde::{Deserialize, Serialize};

use super::state::{QueryState, RecoveryReason, StateKind};
use crate::ids::{TaskRef, WorkerId};
use crate::placement::PlacementError;

/// A fact or a request about one query, fed to [`step`](super::step).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "input", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Input {
    /// The query is durably in the catalog: start placing it.
    Submitted,
    /// Tasks were given slots: every task (while scheduling) or every task awaiting a new
    /// slot (while recovering).
    Placed {
        /// Where each placed task goes.
        placement: BTreeMap<TaskRef, WorkerId>,
    },
    /// The tasks awaiting slots cannot be placed (see [`Input::placement_impossible`]).
    PlacementImpossible {
        /// Slots needed.
        needed: u32,
        /// Slots free on live workers.
        free: u32,
        /// The placement's words.
        why: String,
    },
    /// A task instance failed on a worker that is still alive.
    TaskFailed {
        /// The task instance.
        task: TaskRef,
        /// The worker that reported it (a report from a worker the task no longer runs on is
        /// stale and refused).
        worker: WorkerId,
        /// What the task reported.
        cause: String,
    },
    /// A worker was declared dead (see [`FailureDetector`](crate::FailureDetector)). Of no
    /// concern to a query with no task on it.
    WorkerDead {
        /// The worker.
        worker: WorkerId,
    },
    /// Checkpoint `epoch` is due: its barriers are to be injected.
    CheckpointStarted {
        /// Its epoch, after every epoch started before.
        epoch: Epoch,
    },
    /// Every task acknowledged checkpoint `epoch`, and its manifest is written.
    CheckpointCompleted {
        /// The epoch.
        epoch: Epoch,
    },
    /// Checkpoint `epoch` will not complete (a task could not write, it took too long).
    CheckpointFailed {
        /// The epoch.
        epoch: Epoch,
        /// Why.
        cause: String,
    },
    /// Every task instance reached the end of its input and finished.
    AllTasksFinished,
    /// A user asked to cancel the query: stop now, whatever it holds.
    CancelRequested,
    /// A user asked to stop the query gracefully: drain it, then finish.
    StopRequested,
    /// Restoring only the lost tasks cannot work here (a producer no longer holds the output
    /// they need): roll the whole query back to its last completed checkpoint instead.
    PerTaskRecoveryImpossible {
        /// Why, for the log.
        why: String,
    },
    /// Every restore asked for is done: the restored tasks run again.
    RecoveryDone,
    /// A restore cannot be done (the checkpoint is unreadable, a task refuses its state).
    RecoveryFailed {
        /// Why.
        why: String,
    },
}

impl Input {
    /// The input that says a placement failed, from the placement's error.
    pub fn placement_impossible(error: &PlacementError) -> Input {
        let (needed, free) = error.slots();
        Input::PlacementImpossible {
            needed,
            free,
            why: error.to_string(),
        }
    }

    /// The input without its details.
    pub fn kind(&self) -> InputKind {
        match self {
            Input::Submitted => InputKind::Submitted,
            Input::Placed { .. } => InputKind::Placed,
            Input::PlacementImpossible { .. } => InputKind::PlacementImpossible,
            Input::TaskFailed { .. } => InputKind::TaskFailed,
            Input::WorkerDead { .. } => InputKind::WorkerDead,
            Input::CheckpointStarted { .. } => InputKind::CheckpointStarted,
            Input::CheckpointCompleted { .. } => InputKind::CheckpointCompleted,
            Input::CheckpointFailed { .. } => InputKind::CheckpointFailed,
            Input::AllTasksFinished => InputKind::AllTasksFinished,
            Input::CancelRequested => InputKind::CancelRequested,
            Input::StopRequested => InputKind::StopRequested,
            Input::PerTaskRecoveryImpossible { .. } => InputKind::PerTaskRecoveryImpossible,
            Input::RecoveryDone => InputKind::RecoveryDone,
            Input::RecoveryFailed { .. } => InputKind::RecoveryFailed,
        }
    }
}

/// An [`Input`] without its details, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)] // The variants are those of `Input`.
pub enum InputKind {
    Submitted,
    Placed,
    PlacementImpossible,
    TaskFailed,
    WorkerDead,
    CheckpointStarted,
    CheckpointCompleted,
    CheckpointFailed,
    AllTasksFinished,
    CancelRequested,
    StopRequested,
    PerTaskRecoveryImpossible,
    RecoveryDone,
    RecoveryFailed,
}

impl fmt::Display for InputKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InputKind::Submitted => "a submission",
            InputKind::Placed => "a placement",
            InputKind::PlacementImpossible => "a failed placement",
            InputKind::TaskFailed => "a task failure",
            InputKind::WorkerDead => "a dead worker",
            InputKind::CheckpointStarted => "a checkpoint start",
            InputKind::CheckpointCompleted => "a completed checkpoint",
            InputKind::CheckpointFailed => "a failed checkpoint",
            InputKind::AllTasksFinished => "the end of every task",
            InputKind::CancelRequested => "a cancel request",
            InputKind::StopRequested => "a stop request",
            InputKind::PerTaskRecoveryImpossible => "a fallback to whole-query rollback",
            InputKind::RecoveryDone => "the end of a recovery",
            InputKind::RecoveryFailed => "a failed recovery",
        })
    }
}

/// What the coordinator is to do, in the order given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Action {
    /// Choose slots for these tasks ([`place`](crate::place) over the live workers; every
    /// other task keeps its slot) and report [`Input::Placed`] or
    /// [`Input::PlacementImpossible`].
    PlaceTasks {
        /// The tasks to place.
        tasks: BTreeSet<TaskRef>,
    },
    /// Deploy and start these tasks from scratch on these workers.
    StartTasks {
        /// Where each goes.
        placement: BTreeMap<TaskRef, WorkerId>,
    },
    /// Deploy these tasks (a new attempt each) on these workers, restored from checkpoint
    /// `from` (from scratch when `None`); their producers replay from the sequence numbers in
    /// that checkpoint and their consumers drop what they have seen. Other tasks keep running.
    RestoreTasks {
        /// Where each goes.
        placement: BTreeMap<TaskRef, WorkerId>,
        /// The checkpoint to restore, the last completed one.
        from: Option<Epoch>,
    },
    /// The fallback: stop every task and restart them all from checkpoint `to` (from scratch
    /// when `None`), on this placement.
    RollBack {
        /// The whole placement.
        placement: BTreeMap<TaskRef, WorkerId>,
        /// The checkpoint to roll back to, the last completed one.
        to: Option<Epoch>,
    },
    /// Inject the barriers of checkpoint `epoch` at the sources.
    InjectBarrier {
        /// The epoch.
        epoch: Epoch,
    },
    /// Checkpoint `epoch` is complete: record it as the query's last (in the catalog), let
    /// transactional sinks commit it and producers trim the output it covers.
    CommitCheckpoint {
        /// The epoch.
        epoch: Epoch,
    },
    /// Checkpoint `epoch` will not complete: tell the tasks to drop what they wrote for it.
    AbortCheckpoint {
        /// The epoch.
        epoch: Epoch,
    },
    /// Stop the sources (a stop barrier): the tasks finish what they hold, then end.
    Drain,
    /// Stop these tasks now and release their slots.
    CancelTasks {
        /// The tasks.
        tasks: BTreeSet<TaskRef>,
    },
}

/// What a step records: the typed events the coordinator logs and tests observe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LifeEvent {
    /// The query moved to another state.
    Transition {
        /// The state it left.
        from: StateKind,
        /// The state it is in now.
        to: QueryState,
    },
    /// These tasks are to be placed again and restored; every other task keeps running.
    PerTaskRecovery {
        /// The tasks lost.
        tasks: BTreeSet<TaskRef>,
        /// Why.
        reason: RecoveryReason,
    },
    /// The fallback was taken: the whole query rolls back to checkpoint `to`.
    WholeQueryRollback {
        /// The checkpoint (from scratch when `None`).
        to: Option<Epoch>,
        /// Why per-task recovery could not apply.
        why: String,
    },
    /// A checkpoint in flight was given up.
    CheckpointAborted {
        /// Its epoch.
        epoch: Epoch,
        /// Why.
        why: String,
    },
    /// A failure during a stop: the query recovers and runs again; the stop must be asked
    /// for again.
    StopInterrupted {
        /// The failure.
        by: RecoveryReason,
    },
}
