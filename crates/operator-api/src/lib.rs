//! The operator API of anduin: what an operator or a source is to the runtime ([`Operator`],
//! [`Source`], [`Collector`]), what it is built with ([`BuildContext`]) and bound as
//! ([`Bound`]), its params, its errors, how it checkpoints ([`SnapshotOut`], [`RestoreIn`]),
//! and how it rejects a bad row ([`DeadLetter`], [`RowErrors`]).
//!
//! Batches are Arrow `RecordBatch`es in the schema of their stream. A batch of an updating
//! stream carries each row's change kind (`+I`, `-U`, `+U`, `-D`) as its last column,
//! `__op` (see `anduin_types::change`); an append-only batch has no such column, so nothing
//! here changes for append-only operators. Whether an operator may receive an updating
//! stream is the catalog's decision (`anduin_graph::Catalog::consumes_updates`), checked
//! before the query starts.
//!
//! Every operator crate (`anduin-relational`, `anduin-cep`, `anduin-connectors`) is written
//! against this crate, and the runtime depends on it alone. It holds no operator: the registry
//! of operator types (`anduin-registry`) is assembled above them. It does not schedule,
//! connect or run instances (`anduin-runtime`).

mod checkpointing;
mod context;
pub mod controlled;
mod dead_letter;
mod error;
pub mod event_time;
pub mod fs_check;
pub mod keys;
mod lineage_facts;
pub mod null_time;
mod operator;
mod origins;
mod params;
pub mod rescale;
mod row_errors;
mod source;
pub mod spread;
mod stop;

pub use checkpointing::{RestoreIn, SnapshotOut};
pub use context::{Bound, BuildContext, OperatorFactory, SourceFactory};
pub use dead_letter::{
    row_as_json, DeadLetter, DeadLetterTarget, RecentReject, RejectedRecord, RejectedRow,
    RECENT_KEPT,
};
pub use error::{BadRow, ControlError, OperatorError};
pub use event_time::WatermarkSpec;
pub use lineage_facts::{KeptFact, LineageFacts};
pub use operator::{Collector, Operator};
pub use origins::RowOrigins;
pub use params::Params;
pub use rescale::{Combine, KeyGroupsGiven, RescaleError};
pub use row_errors::{
    evaluate_rows, failures, kept_rows, Evaluated, ExprAt, OnError, Piece, RowErrors, RowFailure,
    ON_ERROR,
};
pub use source::{Source, SourcePoll};
pub use spread::{Handed, SpreadRole};
pub use stop::{StopDeadline, StopRequest, GRACE};
