//! anduin's HTTP API: serves the control plane of running queries ([`QueryControl`]) —
//! queries, graphs, params, changes, checkpoints, stop, live events and Prometheus metrics —
//! and the client `anduin ctl` uses.
//!
//! This crate does not run queries: the embedded runtime (and, later, the coordinator)
//! implements [`QueryControl`] and hands it to the server.

pub use anduin_runtime::control::{
    ChangeRecord, ChangeRequest, CheckpointInfo, ControlFailure, FailureKind, ParamInfo, QueryInfo,
    QueryMetrics,
};

/// What the API can ask of one running query. Implemented by the runtime's handle of an
/// embedded run; the server calls the blocking methods off its async threads.
pub trait QueryControl: Send + Sync + 'static {
    /// What the query is and where it stands.
    fn info(&self) -> QueryInfo;

    /// The adjustable params of `operator`, with their types and current values.
    fn params(&self, operator: &str) -> Result<Vec<ParamInfo>, ControlFailure>;

    /// Validates the change and applies it at a consistent point (a barrier through every
    /// instance). Blocks until every instance has switched, or the change is refused (then
    /// nothing changed).
    fn set(&self, request: ChangeRequest) -> Result<ChangeRecord, ControlFailure>;

    /// Every change applied to the query, oldest first (also those restored from a
    /// checkpoint).
    fn history(&self) -> Vec<ChangeRecord>;

    /// The complete checkpoints in the query's checkpoint directory, oldest first.
    fn checkpoints(&self) -> Result<Vec<CheckpointInfo>, ControlFailure>;

    /// Takes a checkpoint now. Blocks until it is complete (returns its epoch) or failed.
    fn checkpoint(&self) -> Result<u64, ControlFailure>;

    /// Asks the query to stop: with checkpoints a last one is taken, so that it resumes
    /// there. Returns at once; the query's state says when it is done.
    fn stop(&self) -> Result<(), ControlFailure>;

    /// Every live figure, now.
    fn metrics(&self) -> QueryMetrics;
}
