//! The part of `restore` both backends share: reading the streams in order, checking their
//! kinds, and leaving the backend empty when anything fails.

use std::io::Read;

use crate::format::SnapshotReader;
use crate::{SnapshotKind, StateError, StreamIndex};

/// What a backend does with verified-as-they-come streams.
pub(crate) trait RestoreTarget {
    /// Removes every entry and forgets the tracked changes.
    fn clear(&mut self) -> Result<(), StateError>;

    /// Loads a full stream into the (empty) backend. The reader yields puts in strictly
    /// increasing `(kg, key)` order; everything loaded counts only once the reader has
    /// returned `None` (the trailer verified).
    fn load_full(&mut self, reader: &mut SnapshotReader<&mut dyn Read>) -> Result<(), StateError>;

    /// Applies a changes stream's records in order.
    fn apply_changes(
        &mut self,
        reader: &mut SnapshotReader<&mut dyn Read>,
    ) -> Result<(), StateError>;
}

/// Restores `target` from `full` then `changes`, emptying it if anything fails.
pub(crate) fn restore_streams(
    target: &mut dyn RestoreTarget,
    full: &mut dyn Read,
    changes: &mut [&mut dyn Read],
) -> Result<(), StateError> {
    target.clear()?;
    let result = load_all(target, full, changes);
    if result.is_err() {
        // The first error is the one to report; a failure to clear on top of it would only
        // repeat an I/O problem of the same store.
        let _ = target.clear();
    }
    result
}

fn load_all(
    target: &mut dyn RestoreTarget,
    full: &mut dyn Read,
    changes: &mut [&mut dyn Read],
) -> Result<(), StateError> {
    let mut reader = SnapshotReader::new(full, StreamIndex(0))?;
    reader.expect_kind(SnapshotKind::Full)?;
    target.load_full(&mut reader)?;
    for (i, stream) in changes.iter_mut().enumerate() {
        let input: &mut dyn Read = stream;
        let mut reader = SnapshotReader::new(input, StreamIndex(i + 1))?;
        reader.expect_kind(SnapshotKind::Changes)?;
        target.apply_changes(&mut reader)?;
    }
    Ok(())
}
