//! The embedded runtime: runs a checked graph's physical plan on threads of this process.
//!
//! Each task (a fused chain of operators) runs on its own thread; tasks are connected by
//! bounded channels carrying [`Message`](anduin_types::Message)s, so a slow consumer slows its
//! producers down to the sources (backpressure) and memory stays bounded. Sources batch rows
//! up to the batch size but never hold a row longer than the linger time.
//!
//! With checkpoints, a coordinator thread injects barriers at the sources, tasks align them
//! and snapshot their operators, a committer thread makes the snapshot files durable, and
//! the coordinator completes each checkpoint with its manifest and tells the sinks to commit.
//!
//! A run's instances may be spread over workers: a channel between two workers then crosses
//! the network (TCP, Arrow IPC frames, credit-based flow control; see the `net` module), and
//! the tasks at its ends do not know it.
//!
//! The control plane ([`control`]) changes a running query's params and rescales its keyed
//! operators at barriers; the [`autoscaler`] drives those rescales from the query's live
//! figures (its decisions are `anduin_coordinator::autoscale`'s).
//!
//! This crate does not parse or check queries, and does not know what an operator does; it
//! connects instances made by the operators' factories and moves batches between them.

mod align;
pub mod autoscaler;
mod chain;
mod channel;
mod committer;
mod config;
pub mod control;
mod coordinator;
mod error;
mod event_time;
mod events;
mod faults;
mod final_commit;
mod fingerprint;
mod grow;
mod instantiate;
mod lineage_facts;
mod net;
mod pipelining;
mod protocol;
mod rescale;
mod restore;
mod run;
mod snapshot;
mod source_task;
mod spawn;
mod spread;
mod stats;
mod task;
mod topology;

pub use config::{
    CheckpointSettings, Checkpointing, EndGate, NetworkSettings, Placement, RemoteCoordinator,
    Resumption, RunConfig,
};
pub use error::{RuntimeError, TaskError, TaskFailure};
pub use events::{EngineEvent, Events, LogEvents, Recorded, Subscriber};
pub use faults::Faults;
pub use fingerprint::fingerprint;
pub use net::{BackupBudget, EdgeListener, Peers};
pub use protocol::{Command, Event, OpState};
pub use run::run;
pub use run::{coordinate, Coordinated};
pub use stats::{ChannelCount, CheckpointSummary, OperatorStats, RunSummary};
pub use topology::{
    least_loaded, Channel, ChannelId, Exchange, Inbound, InstanceRef, Outbound, TaskInstance,
    TaskTopology, Topology, WorkerId,
};
