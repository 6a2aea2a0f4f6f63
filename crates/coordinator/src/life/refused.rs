//! Why an input was refused: it does not fit where the query is. A refused input changes
//! nothing; the coordinator logs it and goes on.

use anduin_types::Epoch;

use super::input::InputKind;
use super::state::StateKind;
use crate::ids::{QueryId, TaskRef, WorkerId};

/// An input the query's life cannot take.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("query `{query}`: {why}")]
pub struct Refused {
    /// The query.
    pub query: QueryId,
    /// Why.
    pub why: Refusal,
}

/// Why an input does not fit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The query is over.
    #[error("it is {state} for good, so {input} changes nothing")]
    Terminal {
        /// Its final state.
        state: StateKind,
        /// The input refused.
        input: InputKind,
    },
    /// The input has no meaning in this state.
    #[error("a query that is {state} cannot take {input}{}", hint(*state, *input))]
    NotNow {
        /// The state.
        state: StateKind,
        /// The input refused.
        input: InputKind,
    },
    /// A checkpoint is already in flight.
    #[error("checkpoint {} cannot start while checkpoint {} is in flight", got.0, in_flight.0)]
    CheckpointInFlight {
        /// The one in flight.
        in_flight: Epoch,
        /// The one asked for.
        got: Epoch,
    },
    /// A checkpoint's epoch must come after every epoch started before.
    #[error("checkpoint {} does not come after checkpoint {}, the last one started", got.0, last.0)]
    EpochNotAfter {
        /// The last epoch started (or completed).
        last: Epoch,
        /// The one asked for.
        got: Epoch,
    },
    /// A completion or failure for a checkpoint that is not in flight (a late report).
    #[error("checkpoint {} is not in flight ({})", got.0, match in_flight { Some(e) => format!("checkpoint {} is", e.0), None => "none is".into() })]
    NotInFlight {
        /// The one in flight, if any.
        in_flight: Option<Epoch>,
        /// The one reported.
        got: Epoch,
    },
    /// A task the query does not have.
    #[error("the query has no task instance {task}")]
    UnknownTask {
        /// The task named.
        task: TaskRef,
    },
    /// A failure report from a worker the task no longer runs on (it was placed again since).
    #[error("task {task} failed on {worker}, but it runs {}: the report is stale", match placed_on { Some(w) => format!("on {w}"), None => "nowhere now".into() })]
    StaleFailure {
        /// The task.
        task: TaskRef,
        /// The worker that reported.
        worker: WorkerId,
        /// Where the task runs now.
        placed_on: Option<WorkerId>,
    },
    /// A placement that does not cover exactly the tasks awaiting slots.
    #[error("the placement does not match the tasks awaiting slots (missing: {missing:?}, not awaiting: {unexpected:?})")]
    PlacementMismatch {
        /// Tasks awaiting slots that the placement leaves out.
        missing: Vec<TaskRef>,
        /// Tasks the placement names that were not awaiting slots.
        unexpected: Vec<TaskRef>,
    },
    /// A recovery reported done while tasks still await slots.
    #[error("tasks {tasks:?} still await slots: the recovery is not done")]
    StillPlacing {
        /// The tasks.
        tasks: Vec<TaskRef>,
    },
}

fn hint(state: StateKind, input: InputKind) -> &'static str {
    match (state, input) {
        (StateKind::Recovering, InputKind::StopRequested) => {
            ": ask again once its recovery is over, or cancel it"
        }
        (StateKind::Stopping, InputKind::StopRequested) => ": it is already stopping",
        (StateKind::Recovering, InputKind::CheckpointStarted) => {
            ": checkpoints wait until the recovery is over"
        }
        _ => "",
    }
}
