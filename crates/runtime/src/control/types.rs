//! What the control plane says about a running query, as plain serialisable values: its
//! operators and tasks, the adjustable params and their values, the changes made, live
//! figures, and why a request was refused. The HTTP API serves these as JSON.

use serde::{Deserialize, Serialize};

pub use anduin_checkpoint::ChangeRecord;
pub use anduin_operator_api::RecentReject;

/// A request to change one param of one operator of a running query (a meta-query tuple
/// `<query, operator, parameter, value>`, paper §4.5; the query is the handle's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeRequest {
    /// The operator's name in the query.
    pub operator: String,
    /// The param to change.
    pub param: String,
    /// The new value, as it would be written in the query (`"value < 30"`, `"5s"`, `1000`).
    pub value: String,
    /// Who asks (`ctl` with the user's name, `api`, a control stream): kept in the history.
    #[serde(default = "unknown_origin")]
    pub from: String,
}

fn unknown_origin() -> String {
    "api".to_string()
}

/// An adjustable param of an operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamInfo {
    /// The param's name.
    pub name: String,
    /// Its type (`expression`, `duration`, `number`, `text`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// Its current value, as it would be written in the query.
    pub value: String,
    /// What it does.
    pub doc: String,
}

/// The lifecycle of a query run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueryState {
    /// Its operators are being built (or restored).
    Starting,
    /// Processing.
    Running,
    /// Asked to stop: taking its last checkpoint, flushing.
    Stopping,
    /// Its input ended, or it stopped, and everything is flushed.
    Finished,
    /// An operator failed.
    Failed,
    /// A cluster's attempt of the query failed, and the query is recovered by the next one
    /// (after the coordinator's wait, `--restart-backoff`), from its last checkpoint, with a
    /// control plane of its own: this one takes nothing any more.
    Recovering,
    /// Cancelled at a user's request (a cluster's `anduin cancel`): ended at once, without a
    /// last checkpoint.
    Cancelled,
}

impl QueryState {
    /// Whether the query has ended (finished, failed or cancelled): nothing changes it any
    /// more.
    pub fn ended(self) -> bool {
        matches!(
            self,
            QueryState::Finished
                | QueryState::Failed
                | QueryState::Cancelled
                | QueryState::Recovering
        )
    }
}

/// One operator of a query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorInfo {
    /// Its name.
    pub name: String,
    /// Its type (`reader`, `filter`, …).
    pub kind: String,
    /// The streams it reads, in input order.
    pub inputs: Vec<String>,
    /// The streams it writes, in output order.
    pub outputs: Vec<String>,
    /// How many instances run.
    pub parallelism: usize,
    /// The task it runs in (operators fused into one chain share a task).
    pub task: usize,
    /// Whether it keeps state across batches.
    pub stateful: bool,
    /// The params that can be changed while it runs.
    pub adjustable: Vec<String>,
    /// How many instances it can be rescaled to while it runs (`anduin ctl scale`, a change
    /// of its `parallelism`): the instances that run it, set by `--max-parallelism`. Absent
    /// for an operator that cannot be (it does not split its input by key, or runs alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_parallelism: Option<usize>,
    /// How many of its instances owned its key groups when the run started (an operator
    /// that can be rescaled while it runs; its param `parallelism` says how many own them
    /// now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owners: Option<usize>,
}

/// One task of the physical plan: a chain of fused operators, run by its instances.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskInfo {
    /// The task's number.
    pub id: usize,
    /// Its operators, head first.
    pub operators: Vec<String>,
    /// How many instances run it.
    pub instances: usize,
}

/// Where every instance of a query runs and how its tasks feed each other: the physical
/// plan expanded to instances (the topology of the run).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopologyInfo {
    /// The workers the instances run on, by number (`[0]` when everything runs in one
    /// process).
    pub workers: Vec<u32>,
    /// The tasks, with their instances.
    pub tasks: Vec<TaskPlacement>,
    /// The exchanges between tasks: one per stream that crosses from a task to another.
    pub exchanges: Vec<ExchangeInfo>,
}

/// One task and where its instances run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskPlacement {
    /// The task's number.
    pub id: usize,
    /// Its operators, head first.
    pub operators: Vec<String>,
    /// Its instances.
    pub instances: Vec<InstancePlacement>,
}

/// One instance of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstancePlacement {
    /// The instance among the task's, from 0 (the `instance` of its operators' figures).
    pub instance: usize,
    /// Its number in the whole run (names its thread and its share of a checkpoint).
    pub id: usize,
    /// The worker it runs on.
    pub worker: u32,
}

/// How the rows of one stream go from the instances of one task to those of another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExchangeInfo {
    /// The producing task.
    pub from_task: usize,
    /// The producing operator (in that task).
    pub from_operator: String,
    /// The consuming task.
    pub to_task: usize,
    /// The operator at the consuming task's head.
    pub to_operator: String,
    /// The input of that operator it feeds, from 0.
    pub to_input: usize,
    /// How rows are spread over the consumer's instances: `gather` (all to one), `hash`
    /// (by key), `broadcast` (to every one), `round-robin` (batches to each in turn), `forward`
    /// (each instance to its own, a chain split while the query ran), or `unknown` when the
    /// server cannot tell.
    pub partitioning: String,
    /// The key columns of a `hash` exchange.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    /// How many channels (producer instance to consumer instance) carry it.
    pub channels: usize,
    /// How many of them cross from one worker to another.
    pub remote_channels: usize,
}

/// A running query: what it is and where it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryInfo {
    /// Its name (the query file's stem unless `--name` says otherwise).
    pub name: String,
    /// The query file, if it came from one.
    pub file: Option<String>,
    /// When it started, in milliseconds since the Unix epoch.
    pub started_ms: i64,
    /// Where it stands.
    pub state: QueryState,
    /// Whether it takes checkpoints.
    pub checkpointing: bool,
    /// Its operators, in topological order (the logical graph).
    pub operators: Vec<OperatorInfo>,
    /// Its tasks (the physical graph).
    pub tasks: Vec<TaskInfo>,
    /// The query as written, when rules reshaped it before it ran (a user's `--rules`, the
    /// built-in hot standby): its operators, in topological order. Empty otherwise: then
    /// `operators` is the query as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub written: Vec<WrittenOperator>,
}

/// An operator of the query as written (see [`QueryInfo::written`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrittenOperator {
    /// Its name.
    pub name: String,
    /// Its type (`reader`, `filter`, …).
    pub kind: String,
    /// The streams it reads, in input order.
    pub inputs: Vec<String>,
    /// The streams it writes, in output order.
    pub outputs: Vec<String>,
}

/// Live figures of one operator instance. A figure the runtime does not measure is `None`
/// and is not exported.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceMetrics {
    /// The operator.
    pub operator: String,
    /// The instance, from 0.
    pub instance: usize,
    /// Rows received.
    pub rows_in: u64,
    /// Rows emitted (for a sink, rows written).
    pub rows_out: u64,
    /// Batches received.
    pub batches_in: Option<u64>,
    /// Time spent processing, in nanoseconds.
    pub busy_ns: Option<u64>,
    /// Time spent waiting for room on a full output channel (backpressure), in nanoseconds.
    pub blocked_ns: Option<u64>,
    /// Messages waiting in its input channels.
    pub queue_len: Option<u64>,
    /// The last watermark it forwarded, in milliseconds of event time.
    pub watermark_ms: Option<i64>,
    /// Rows dropped as late.
    pub late_rows: Option<u64>,
    /// Bytes of state, as far as the operator knows.
    pub state_bytes: Option<u64>,
}

impl InstanceMetrics {
    /// Figures with rows only (every other figure unknown), as tests and merges build them.
    pub fn rows(operator: &str, instance: usize, rows_in: u64, rows_out: u64) -> Self {
        InstanceMetrics {
            operator: operator.to_string(),
            instance,
            rows_in,
            rows_out,
            batches_in: None,
            busy_ns: None,
            blocked_ns: None,
            queue_len: None,
            watermark_ms: None,
            late_rows: None,
            state_bytes: None,
        }
    }
}

/// Live figures of a query's checkpoints.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointMetrics {
    /// Checkpoints begun.
    pub started: u64,
    /// Checkpoints completed.
    pub completed: u64,
    /// Checkpoints that failed.
    pub failed: u64,
    /// The epoch of the last complete checkpoint.
    pub last_epoch: Option<u64>,
    /// How long the last complete checkpoint took, barrier to manifest, in milliseconds.
    pub last_duration_ms: Option<u64>,
    /// The bytes of state files the last complete checkpoint wrote.
    pub last_size_bytes: Option<u64>,
    /// When the last checkpoint completed, in milliseconds since the Unix epoch.
    pub last_completed_ms: Option<i64>,
    /// The recent checkpoints of this run (begun, complete or failed), oldest first: the
    /// last [`RECENT_CHECKPOINTS`].
    #[serde(default)]
    pub recent: Vec<CheckpointRecord>,
}

/// How many checkpoints [`CheckpointMetrics::recent`] holds at most.
pub const RECENT_CHECKPOINTS: usize = 64;

/// One checkpoint of this run, as its timeline shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointRecord {
    /// Its epoch.
    pub epoch: u64,
    /// When it began, in milliseconds since the Unix epoch.
    pub started_ms: i64,
    /// How it ended; `None` while it is on its way.
    pub outcome: Option<CheckpointOutcome>,
}

/// How a checkpoint ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CheckpointOutcome {
    /// Its manifest is written: a restart resumes from it.
    Complete {
        /// Barrier to manifest, in milliseconds.
        duration_ms: u64,
        /// The bytes of the state files it wrote.
        size_bytes: u64,
    },
    /// It failed; the query went on and the previous checkpoint stayed intact.
    Failed {
        /// From its beginning to its failure, in milliseconds.
        duration_ms: u64,
        /// Why.
        reason: String,
    },
}

/// Every live figure of a query at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryMetrics {
    /// Per operator instance.
    pub instances: Vec<InstanceMetrics>,
    /// Checkpoints, when the query takes them.
    pub checkpoints: Option<CheckpointMetrics>,
    /// Param changes applied.
    pub control_changes: u64,
    /// Records and rows sent to the dead letters.
    pub dead_letters: u64,
    /// Of those, per operator that rejected them.
    #[serde(default)]
    pub dead_letters_by_operator: std::collections::BTreeMap<String, u64>,
    /// The last rejects (the last 20), oldest first, with their reasons.
    #[serde(default)]
    pub recent_rejects: Vec<RecentReject>,
    /// Why the operator instances' figures and the dead letters are not in this answer,
    /// where they are not: a cluster's coordinator does not gather them from its workers
    /// (`instances` is then empty and the dead-letter counts are not zero but unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_gathered: Option<String>,
}

/// One complete checkpoint, as the checkpoint directory holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointInfo {
    /// Its epoch.
    pub epoch: u64,
    /// When it completed, in milliseconds since the Unix epoch.
    pub time_ms: i64,
    /// Whether the query's input had ended everywhere.
    pub finished: bool,
    /// The bytes of its files.
    pub size_bytes: u64,
}

/// Why the control plane refused a request. Nothing was changed.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "error", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ControlFailure {
    /// No operator of that name.
    #[error("query \"{query}\" has no operator \"{operator}\"{hint}")]
    UnknownOperator {
        /// The query.
        query: String,
        /// The name asked for.
        operator: String,
        /// ` (did you mean …?)` and the operators, or empty.
        hint: String,
    },
    /// The operator has no param of that name, or it cannot be changed while running.
    #[error(
        "param `{param}` of operator \"{operator}\" cannot be changed while running ({adjustable})"
    )]
    NotAdjustable {
        /// The operator.
        operator: String,
        /// The param asked for.
        param: String,
        /// Which params can, in words ([`ControlFailure::not_adjustable`] writes them from
        /// `can` and `exists`).
        adjustable: String,
        /// The params that can, by name.
        #[serde(default)]
        can: Vec<String>,
        /// Whether the operator has a param of that name at all.
        #[serde(default)]
        exists: bool,
    },
    /// The value is not valid for the param: the message is `anduin check`'s, located in
    /// the value (`<value>:1:COL: …`).
    #[error("{message}")]
    Invalid {
        /// The operator.
        operator: String,
        /// The param.
        param: String,
        /// What is wrong, where in the value, and what to do.
        message: String,
    },
    /// The query cannot take the request in its current state.
    #[error("query \"{query}\" is {state}: {what}")]
    NotRunning {
        /// The query.
        query: String,
        /// Its state, in words.
        state: String,
        /// What could not be done.
        what: String,
    },
    /// The change was sent but has not reached every instance within the deadline (the
    /// query is held back, by a slow output for instance): it stays on its way.
    #[error("query \"{query}\": change #{seq} was sent but has not reached every instance of operator \"{operator}\" after {waited_s} s (the query is held back, for instance by a slow output); it stays on its way and applies when its barrier gets through: `anduin ctl history {query}` shows it then")]
    NotYetApplied {
        /// The query.
        query: String,
        /// The change.
        seq: u64,
        /// The operator.
        operator: String,
        /// How long the request waited, in seconds.
        waited_s: f64,
    },
    /// The checkpoint asked for failed; the query goes on.
    #[error("query \"{query}\": checkpoint {epoch} failed: {reason}; the query goes on and the previous checkpoint stays intact")]
    CheckpointFailed {
        /// The query.
        query: String,
        /// The checkpoint.
        epoch: u64,
        /// Why.
        reason: String,
    },
    /// The query runs without checkpoints (`--checkpoint-store` is needed).
    #[error(
        "query \"{query}\" runs without checkpoints: start it with --checkpoint-store to take them"
    )]
    NoCheckpoints {
        /// The query.
        query: String,
    },
    /// The query runs no autoscaler.
    #[error(
        "query \"{query}\" runs without the autoscaler: start it with --autoscale (and \
         --max-parallelism N) to have it rescaled by its rates"
    )]
    NotAutoscaled {
        /// The query.
        query: String,
    },
}

/// How a refusal maps to a protocol's kinds of error (HTTP status codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Something named does not exist (404).
    NotFound,
    /// The request is malformed or its value invalid (400).
    Invalid,
    /// The query's state does not allow it now (409).
    Conflict,
}

impl ControlFailure {
    /// Param `param` of `operator` cannot be changed while running; the params in `can`
    /// can, and `exists` says whether the operator has a param of that name at all.
    pub fn not_adjustable(operator: &str, param: &str, can: Vec<String>, exists: bool) -> Self {
        let words = if can.is_empty() {
            "it has no param that can".to_string()
        } else {
            format!("it can change: {}", can.join(", "))
        };
        ControlFailure::NotAdjustable {
            operator: operator.to_string(),
            param: param.to_string(),
            adjustable: if exists {
                words
            } else {
                format!("it has no such param; {words}")
            },
            can,
            exists,
        }
    }

    /// Its kind, for a protocol's status.
    pub fn kind(&self) -> FailureKind {
        match self {
            ControlFailure::UnknownOperator { .. } => FailureKind::NotFound,
            ControlFailure::NotAdjustable { .. } | ControlFailure::Invalid { .. } => {
                FailureKind::Invalid
            }
            ControlFailure::NotRunning { .. }
            | ControlFailure::NoCheckpoints { .. }
            | ControlFailure::NotAutoscaled { .. }
            | ControlFailure::CheckpointFailed { .. }
            | ControlFailure::NotYetApplied { .. } => FailureKind::Conflict,
        }
    }
}
