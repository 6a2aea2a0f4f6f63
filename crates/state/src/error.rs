//! Errors of state backends and of the snapshot format.

use std::fmt;
use std::path::PathBuf;

use crate::{KeyGroup, SnapshotKind};

/// A state operation failed. Classified by what the caller can do: a [`StateError::BadStream`]
/// means that checkpoint is unusable (fall back to an older one); [`StateError::Write`] and
/// [`StateError::Lsm`] are I/O failures of this process; the `…TooLarge` variants are the
/// caller's bug.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// A snapshot or changelog stream given to `restore` is unusable.
    #[error("{stream}: {problem}")]
    BadStream {
        /// Which stream of the restore: 0 is the full snapshot, `i` is `changes[i - 1]`.
        stream: StreamIndex,
        /// What is wrong with it.
        problem: StreamProblem,
    },
    /// Writing a snapshot stream failed.
    #[error("writing a {kind} snapshot: {source}")]
    Write {
        /// The kind of snapshot being written.
        kind: SnapshotKind,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The LSM store failed (its directory is unusable, or the disk is full).
    #[error("LSM state in {}: {source}", dir.display())]
    Lsm {
        /// The backend's directory.
        dir: PathBuf,
        /// fjall's error.
        #[source]
        source: fjall::Error,
    },
    /// Creating the backend's working directory failed.
    #[error("creating a working directory for LSM state in {}: {source}", dir.display())]
    WorkDir {
        /// The directory (or the one it was to be made in).
        dir: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A key longer than [`crate::MAX_KEY_LEN`].
    #[error(
        "{kg}: a key of {len} bytes exceeds the limit of {} bytes",
        crate::MAX_KEY_LEN
    )]
    KeyTooLarge {
        /// The key group written to.
        kg: KeyGroup,
        /// The key's length.
        len: usize,
    },
    /// A value longer than [`crate::MAX_VALUE_LEN`].
    #[error(
        "{kg}: a value of {len} bytes exceeds the limit of {} bytes",
        crate::MAX_VALUE_LEN
    )]
    ValueTooLarge {
        /// The key group written to.
        kg: KeyGroup,
        /// The value's length.
        len: usize,
    },
    /// More instances than key groups: some instance would own nothing.
    #[error("parallelism {parallelism} exceeds the {max} key groups of the query")]
    ParallelismAboveMaxKeyGroups {
        /// The requested parallelism.
        parallelism: u16,
        /// The query's number of key groups.
        max: u16,
    },
}

/// The position of a stream among the streams of one restore: 0 is the full snapshot, `i ≥ 1`
/// is the `i`-th changelog (`changes[i - 1]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamIndex(pub usize);

impl fmt::Display for StreamIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => write!(f, "stream 0 (the full snapshot)"),
            i => write!(f, "stream {i} (changelog {i})"),
        }
    }
}

/// What is wrong with a snapshot stream. Offsets count bytes from the start of the stream.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamProblem {
    /// Reading the stream failed (not an early end: that is `Truncated`).
    #[error("read failed: {0}")]
    Read(#[source] std::io::Error),
    /// The stream does not start with the magic bytes of the format.
    #[error("not an anduin state snapshot (magic bytes {found:02x?})")]
    BadMagic {
        /// The first bytes of the stream.
        found: [u8; 8],
    },
    /// A format version this build cannot read.
    #[error(
        "format version {found} is not supported (this build reads version {})",
        crate::format::VERSION
    )]
    UnsupportedVersion {
        /// The version in the header.
        found: u16,
    },
    /// A snapshot kind byte that names no kind.
    #[error("unknown snapshot kind {found:#04x}")]
    UnknownKind {
        /// The kind byte in the header.
        found: u8,
    },
    /// A full snapshot where a changelog belongs, or the reverse.
    #[error("expected a {expected} snapshot, found a {found} snapshot")]
    WrongKind {
        /// The kind this position of the restore needs.
        expected: SnapshotKind,
        /// The kind in the stream's header.
        found: SnapshotKind,
    },
    /// The stream ends before its trailer.
    #[error("truncated: the stream ends at byte {offset}, before its trailer")]
    Truncated {
        /// Where the stream ended.
        offset: u64,
    },
    /// A record that cannot be decoded, or breaks a rule of its kind of stream.
    #[error("malformed record at byte {offset}: {reason}")]
    Malformed {
        /// Where the record starts.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The CRC32 in the trailer does not match the bytes before it.
    #[error(
        "checksum mismatch: the trailer says {stored:#010x}, the content gives {computed:#010x}"
    )]
    ChecksumMismatch {
        /// The CRC32 stored in the trailer.
        stored: u32,
        /// The CRC32 of the bytes read.
        computed: u32,
    },
    /// The trailer's record count does not match the records read.
    #[error("the trailer counts {stored} records, the stream holds {counted}")]
    CountMismatch {
        /// The count stored in the trailer.
        stored: u64,
        /// The records read.
        counted: u64,
    },
    /// Bytes follow the trailer.
    #[error("unexpected bytes after the trailer at byte {offset}")]
    TrailingBytes {
        /// Where the trailer ends.
        offset: u64,
    },
}
