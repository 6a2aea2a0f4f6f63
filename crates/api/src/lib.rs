//! anduin's HTTP API: serves the control plane of running queries ([`QueryControl`]) —
//! queries, graphs, params, changes, checkpoints, stop, live events and Prometheus metrics —
//! the web UI that draws them (served at `/`, its files embedded in the binary: [`ui`]), and
//! the client `anduin ctl` uses.
//!
//! This crate does not run queries: the embedded runtime (and, later, the coordinator)
//! implements [`QueryControl`] and hands it to the server through a [`Registry`].
//! It is not on the data path either: the server runs on a tokio runtime of its own thread,
//! and calls into a query through the blocking trait methods on tokio's blocking pool.
//!
//! The pieces:
//! - [`ApiServer::start`] binds a listener (loopback, or any address with a bearer token)
//!   and serves the routes of [`routes`] until it is shut down or dropped;
//! - [`Registry`] holds the served queries by name (they come and go while it runs) and the
//!   [`EventFeed`]s that carry their engine events to `GET /api/v1/events`;
//! - [`registration`] lets `anduin ctl` find the runs of this user on this machine;
//! - [`Client`] is the blocking client of the routes.
//!
//! # Examples
//!
//! ```
//! use std::sync::Arc;
//! use anduin_api::{ApiConfig, ApiServer, Client, Registry, fake::FakeQuery};
//!
//! let registry = Registry::new();
//! registry.add(Arc::new(FakeQuery::new("sensors"))).expect("a new name");
//! let server = ApiServer::start(ApiConfig::loopback(), registry).expect("binds 127.0.0.1:0");
//! let client = Client::new(&server.url(), None).expect("a valid URL");
//! let queries = client.queries().expect("the server answers");
//! assert_eq!(queries[0].name, "sensors");
//! server.shutdown();
//! ```

#![deny(missing_docs)]

mod client;
mod embedded;
mod error;
mod events;
pub mod fake;
mod handlers;
mod metrics;
mod openapi;
mod problem;
pub mod registration;
mod registry;
#[cfg(test)]
mod router_tests;
pub mod routes;
mod server;
mod topology;
pub mod ui;

pub use anduin_runtime::autoscaler::AutoscaleReport;
pub use anduin_runtime::control::{
    ChangeRecord, ChangeRequest, CheckpointInfo, ControlFailure, FailureKind, ParamInfo, QueryInfo,
    QueryMetrics, TopologyInfo,
};
pub use client::{Client, ClientError, ClientTimeouts, EventStream, SseMessage};
pub use error::ApiError;
pub use events::{EventFeed, FeedEvent};
pub use metrics::render_prometheus;
pub use problem::ErrorBody;
pub use registry::{check_name, usable_name, Registry, RegistryError, MAX_NAME_LEN, NAME_RULE};
pub use server::{
    ApiConfig, ApiServer, DEFAULT_BODY_LIMIT, DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
};
pub use topology::topology_of;

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

    /// What the query's autoscaler did: its settings, latest rounds (each with the figures it
    /// decided on), rescales and failures. By default the query runs none.
    fn autoscale(&self) -> Result<AutoscaleReport, ControlFailure> {
        Err(ControlFailure::NotAutoscaled {
            query: self.info().name,
        })
    }

    /// Where the query's instances run and how its tasks feed each other. By default what
    /// [`QueryInfo`] tells ([`topology_of`]): every instance on worker 0, the exchanges
    /// between tasks with an `unknown` partitioning.
    fn topology(&self) -> TopologyInfo {
        topology_of(&self.info())
    }
}
