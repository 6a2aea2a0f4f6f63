//! anduin's operators and connectors: the `Operator` and `Source` traits, the built-in
//! operator types (one per file), and the catalog through which the graph checker binds them.
//!
//! This crate knows how one operator instance processes batches. It does not schedule, connect
//! or run them (that is `anduin-runtime`), and it does not parse queries (`anduin-spec`).

pub mod catalog;
mod checkpointing;
pub mod codec;
pub mod connectors;
mod dead_letter;
mod error;
mod event_time;
mod fs_check;
mod operator;
pub mod ops;
mod origins;
mod params;
mod row_errors;
mod source;

pub use catalog::{
    Bound, BuildContext, BuiltinCatalog, OperatorFactory, SourceFactory, SIGNATURES,
};
pub use checkpointing::{RestoreIn, SnapshotOut};
pub use dead_letter::{row_as_json, DeadLetter, DeadLetterTarget, RejectedRecord, RejectedRow};
pub use error::{BadRow, ControlError, OperatorError};
pub use event_time::WatermarkSpec;
pub use operator::{Collector, Operator};
pub use origins::RowOrigins;
pub use params::Params;
pub use row_errors::{
    evaluate_rows, failures, kept_rows, Evaluated, ExprAt, OnError, Piece, RowErrors, RowFailure,
};
pub use source::{Source, SourcePoll};
