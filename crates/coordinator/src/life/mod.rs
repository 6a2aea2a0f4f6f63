//! A query's life as a pure state machine: [`step`] takes where the query is ([`QueryLife`])
//! and one [`Input`] (a fact the coordinator learnt, or a user's request) and answers the next
//! life, the [`Action`]s to carry out and the [`LifeEvent`]s to log, or [`Refused`] when the
//! input does not fit (a late checkpoint acknowledgement, a stop during a recovery): a refusal
//! changes nothing, and no input ever panics.
//!
//! ```text
//! Submitted ──submitted──> Scheduling ──placed──> Running <──completed/failed── Checkpointing
//!                               │                   │  ──checkpoint started──>      │
//!                               │                   │ task failed / worker dead     │
//!                               │                   v                               │
//!                               │               Recovering <────────────────────────┘
//!                               │                   │ placed → restore; recovery done → Running
//!           placement impossible│                   │ per-task impossible → whole-query rollback
//!                               v                   v
//!                            Failed             Stopping ──all finished──> Finished
//! (cancel from any state that is not terminal → Cancelled)
//! ```
//!
//! Recovery is per task, as the paper's patterns 1–2 with upstream backup: a failed task, or
//! every task of a dead worker, awaits a new slot ([`Action::PlaceTasks`]), then is restored
//! from the last completed checkpoint ([`Action::RestoreTasks`]) while every other task keeps
//! its slot and keeps running. Rolling the whole query back ([`Action::RollBack`]) is the
//! fallback, taken only when told that per-task recovery cannot apply, and logged as such.
//!
//! Each state's transitions are in their own file, read top to bottom.
//!
//! # Example
//!
//! ```
//! use anduin_coordinator::life::{step, Action, Input, QueryLife, QueryState};
//! use anduin_coordinator::{QueryId, TaskRef, WorkerId};
//! use anduin_types::Epoch;
//!
//! let (a, b) = (TaskRef::new(0, 0), TaskRef::new(1, 0));
//! let life = QueryLife::new(QueryId::new("q2"), [a, b]);
//! let life = step(&life, &Input::Submitted).expect("a new query is placed").life;
//! let placed = Input::Placed { placement: [(a, WorkerId(1)), (b, WorkerId(2))].into() };
//! let life = step(&life, &placed).expect("every task placed").life;
//! assert_eq!(life.state(), &QueryState::Running);
//!
//! // Worker 2 dies: only its task is placed again.
//! let next = step(&life, &Input::WorkerDead { worker: WorkerId(2) }).expect("a failure");
//! assert!(matches!(next.life.state(), QueryState::Recovering { .. }));
//! assert_eq!(next.actions, vec![Action::PlaceTasks { tasks: [b].into() }]);
//! ```

mod checkpointing;
mod input;
mod recovering;
mod refused;
mod running;
mod scheduling;
mod state;
mod stopping;
mod submitted;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use anduin_types::Epoch;

pub use input::{Action, Input, InputKind, LifeEvent};
pub use refused::{Refusal, Refused};
pub use state::{FailureReason, QueryState, RecoveryReason, StateKind};

use crate::ids::{QueryId, TaskRef, WorkerId};

/// Where one query is in its life, with what its transitions need to know: its tasks, where
/// they run, which await a slot, and its checkpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryLife {
    query: QueryId,
    state: QueryState,
    tasks: BTreeSet<TaskRef>,
    placement: BTreeMap<TaskRef, WorkerId>,
    awaiting: BTreeSet<TaskRef>,
    in_flight: Option<Epoch>,
    last_started: Option<Epoch>,
    last_completed: Option<Epoch>,
    rollback_pending: bool,
}

/// What one [`step`] gives: the next life, what to do and what to log.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use = "the actions must be carried out and the events logged"]
pub struct Step {
    /// The query's life after the input.
    pub life: QueryLife,
    /// What to do, in order.
    pub actions: Vec<Action>,
    /// What to log, in order.
    pub events: Vec<LifeEvent>,
}

/// The query's life after `input`, with what to do and what to log; or why `input` does not
/// fit where the query is (then nothing changes).
pub fn step(life: &QueryLife, input: &Input) -> Result<Step, Refused> {
    let outcome = match life.state.kind() {
        StateKind::Submitted => submitted::on(life, input),
        StateKind::Scheduling => scheduling::on(life, input),
        StateKind::Running => running::on(life, input),
        StateKind::Checkpointing => checkpointing::on(life, input),
        StateKind::Recovering => recovering::on(life, input),
        StateKind::Stopping => stopping::on(life, input),
        state @ (StateKind::Finished | StateKind::Failed | StateKind::Cancelled) => {
            Err(Refusal::Terminal {
                state,
                input: input.kind(),
            })
        }
    };
    outcome.map_err(|why| Refused {
        query: life.query.clone(),
        why,
    })
}

impl QueryLife {
    /// A query just submitted, with these task instances.
    pub fn new(query: QueryId, tasks: impl IntoIterator<Item = TaskRef>) -> Self {
        QueryLife {
            query,
            state: QueryState::Submitted,
            tasks: tasks.into_iter().collect(),
            placement: BTreeMap::new(),
            awaiting: BTreeSet::new(),
            in_flight: None,
            last_started: None,
            last_completed: None,
            rollback_pending: false,
        }
    }

    /// A running query as a restarted coordinator finds it in its catalog and on the workers
    /// it re-attaches to: `placement` is where its tasks run; a task with no slot in it awaits
    /// one (the query is then recovering, since a worker went while no coordinator ran).
    pub fn reattached(
        query: QueryId,
        tasks: impl IntoIterator<Item = TaskRef>,
        placement: BTreeMap<TaskRef, WorkerId>,
        last_completed: Option<Epoch>,
    ) -> Self {
        let tasks: BTreeSet<TaskRef> = tasks.into_iter().collect();
        let placement: BTreeMap<TaskRef, WorkerId> = placement
            .into_iter()
            .filter(|(t, _)| tasks.contains(t))
            .collect();
        let awaiting: BTreeSet<TaskRef> = tasks
            .iter()
            .filter(|t| !placement.contains_key(t))
            .copied()
            .collect();
        let state = if awaiting.is_empty() {
            QueryState::Running
        } else {
            QueryState::Recovering {
                reason: RecoveryReason::LostWhileNoCoordinator {
                    tasks: awaiting.iter().copied().collect(),
                },
            }
        };
        QueryLife {
            query,
            state,
            tasks,
            placement,
            awaiting,
            in_flight: None,
            last_started: last_completed,
            last_completed,
            rollback_pending: false,
        }
    }

    /// The query.
    pub fn query(&self) -> &QueryId {
        &self.query
    }

    /// Where it is.
    pub fn state(&self) -> &QueryState {
        &self.state
    }

    /// Its task instances.
    pub fn tasks(&self) -> &BTreeSet<TaskRef> {
        &self.tasks
    }

    /// Where each placed task runs.
    pub fn placement(&self) -> &BTreeMap<TaskRef, WorkerId> {
        &self.placement
    }

    /// The tasks awaiting a slot.
    pub fn awaiting(&self) -> &BTreeSet<TaskRef> {
        &self.awaiting
    }

    /// The checkpoint in flight, if any.
    pub fn in_flight(&self) -> Option<Epoch> {
        self.in_flight
    }

    /// The last completed checkpoint: what a restore starts from.
    pub fn last_completed(&self) -> Option<Epoch> {
        self.last_completed
    }

    /// Notes that checkpoint `epoch` completed while this life did not run the checkpoints
    /// itself (a cluster's attempt has a checkpoint coordinator of its own, which reports only
    /// completions): a later restore or rollback starts from it. An older epoch changes
    /// nothing.
    pub fn note_completed(&mut self, epoch: Epoch) {
        if self.last_completed.is_none_or(|last| last < epoch) {
            self.last_completed = Some(epoch);
            self.last_started = self.last_started.max(Some(epoch));
        }
    }

    /// The task instances placed on `worker`.
    pub fn tasks_on(&self, worker: WorkerId) -> BTreeSet<TaskRef> {
        self.placement
            .iter()
            .filter(|(_, w)| **w == worker)
            .map(|(t, _)| *t)
            .collect()
    }

    /// The epoch a new checkpoint must come after: the newest started or completed.
    pub fn last_epoch(&self) -> Option<Epoch> {
        self.last_started.max(self.last_completed)
    }
}

/// Builds a [`Step`] from a life: the transitions' shared vocabulary.
struct Next {
    step: Step,
}

impl Next {
    fn from(life: &QueryLife) -> Self {
        Next {
            step: Step {
                life: life.clone(),
                actions: Vec::new(),
                events: Vec::new(),
            },
        }
    }

    fn life(&mut self) -> &mut QueryLife {
        &mut self.step.life
    }

    /// Moves to `to`, logging the transition.
    fn to(mut self, to: QueryState) -> Self {
        if self.step.life.state != to {
            self.step.events.push(LifeEvent::Transition {
                from: self.step.life.state.kind(),
                to: to.clone(),
            });
            self.step.life.state = to;
        }
        self
    }

    fn act(mut self, action: Action) -> Self {
        self.step.actions.push(action);
        self
    }

    fn log(mut self, event: LifeEvent) -> Self {
        self.step.events.push(event);
        self
    }

    /// Gives up the checkpoint in flight, if any.
    fn abort_in_flight(mut self, why: &str) -> Self {
        if let Some(epoch) = self.step.life.in_flight.take() {
            self = self
                .act(Action::AbortCheckpoint { epoch })
                .log(LifeEvent::CheckpointAborted {
                    epoch,
                    why: why.to_string(),
                });
        }
        self
    }

    fn done(self) -> Result<Step, Refusal> {
        Ok(self.step)
    }
}

/// Any state that is not terminal: cancelled, every placed task stopped.
fn cancel(life: &QueryLife) -> Result<Step, Refusal> {
    let mut next = Next::from(life).abort_in_flight("the query was cancelled");
    let placed: BTreeSet<TaskRef> = next.life().placement.keys().copied().collect();
    if !placed.is_empty() {
        next = next.act(Action::CancelTasks { tasks: placed });
    }
    let life = next.life();
    life.placement.clear();
    life.awaiting.clear();
    life.rollback_pending = false;
    next.to(QueryState::Cancelled).done()
}

/// Every task ended: finished (nothing awaits a slot any more, nor a rollback).
fn finish(life: &QueryLife) -> Result<Step, Refusal> {
    let mut next = Next::from(life).abort_in_flight("every task finished first");
    let l = next.life();
    l.awaiting.clear();
    l.rollback_pending = false;
    next.to(QueryState::Finished).done()
}

/// The tasks the failure `input` (a [`Input::TaskFailed`] or [`Input::WorkerDead`]) takes
/// away, and why; `None` when the input is no failure.
fn lost(
    life: &QueryLife,
    input: &Input,
) -> Result<Option<(BTreeSet<TaskRef>, RecoveryReason)>, Refusal> {
    match input {
        Input::TaskFailed {
            task,
            worker,
            cause,
        } => {
            if !life.tasks.contains(task) {
                return Err(Refusal::UnknownTask { task: *task });
            }
            let placed_on = life.placement.get(task).copied();
            if placed_on != Some(*worker) {
                return Err(Refusal::StaleFailure {
                    task: *task,
                    worker: *worker,
                    placed_on,
                });
            }
            let reason = RecoveryReason::TaskFailed {
                task: *task,
                worker: *worker,
                cause: cause.clone(),
            };
            Ok(Some(([*task].into(), reason)))
        }
        Input::WorkerDead { worker } => Ok(Some((
            life.tasks_on(*worker),
            RecoveryReason::WorkerDead { worker: *worker },
        ))),
        _ => Ok(None),
    }
}

/// A failure while the query runs (or drains, or recovers): the lost tasks await new slots and
/// the query recovers; a worker with none of its tasks changes nothing.
fn recover(
    life: &QueryLife,
    tasks: BTreeSet<TaskRef>,
    reason: RecoveryReason,
) -> Result<Step, Refusal> {
    if tasks.is_empty() {
        return Next::from(life).done();
    }
    let mut next = Next::from(life).abort_in_flight("a task was lost");
    if life.state == QueryState::Stopping {
        next = next.log(LifeEvent::StopInterrupted { by: reason.clone() });
    }
    let l = next.life();
    for task in &tasks {
        l.placement.remove(task);
        l.awaiting.insert(*task);
    }
    // A recovery keeps the reason it started with; later losses are events.
    let to = match &life.state {
        QueryState::Recovering { .. } => life.state.clone(),
        _ => QueryState::Recovering {
            reason: reason.clone(),
        },
    };
    next.to(to)
        .log(LifeEvent::PerTaskRecovery {
            tasks: tasks.clone(),
            reason,
        })
        .act(Action::PlaceTasks { tasks })
        .done()
}

/// `placement` must name exactly the tasks awaiting slots.
fn check_covers(life: &QueryLife, placement: &BTreeMap<TaskRef, WorkerId>) -> Result<(), Refusal> {
    let missing: Vec<TaskRef> = life
        .awaiting
        .iter()
        .filter(|t| !placement.contains_key(t))
        .copied()
        .collect();
    let unexpected: Vec<TaskRef> = placement
        .keys()
        .filter(|t| !life.awaiting.contains(t))
        .copied()
        .collect();
    if missing.is_empty() && unexpected.is_empty() {
        Ok(())
    } else {
        Err(Refusal::PlacementMismatch {
            missing,
            unexpected,
        })
    }
}

/// The query cannot go on: failed, every placed task stopped.
fn fail(life: &QueryLife, reason: FailureReason) -> Result<Step, Refusal> {
    let mut next = Next::from(life).abort_in_flight("the query failed");
    let placed: BTreeSet<TaskRef> = next.life().placement.keys().copied().collect();
    if !placed.is_empty() {
        next = next.act(Action::CancelTasks { tasks: placed });
    }
    let l = next.life();
    l.placement.clear();
    l.awaiting.clear();
    l.rollback_pending = false;
    next.to(QueryState::Failed { reason }).done()
}

/// The refusal of an input with no meaning in `life`'s state.
fn not_now(life: &QueryLife, input: &Input) -> Result<Step, Refusal> {
    Err(Refusal::NotNow {
        state: life.state.kind(),
        input: input.kind(),
    })
}
