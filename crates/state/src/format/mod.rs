//! The snapshot and changelog byte format, version 1: what checkpoints store.
//!
//! One format serves both kinds of stream. All integers are big-endian.
//!
//! ```text
//! stream  = header record* trailer
//! header  = "ANDSTATE" (8 bytes) · version u16 (= 1) · kind u8 (1 = full, 2 = changes) · 0u8
//! record  = put | delete
//! put     = 0x01 · kg u16 · key_len u32 · key · value_len u32 · value
//! delete  = 0x02 · kg u16 · key_len u32 · key
//! trailer = 0xFF · record_count u64 · crc32 u32
//! ```
//!
//! - `crc32` is the CRC-32 (IEEE, as in zlib and gzip) of every byte before it, from the magic
//!   through `record_count`. Nothing may follow the trailer. Together with the record count this
//!   detects truncation (even at a record boundary) and any bit flip.
//! - A **full** stream holds only puts, in strictly increasing `(kg, key)` order (the order of
//!   the LSM backend's keys, `kg` as 2 big-endian bytes followed by the key), so it can be
//!   bulk-loaded into sorted tables.
//! - A **changes** stream holds puts and deletes, applied in stream order on top of the state
//!   of the previous stream. The backends of this crate write one record per key touched since
//!   the previous snapshot, holding that key's final state, in `(kg, key)` order; readers must
//!   not rely on that order.
//! - Limits: `key_len ≤ MAX_KEY_LEN` (65 533: the LSM's 65 535-byte key limit minus the
//!   key-group prefix) and `value_len ≤ MAX_VALUE_LEN` (256 MiB). A reader rejects larger
//!   lengths as malformed before reading them, and never allocates more than the bytes that
//!   actually arrive, so a corrupt length cannot exhaust memory.
//!
//! Readers and writers stream: memory use is one record plus fixed buffers, whatever the size
//! of the state. A later version must change `VERSION`; this build rejects any other.

mod reader;
mod writer;

pub use reader::{Record, SnapshotReader};
pub use writer::SnapshotWriter;
pub(crate) use writer::{check_entry, check_key};

/// The first bytes of every stream.
pub const MAGIC: [u8; 8] = *b"ANDSTATE";
/// The format version this build writes and reads.
pub const VERSION: u16 = 1;
/// The longest key a backend stores (and a stream may carry), in bytes.
pub const MAX_KEY_LEN: usize = u16::MAX as usize - 2;
/// The longest value a backend stores (and a stream may carry), in bytes.
pub const MAX_VALUE_LEN: usize = 256 << 20;

#[cfg(test)]
const HEADER_LEN: usize = 12;
const TAG_PUT: u8 = 0x01;
const TAG_DELETE: u8 = 0x02;
const TAG_END: u8 = 0xFF;

pub use anduin_types::SnapshotKind;

/// The byte that stands for a kind in a stream's header.
pub(crate) trait KindByte: Sized {
    fn byte(self) -> u8;
    fn from_byte(b: u8) -> Option<Self>;
}

impl KindByte for SnapshotKind {
    fn byte(self) -> u8 {
        match self {
            SnapshotKind::Full => 1,
            SnapshotKind::Changes => 2,
        }
    }

    fn from_byte(b: u8) -> Option<Self> {
        match b {
            1 => Some(SnapshotKind::Full),
            2 => Some(SnapshotKind::Changes),
            _ => None,
        }
    }
}

/// What writing a snapshot stream produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[must_use]
pub struct SnapshotStats {
    /// Records written (puts and deletes).
    pub entries: u64,
    /// Bytes written, header and trailer included.
    pub bytes: u64,
}
