//! Shared vocabulary of anduin: column types, positions and diagnostics (and "did you mean"
//! for them), time, the messages that travel on channels between tasks, and the change kind
//! of the rows of updating streams ([`ChangeKind`]; the changelog model is described in
//! [`mod@change`]).
//!
//! This crate is pure: no I/O, no threads, no async (a [`Clock`] reads the time). Every other anduin crate depends on it;
//! it depends on nothing of anduin's. It is not where operators, plans or parsers live (see
//! `anduin-operators`, `anduin-graph`, `anduin-spec`).

pub mod change;
mod clock;
mod column_type;
mod diagnostic;
mod message;
mod names;
mod suggest;
mod time;

pub use change::{
    change_column, is_updating, no_row_key, row_key, row_key_of, with_row_key, with_row_key_of,
    without_row_key, ChangeKind, CHANGE_COLUMN, NO_ROW_KEY_METADATA, ROW_KEY_METADATA,
    ROW_KEY_OF_METADATA,
};
pub use clock::{elapsed_ms, Clock, ManualClock, SharedClock, SystemClock};
pub use column_type::ColumnType;
pub use diagnostic::{abbreviate, Diagnostic, Diagnostics, Pos, Severity, QUOTED_MAX};
pub use message::{Barrier, BarrierKind, ControlUpdate, Epoch, Message, SnapshotKind};
pub use names::file_safe;
pub use suggest::did_you_mean;
pub use time::{
    civil_from_days, duration_ms, instant_text, parse_duration_ms, Watermark, MS_PER_DAY,
};
