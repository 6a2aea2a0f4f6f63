//! The control plane of a running query: meta queries (paper §4.5) that change an operator's
//! params at a consistent point, the history of changes, live figures.

mod describe;
mod handle;
mod history;
mod types;

pub use describe::written;
pub(crate) use describe::{operators, tasks, topology};
#[cfg(test)]
pub(crate) use handle::window_control;
pub use handle::{
    BarrierSent, Control, Onto, Prepare, Recorder, Room, Stopper, TaskSplit, Validator,
    DEFAULT_DEADLINE,
};
pub(crate) use handle::{Growing, Injector, InstanceFigures, Probe, MOST_INSTANCES};

/// The last live figures of each process that runs some of a query's instances (a cluster's
/// executors), for the control plane of the process that has none of them (its coordinator).
pub type Gather = std::sync::Arc<dyn Fn() -> Vec<QueryMetrics> + Send + Sync>;

pub use types::{
    ChangeRecord, ChangeRequest, CheckpointInfo, CheckpointMetrics, CheckpointOutcome,
    CheckpointRecord, ControlFailure, ExchangeInfo, FailureKind, InstanceMetrics,
    InstancePlacement, OperatorInfo, ParamInfo, QueryInfo, QueryMetrics, QueryState, RecentReject,
    TaskInfo, TaskPlacement, TopologyInfo, WrittenOperator, RECENT_CHECKPOINTS,
};
