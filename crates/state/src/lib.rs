//! Keyed operator state of anduin, organised by key group: the [`StateBackend`] API, its two
//! backends (in memory, [`HeapBackend`]; an LSM tree on local disk, [`LsmBackend`]), and the
//! snapshot/changelog byte format ([`mod@format`]) that checkpoints store.
//!
//! Each operator instance owns a contiguous range of key groups (DESIGN.md §3); its backend
//! holds the entries of those groups and writes them as a full snapshot or as the changes since
//! the previous snapshot. Restoring takes the last full snapshot and the changelogs after it;
//! snapshots are portable between backends. `extract` hands a range of key groups over for
//! rescaling.
//!
//! Operators use the backend through a [`KeyedTable`]: entries `(group key, sub-key) → value`
//! stored under the key group of their group key, computed by [`key_group_for_key`], the
//! function the hash exchange routes rows by; restores hand every entry back checked, and
//! [`KeyedTable::export`] / [`KeyedTable::import`] move a range of key groups between tables.
//!
//! This crate is synchronous and starts no threads of its own (fjall runs its own flush and
//! compaction workers). It does not decide when to snapshot, where snapshots are stored,
//! which checkpoint is complete, or how rescaling moves ranges: that is the checkpoint
//! storage, the runtime and the coordinator. It knows nothing of operators or Arrow: keys and
//! values are bytes.

#![deny(missing_docs)]
#![deny(clippy::indexing_slicing)]

mod backend;
mod cut;
mod entry_key;
mod error;
pub mod format;
mod heap;
mod key_group;
mod keyed_table;
mod lsm;
mod redistribute;
mod restore;
mod storage_key;
mod table_error;
mod work_dir;

pub use backend::{open_backend, BackendKind, ScanCallback, StateBackend};
pub use cut::{cut_full, join_full};
pub use error::{StateError, StreamIndex, StreamProblem};
pub use format::{SnapshotKind, SnapshotStats, MAX_KEY_LEN, MAX_VALUE_LEN};
pub use heap::HeapBackend;
pub use key_group::{
    assign_ranges, instance_for, key_group_for_hash, key_group_for_key, key_hash, KeyGroup,
    KeyGroupRange, DEFAULT_MAX_KEY_GROUPS,
};
pub use keyed_table::{KeyedTable, TableEntry};
pub use lsm::{LsmBackend, LsmOptions};
pub use redistribute::{intersection, redistribute, OldInstance};
pub use table_error::{TableError, TableProblem};
pub use work_dir::{remove_stale, RunStateDir};
