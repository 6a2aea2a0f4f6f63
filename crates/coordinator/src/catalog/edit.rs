//! The edits of the catalog: every change to it is one of these, appended to the edit log
//! before it is acknowledged, and applied by [`CatalogState::apply`](super::CatalogState::apply)
//! both live and when the log is replayed.

use std::collections::{BTreeMap, BTreeSet};

use anduin_types::Epoch;
use serde::{Deserialize, Serialize};

use super::model::{AttemptFailure, CheckpointPointer, QuerySettings, QuerySource};
use crate::ids::{QueryId, TaskRef, WorkerId};
use crate::life::QueryState;

/// One change to the catalog.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "edit", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Edit {
    /// A query was submitted (in [`QueryState::Submitted`]). Refused if the name is taken.
    QuerySubmitted {
        /// Its name.
        query: QueryId,
        /// Its source text.
        source: QuerySource,
        /// Its settings.
        settings: QuerySettings,
        /// When, in milliseconds since the Unix epoch (for display only).
        at_ms: u64,
    },
    /// The query's physical plan was made: its fingerprint and its task instances.
    PlanFixed {
        /// The query.
        query: QueryId,
        /// A fingerprint of the plan, compared with a checkpoint's before restoring it.
        fingerprint: String,
        /// Its task instances.
        tasks: BTreeSet<TaskRef>,
    },
    /// The query's life moved to another state. Refused once the query is in a terminal
    /// state.
    StateChanged {
        /// The query.
        query: QueryId,
        /// The new state.
        state: QueryState,
    },
    /// Task instances were given slots (each a new attempt); the others keep theirs.
    TasksPlaced {
        /// The query.
        query: QueryId,
        /// Where each goes.
        placement: BTreeMap<TaskRef, WorkerId>,
    },
    /// A new attempt of the whole query was deployed: every task instance was placed (one
    /// more attempt of each), in the part of the worker it was placed on.
    AttemptDeployed {
        /// The query.
        query: QueryId,
        /// The attempt's number, after every one deployed before.
        attempt: u64,
        /// Where each task instance goes.
        placement: BTreeMap<TaskRef, WorkerId>,
    },
    /// The part of the current attempt that ran on a lost worker was restored on another
    /// (per-task recovery): its task instances run there now (one more attempt of each), the
    /// rest of the attempt runs on, and the part's incarnation is one more (an executor of an
    /// older one is stale).
    PartRestored {
        /// The query.
        query: QueryId,
        /// The part: the worker its instances were deployed on in this attempt.
        part: WorkerId,
        /// Where they run now.
        host: WorkerId,
    },
    /// A checkpoint of the query completed: the pointer a restore starts from.
    CheckpointCompleted {
        /// The query.
        query: QueryId,
        /// The checkpoint (after the last one recorded).
        pointer: CheckpointPointer,
    },
    /// A worker reported that a part of the current attempt ended, and the coordinator noted it
    /// (the worker then forgets the report: the catalog is what remembers it). Refused for
    /// a part that is not the current one: of another attempt, of an older incarnation, or
    /// reported by another worker than its host.
    PartEnded {
        /// The query.
        query: QueryId,
        /// The attempt.
        attempt: u64,
        /// The part: the worker its instances were deployed on in this attempt.
        part: WorkerId,
        /// The worker that ran it and reported its end.
        host: WorkerId,
        /// The part's incarnation that ended.
        incarnation: u64,
        /// `None`: it finished its part; otherwise why not.
        error: Option<String>,
    },
    /// A checkpoint of the query was given up (a task failed or was lost, its manifest could
    /// not be written, or it timed out), and its files are then removed. The tasks that had
    /// its barrier ignore any other barrier numbered as it: a coordinator that takes the
    /// running attempt over (this one having died) numbers its checkpoints after it, although
    /// nothing of it is left in the checkpoint store.
    CheckpointGivenUp {
        /// The query.
        query: QueryId,
        /// The checkpoint.
        epoch: Epoch,
    },
    /// An attempt of the query failed and another is to follow after a wait: a coordinator
    /// that takes over before it starts does not take the failed attempt over, waits what is
    /// left of the wait, and goes on counting the failures in a row from these.
    AttemptFailed {
        /// The query.
        query: QueryId,
        /// The failure.
        failure: AttemptFailure,
    },
    /// A user asked to cancel the query: recorded before the request is answered, so that a
    /// coordinator that takes over after this one died cancels it too.
    CancelRequested {
        /// The query.
        query: QueryId,
    },
    /// An operator's parameter was set (a control update, through the API, `anduin ctl` or a
    /// control stream): its value now, and a line of the query's control history.
    ParameterSet {
        /// The query.
        query: QueryId,
        /// The operator.
        operator: String,
        /// The parameter.
        param: String,
        /// The value, as given.
        value: String,
        /// Who set it (`api`, `ctl`, `control stream alerts`).
        origin: String,
        /// The epoch it applied at, when known.
        epoch: Option<Epoch>,
        /// When, in milliseconds since the Unix epoch (for display only).
        at_ms: u64,
        /// Its number in the query's control plane (the `seq` of its history and of the
        /// checkpoints' manifests), when it came from there: a restored or taken-over attempt
        /// is given again the changes numbered after the last its checkpoint recorded.
        #[serde(default)]
        seq: Option<u64>,
        /// The value before it, when known.
        #[serde(default)]
        old: Option<String>,
    },
    /// A query in a terminal state is dropped from the catalog (its name may be used again).
    QueryForgotten {
        /// The query.
        query: QueryId,
    },
    /// A worker registered (or re-attached to a restarted coordinator, under its number).
    WorkerRegistered {
        /// Its number: a new one must be above every number given before.
        worker: WorkerId,
        /// Where it listens for its peers and the coordinator.
        address: String,
        /// Its slots.
        slots: u32,
    },
    /// A worker left or was declared dead; its number is never given again.
    WorkerLeft {
        /// The worker.
        worker: WorkerId,
    },
    /// The leader of term `term` took the catalog over (a catalog in an object store): the
    /// edits after this are its own. Refused unless `term` comes after the last such.
    LeaderTookOver {
        /// The leader's term.
        term: u64,
        /// The election it was elected by (`etcd:/PREFIX`, …): the coordinators of another
        /// are refused the catalog.
        #[serde(default)]
        election: String,
    },
}

impl Edit {
    /// The query the edit is about, if any.
    pub fn query(&self) -> Option<&QueryId> {
        match self {
            Edit::QuerySubmitted { query, .. }
            | Edit::PlanFixed { query, .. }
            | Edit::StateChanged { query, .. }
            | Edit::TasksPlaced { query, .. }
            | Edit::AttemptDeployed { query, .. }
            | Edit::PartRestored { query, .. }
            | Edit::PartEnded { query, .. }
            | Edit::CheckpointCompleted { query, .. }
            | Edit::CheckpointGivenUp { query, .. }
            | Edit::AttemptFailed { query, .. }
            | Edit::CancelRequested { query }
            | Edit::ParameterSet { query, .. }
            | Edit::QueryForgotten { query } => Some(query),
            Edit::WorkerRegistered { .. }
            | Edit::WorkerLeft { .. }
            | Edit::LeaderTookOver { .. } => None,
        }
    }
}
