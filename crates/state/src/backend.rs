//! The API every state backend offers, and the choice between backends.

use std::io::{Read, Write};
use std::path::Path;

use crate::{
    HeapBackend, KeyGroup, KeyGroupRange, LsmBackend, SnapshotKind, SnapshotStats, StateError,
};

/// What [`StateBackend::scan`] calls with each `(key, value)`; an error stops the scan and is
/// returned by it.
pub type ScanCallback<'a> = dyn FnMut(&[u8], &[u8]) -> Result<(), StateError> + 'a;

/// Keyed state of one operator instance, organised by key group. Keys are bytes, unique within
/// their key group; values are bytes. One backend belongs to one task: `&mut self` methods need
/// no locking.
///
/// Backends track which keys changed since the last snapshot (or restore), so that a
/// [`SnapshotKind::Changes`] snapshot holds only those. Snapshots are portable: any backend
/// restores what any other wrote (the format is in [`mod@crate::format`]).
///
/// # Examples
///
/// ```
/// use anduin_state::{open_backend, BackendKind, KeyGroup, SnapshotKind};
///
/// let mut state = open_backend(BackendKind::Heap, None)?;
/// state.put(KeyGroup(7), b"alice", b"3")?;
/// let mut full = Vec::new();
/// let _ = state.snapshot(SnapshotKind::Full, &mut full)?;
/// state.put(KeyGroup(7), b"bob", b"5")?;
/// state.delete(KeyGroup(7), b"alice")?;
/// let mut changes = Vec::new();
/// let stats = state.snapshot(SnapshotKind::Changes, &mut changes)?;
/// assert_eq!(stats.entries, 2);
///
/// let mut restored = open_backend(BackendKind::Heap, None)?;
/// restored.restore(&mut full.as_slice(), &mut [&mut changes.as_slice()])?;
/// assert_eq!(restored.get(KeyGroup(7), b"alice")?, None);
/// assert_eq!(restored.get(KeyGroup(7), b"bob")?, Some(b"5".to_vec()));
/// # Ok::<(), anduin_state::StateError>(())
/// ```
pub trait StateBackend: Send {
    /// The value of `key` in key group `kg`.
    fn get(&self, kg: KeyGroup, key: &[u8]) -> Result<Option<Vec<u8>>, StateError>;

    /// Sets `key` of `kg` to `value`. Fails on a key longer than [`crate::MAX_KEY_LEN`] or a
    /// value longer than [`crate::MAX_VALUE_LEN`], changing nothing.
    fn put(&mut self, kg: KeyGroup, key: &[u8], value: &[u8]) -> Result<(), StateError>;

    /// Removes `key` of `kg`; removing an absent key is not an error.
    fn delete(&mut self, kg: KeyGroup, key: &[u8]) -> Result<(), StateError>;

    /// Calls `f` with every `(key, value)` of key group `kg`, in key order (bytewise), and
    /// stops at the first error `f` returns.
    fn scan(&self, kg: KeyGroup, f: &mut ScanCallback<'_>) -> Result<(), StateError>;

    /// Approximate bytes held, a metric. The heap backend counts key and value bytes exactly;
    /// the LSM backend reports its tables on disk (compressed, before compaction drops
    /// overwritten versions) plus its memtables.
    fn size_bytes(&self) -> u64;

    /// Writes a snapshot to `out`: [`SnapshotKind::Full`] holds every entry of every key group;
    /// [`SnapshotKind::Changes`] holds one record per key put or deleted since the previous
    /// snapshot of either kind (or restore), with that key's current state, in `(kg, key)`
    /// order. Resets the change tracking once the stream is written completely; after a failed
    /// write, the changes stay tracked for the next attempt.
    fn snapshot(
        &mut self,
        kind: SnapshotKind,
        out: &mut dyn Write,
    ) -> Result<SnapshotStats, StateError>;

    /// Replaces the whole state with `full` (a full snapshot, stream 0) followed by `changes`
    /// (changelogs, streams 1…, applied in order), and resets the change tracking.
    ///
    /// A stream that is truncated, fails its checksum, has the wrong kind (a changelog as
    /// `full`, a full snapshot among `changes`) or is otherwise malformed fails the restore with
    /// [`StateError::BadStream`] naming the stream. After any error the backend is empty.
    fn restore(
        &mut self,
        full: &mut dyn Read,
        changes: &mut [&mut dyn Read],
    ) -> Result<(), StateError>;

    /// Writes every entry of the key groups in `range` to `out` as a full snapshot, then
    /// removes them (recorded as deletes for the next changelog). If writing fails, nothing is
    /// removed.
    fn extract(
        &mut self,
        range: KeyGroupRange,
        out: &mut dyn Write,
    ) -> Result<SnapshotStats, StateError>;
}

/// Which backend holds a task's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum BackendKind {
    /// Everything in memory ([`HeapBackend`]): fastest, for state that fits in memory.
    #[default]
    Heap,
    /// An LSM tree on local disk ([`LsmBackend`]): for state larger than memory.
    Lsm,
}

/// Opens an empty backend of `kind`. The LSM backend works in `dir` (discarding whatever state
/// a previous process left there), or in a temporary directory removed on drop if `dir` is
/// `None`; the heap backend ignores `dir`.
pub fn open_backend(
    kind: BackendKind,
    dir: Option<&Path>,
) -> Result<Box<dyn StateBackend>, StateError> {
    Ok(match (kind, dir) {
        (BackendKind::Heap, _) => Box::new(HeapBackend::new()),
        (BackendKind::Lsm, Some(dir)) => Box::new(LsmBackend::open(dir)?),
        (BackendKind::Lsm, None) => Box::new(LsmBackend::open_temporary()?),
    })
}
