//! The dataflow graph: a checked logical graph (operators connected by typed streams) and the
//! physical plan that groups operators into tasks.
//!
//! [`check`] turns a [`Spec`](anduin_spec::Spec) into a [`LogicalGraph`]: names are unique,
//! every consumed stream is produced, types exist, there are no cycles, every operator type
//! and param is known, and each operator accepts its inputs (through a [`Catalog`], which the
//! operators crate implements). [`PhysicalPlan::from_graph`] then fuses chains of operators
//! into tasks (paper §3: the query task is the unit of distribution).
//!
//! The check also tracks which streams are updating (their rows carry a change kind, see
//! [`anduin_types::change`]) and which operator made each so ([`Stream::updating_from`]): an
//! operator the catalog does not let consume updates ([`Catalog::consumes_updates`]) is
//! refused an updating input, naming that operator; `explain` says it per operator.
//!
//! The fault-tolerance params every operator takes are checked here ([`qos`]), and
//! [`rewriting`] hands a query's graph to the rewriting rules (`anduin-rewrite`) for
//! `anduin explain --rewritten`.
//!
//! This crate is pure: no I/O and no execution. It does not know how an operator works, only
//! its [`OperatorSignature`] and what [`Catalog::bind`] says.

mod catalog;
mod change;
mod check;
mod control_input;
mod ending;
mod explain;
mod feedback;
mod live_split;
mod logical;
mod params;
mod partitioning;
mod physical;
mod pipelining;
pub mod qos;
pub mod ranges;
pub mod rewriting;
pub mod run_spec;
mod schema;
mod topo;

pub use anduin_types::did_you_mean;
pub use catalog::{Arity, Binding, Catalog, FeedbackLoop, OperatorSignature, ParamKind, ParamSpec};
pub use change::{check_change, check_change_after, fixed_while_running, ChangeRejected};
pub use check::{check, schema_of_type};
pub use control_input::{ControlInput, ControlTime};
pub use explain::{explain_dot, explain_text, updating_from};
pub use live_split::LiveSplit;
pub use logical::{LogicalGraph, Node, NodeId, Stream, StreamId, VolatileCall};
pub use partitioning::PartitioningError;
pub use physical::{
    rescalable, splits, ChannelPlan, Partitioning, PhysicalPlan, PlanError, PlanOptions, TaskPlan,
};
pub use pipelining::{PipeliningError, Stage};
pub use qos::{check_qos, QOS_PARAMS};
pub use schema::{describe_schema, schema_mismatch};
