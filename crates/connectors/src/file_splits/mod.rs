//! Files read in parallel: a reader's files cut into byte ranges ([`Split`]s) that its
//! parallel instances share, as Flink's file source and Hadoop's line reader do.
//!
//! * [`plan`] (pure): files and sizes and the parallelism give the splits, and an instance
//!   its share of them; at a restore at another parallelism, what the old instances had left
//!   is dealt again ([`plan::reshare`]).
//! * [`boundary`] (a pure scanner and its thin I/O shell): a split takes the records that
//!   *start* in its range, so it begins at the first record boundary at or after its start
//!   and ends before the first one at or after its end. For CSV the scanner follows quotes
//!   from the file's start or from a boundary before (a quoted field may hold line breaks),
//!   with the decoder's rules for a record too long to keep; for JSON Lines a boundary
//!   follows every `\n`.
//! * [`known`]: the boundaries found in a file, kept for the instances of this process that
//!   read it: a split's first boundary is scanned for from the last one found before it, not
//!   from the file's start, so that finding them all costs one scan of the file, not one per
//!   instance (a file of quoted fields is scanned byte by byte).
//! * [`input`]: the bytes of an instance's splits, one after the other, for the reader.
//!
//! A split's position in a checkpoint is where its next record starts (`from`, then
//! `exact`): an instance resumes there, and a split read to its end is no longer listed.

pub(crate) mod boundary;
pub(crate) mod input;
pub(crate) mod known;
pub(crate) mod plan;
#[cfg(test)]
mod split_decode_tests;

/// A byte range of one file that one instance reads: the records that start in
/// `[from, end)`, reading on to the end of the last of them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Split {
    /// The file.
    pub path: String,
    /// Where the split's next record starts: exactly there when `exact`, otherwise at the
    /// first record boundary at or after it.
    pub from: u64,
    /// Whether `from` is a record boundary already (the file's start, or where a checkpoint
    /// left the split).
    pub exact: bool,
    /// The split ends before the first record boundary at or after this offset.
    pub end: u64,
    /// The file's size when the splits were planned: a file whose size differs when read
    /// has changed, and is refused.
    pub size: u64,
}

impl Split {
    /// The split `[start, end)` of `path`, a file of `size` bytes.
    pub(crate) fn new(path: &str, start: u64, end: u64, size: u64) -> Self {
        Self {
            path: path.to_string(),
            from: start,
            exact: start == 0,
            end,
            size,
        }
    }

    /// Bytes left to read, about.
    pub(crate) fn remaining(&self) -> u64 {
        self.end.saturating_sub(self.from)
    }

    /// Every record before `offset`, a record boundary, was emitted.
    pub(crate) fn resume_at(&mut self, offset: u64) {
        self.from = offset;
        self.exact = true;
    }
}
