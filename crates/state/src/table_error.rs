//! The error of a [`crate::KeyedTable`]: which operator's state, what went wrong, and what to
//! do about it.

use crate::{KeyGroup, KeyGroupRange, StateError, MAX_KEY_LEN};

/// An operation on an operator's keyed table failed. The message names the operator and says
/// what to do; [`TableProblem`] classifies the failure.
#[derive(Debug, thiserror::Error)]
#[error("operator {operator}: {problem}")]
pub struct TableError {
    /// The operator whose state the table holds.
    pub operator: String,
    /// What went wrong (boxed: keeps `Result<_, TableError>` small on the hot path).
    pub problem: Box<TableProblem>,
}

impl TableError {
    /// Whether the state read back (a checkpoint being restored, or a range being imported)
    /// is unusable, so that an older checkpoint is the way forward, as opposed to a failure of
    /// this process (disk, memory) or a caller's mistake.
    pub fn is_corrupt_state(&self) -> bool {
        match &*self.problem {
            TableProblem::Backend(StateError::BadStream { .. })
            | TableProblem::CorruptEntry { .. }
            | TableProblem::MisplacedEntry { .. }
            | TableProblem::ImportOutsideRange { .. }
            | TableProblem::HeldOutsideOwnRange { .. } => true,
            TableProblem::Backend(_)
            | TableProblem::EntryKeyTooLong { .. }
            | TableProblem::LongKeyCollision { .. }
            | TableProblem::ImportConflict { .. } => false,
        }
    }
}

/// What went wrong in a [`crate::KeyedTable`], classified by what the caller can do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TableProblem {
    /// The state backend failed: an unusable snapshot stream (restore from an earlier
    /// checkpoint), an I/O failure of this process, or an oversized value.
    #[error("state backend: {0}; {hint}", hint = backend_hint(.0))]
    Backend(#[source] StateError),
    /// An entry whose key does not split into a group key and a sub-key: the state is
    /// corrupt (an entry is never skipped).
    #[error(
        "{kg} holds an entry whose key {key:02x?} does not split into a group key and a \
         sub-key ({reason}): the state is corrupt; restore from an earlier checkpoint"
    )]
    CorruptEntry {
        /// Where the entry is stored.
        kg: KeyGroup,
        /// The first bytes of its key (at most 32).
        key: Vec<u8>,
        /// Why it does not split.
        reason: String,
    },
    /// An entry stored under another key group than its group key's: written with another
    /// number of key groups, or corrupt. Routing and storage would disagree about it.
    #[error(
        "an entry stored in {stored} has a group key of {belongs}: the state was written with \
         another number of key groups or is corrupt; restore from a checkpoint of this query"
    )]
    MisplacedEntry {
        /// Where it is stored.
        stored: KeyGroup,
        /// Where its group key belongs.
        belongs: KeyGroup,
    },
    /// Two group keys longer than an entry key (stored by their 128-bit hash) have the same
    /// hash: one's state is never taken for the other's.
    #[error(
        "in {kg}, a group key of {len} bytes has the same 128-bit hash as another long group key \
         held there (keys longer than 64 KiB are stored by their hash): shorten the key, e.g. \
         group by a hash of it computed in a map before"
    )]
    LongKeyCollision {
        /// Where.
        kg: KeyGroup,
        /// The key's length.
        len: usize,
    },
    /// A group key and sub-key together longer than an entry key may be.
    #[error(
        "a group key of {group_key} bytes with a sub-key of {sub_key} bytes exceeds the entry \
         key limit of {} bytes (2 of them the group key's length): use shorter key columns",
        MAX_KEY_LEN
    )]
    EntryKeyTooLong {
        /// The group key's length.
        group_key: usize,
        /// The sub-key's length.
        sub_key: usize,
    },
    /// An imported stream holds an entry of a key group outside the range being imported.
    #[error(
        "importing {range}: the stream holds an entry of {kg}, outside the range; nothing was \
         imported; export the range again"
    )]
    ImportOutsideRange {
        /// The range being imported.
        range: KeyGroupRange,
        /// The entry's key group.
        kg: KeyGroup,
    },
    /// The table already holds entries in the range being imported: a range moves only to
    /// an instance that does not own it.
    #[error(
        "importing {range}: this table already holds entries of {kg}; a range is imported only \
         by an instance that does not own it (this is a bug in the rescale plan)"
    )]
    ImportConflict {
        /// The range being imported.
        range: KeyGroupRange,
        /// The first key group found holding entries.
        kg: KeyGroup,
    },
    /// An instance's checkpointed state holds an entry of a key group outside those it
    /// owned: re-cutting the state would leave the entry behind.
    #[error(
        "the state of the instance that owned {owned} holds an entry of {kg}, which it did not \
         own: the state is corrupt; restore from an earlier checkpoint"
    )]
    HeldOutsideOwnRange {
        /// The key groups the instance owned.
        owned: KeyGroupRange,
        /// The first key group outside them found holding entries.
        kg: KeyGroup,
    },
}

/// What to do about a backend error.
fn backend_hint(e: &StateError) -> &'static str {
    match e {
        StateError::BadStream { .. } => "restore from an earlier checkpoint",
        StateError::Write { .. } => {
            "check where the stream was being written (free space, permissions)"
        }
        StateError::Lsm { .. } | StateError::WorkDir { .. } => {
            "check the disk and the state directory (its free space and permissions)"
        }
        StateError::KeyTooLarge { .. } | StateError::ValueTooLarge { .. } => {
            "one key's state is too large to checkpoint; use shorter keys or smaller groups"
        }
        _ => "this is likely a bug in anduin",
    }
}
