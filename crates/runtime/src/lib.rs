//! The embedded runtime: runs a checked graph's physical plan on threads of this process.
//!
//! Each task (a fused chain of operators) runs on its own thread; tasks are connected by
//! bounded channels carrying [`Message`](anduin_types::Message)s, so a slow consumer slows its
//! producers down to the sources (backpressure) and memory stays bounded. Sources batch rows
//! up to the batch size but never hold a row longer than the linger time.
//!
//! This crate does not parse or check queries, and does not know what an operator does; it
//! connects instances made by the operators' factories and moves batches between them.

mod chain;
mod channel;
mod config;
mod error;
mod run;
mod source_task;
mod stats;
mod task;

pub use config::RunConfig;
pub use error::RuntimeError;
pub use run::run;
pub use stats::{OperatorStats, RunSummary};
