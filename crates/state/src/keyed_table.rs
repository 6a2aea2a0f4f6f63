//! The keyed state of one stateful operator instance (a window, a join, a pattern): entries
//! `(group key, sub-key) → value` stored through a [`StateBackend`] under the key group of
//! their group key.
//!
//! The group key is the bytes the hash exchange routes a row by; its key group is
//! [`key_group_for_key`] of those bytes, the function the exchange calls, so that an entry is
//! stored in the key group whose instance receives its rows. The sub-key tells the entries of
//! one group key apart (a window's tag and start, a sequence number; empty when a group key
//! has one entry). Every entry read back is checked: a key that does not split into group key
//! and sub-key, or a group key stored under another key group than its own, is an error,
//! never skipped.
//!
//! The backend tracks the entries put or deleted since the last snapshot, so a snapshot is
//! either full or the changes since the previous one; a restore takes the last full snapshot
//! and the changelogs after it and hands every entry back, key group after key group, for the
//! operator to rebuild its memory from. [`KeyedTable::export`] and [`KeyedTable::import`]
//! move a range of key groups from one table to another: the primitive of live rescaling.
//!
//! A scenario: a table restores what another wrote, then gives a range of key groups to a
//! third.
//!
//! ```
//! use anduin_state::{BackendKind, KeyGroupRange, KeyedTable, SnapshotKind, TableError};
//!
//! let mut counts = KeyedTable::new("count/1", BackendKind::Heap, None);
//! counts.put(b"alice", b"", b"3")?;
//! counts.put(b"bob", b"", b"5")?;
//! let mut full = Vec::new();
//! let _ = counts.snapshot(SnapshotKind::Full, &mut full)?;
//!
//! // After a failure: the entries come back, key group after key group.
//! let mut restored = KeyedTable::new("count/1", BackendKind::Heap, None);
//! let mut keys = Vec::new();
//! restored.restore(&mut full.as_slice(), &mut [], |e| {
//!     keys.push(e.group_key.to_vec());
//!     Ok::<(), TableError>(())
//! })?;
//! assert_eq!(keys.len(), 2);
//!
//! // A rescale: the key groups holding alice move to another instance.
//! let kg = restored.key_group(b"alice");
//! let range = KeyGroupRange::new(kg.0, kg.0 + 1);
//! let mut moved = Vec::new();
//! let _ = restored.export(range, &mut moved)?;
//! let mut other = KeyedTable::new("count/1", BackendKind::Heap, None);
//! other.import(range, &mut moved.as_slice())?;
//! assert_eq!(other.get(b"alice", b"")?, Some(b"3".to_vec()));
//! assert_eq!(restored.get(b"alice", b"")?, None);
//! # Ok::<(), TableError>(())
//! ```

use std::fmt;
use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::PathBuf;

use crate::entry_key;
use crate::format::{Record, SnapshotReader, SnapshotWriter};
use crate::{
    key_group_for_key, open_backend, BackendKind, KeyGroup, KeyGroupRange, SnapshotKind,
    SnapshotStats, StateBackend, StateError, StreamIndex, StreamProblem, TableError, TableProblem,
    DEFAULT_MAX_KEY_GROUPS,
};

/// One entry of a [`KeyedTable`], borrowed for the duration of a callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableEntry<'a> {
    /// The key group it is stored under: that of its group key.
    pub kg: KeyGroup,
    /// The group key: the bytes the exchange routes by.
    pub group_key: &'a [u8],
    /// What tells the entries of one group key apart (may be empty).
    pub sub_key: &'a [u8],
    /// The value.
    pub value: &'a [u8],
}

/// The keyed state of one operator instance: entries `(group key, sub-key) → value` under the
/// key group of their group key, in a backend opened on first write (an operator that never
/// holds state never opens one). See the [module documentation](self) for a scenario.
pub struct KeyedTable {
    operator: String,
    kind: BackendKind,
    /// Where an LSM backend works (a temporary directory if `None`).
    dir: Option<PathBuf>,
    max_key_groups: NonZeroU16,
    backend: Option<Box<dyn StateBackend>>,
}

impl fmt::Debug for KeyedTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedTable")
            .field("operator", &self.operator)
            .field("kind", &self.kind)
            .field("dir", &self.dir)
            .field("max_key_groups", &self.max_key_groups)
            .field("open", &self.backend.is_some())
            .finish()
    }
}

impl KeyedTable {
    /// The (empty, not yet opened) table of `operator`, in a backend of `kind`; an LSM backend
    /// works in `dir`, or in a temporary directory if `None`. Key groups are those of the
    /// exchange, [`DEFAULT_MAX_KEY_GROUPS`].
    pub fn new(operator: impl Into<String>, kind: BackendKind, dir: Option<PathBuf>) -> Self {
        KeyedTable {
            operator: operator.into(),
            kind,
            dir,
            max_key_groups: DEFAULT_MAX_KEY_GROUPS,
            backend: None,
        }
    }

    /// This table with `max` key groups instead of [`DEFAULT_MAX_KEY_GROUPS`] (the exchange
    /// that feeds the operator must route with the same number).
    pub fn with_max_key_groups(mut self, max: NonZeroU16) -> Self {
        self.max_key_groups = max;
        self
    }

    /// The operator whose state this is (named in every error).
    pub fn operator(&self) -> &str {
        &self.operator
    }

    /// The kind of backend.
    pub fn kind(&self) -> BackendKind {
        self.kind
    }

    /// Every key group of the query: `[0, max)`.
    pub fn all_key_groups(&self) -> KeyGroupRange {
        KeyGroupRange::new(0, self.max_key_groups.get())
    }

    /// The key group of `group_key`: [`key_group_for_key`], as the exchange routes it.
    pub fn key_group(&self, group_key: &[u8]) -> KeyGroup {
        key_group_for_key(group_key, self.max_key_groups)
    }

    /// The value of `sub_key` under `group_key`.
    pub fn get(&self, group_key: &[u8], sub_key: &[u8]) -> Result<Option<Vec<u8>>, TableError> {
        let Some(backend) = &self.backend else {
            return Ok(None);
        };
        let (kg, key) = (
            self.key_group(group_key),
            self.entry_key(group_key, sub_key)?,
        );
        let raw = backend.get(kg, &key).map_err(|e| self.backend_error(e))?;
        if !entry_key::is_long(group_key, sub_key) {
            return Ok(raw);
        }
        // A long group key's value carries it: another key with the same hash is an error.
        match raw {
            None => Ok(None),
            Some(stored) => {
                let (held, value) =
                    checked_long(kg, &key, &stored, group_key).map_err(|p| self.error(p))?;
                debug_assert_eq!(held, group_key);
                Ok(Some(value.to_vec()))
            }
        }
    }

    /// Sets `sub_key` under `group_key` to `value` (a change for the next changelog).
    pub fn put(
        &mut self,
        group_key: &[u8],
        sub_key: &[u8],
        value: &[u8],
    ) -> Result<(), TableError> {
        let (kg, key) = (
            self.key_group(group_key),
            self.entry_key(group_key, sub_key)?,
        );
        if entry_key::is_long(group_key, sub_key) {
            // Refused if another long key with the same hash holds the entry.
            let _ = self.get(group_key, sub_key)?;
            let wrapped = entry_key::wrap(group_key, value);
            let r = self.backend()?.put(kg, &key, &wrapped);
            return r.map_err(|e| self.backend_error(e));
        }
        let r = self.backend()?.put(kg, &key, value);
        r.map_err(|e| self.backend_error(e))
    }

    /// Removes `sub_key` under `group_key` (a change for the next changelog); removing an
    /// absent entry is not an error.
    pub fn delete(&mut self, group_key: &[u8], sub_key: &[u8]) -> Result<(), TableError> {
        let (kg, key) = (
            self.key_group(group_key),
            self.entry_key(group_key, sub_key)?,
        );
        if self.backend.is_some() && entry_key::is_long(group_key, sub_key) {
            // Refused if another long key with the same hash holds the entry.
            let _ = self.get(group_key, sub_key)?;
        }
        let Some(backend) = self.backend.as_mut() else {
            return Ok(()); // Never opened: empty.
        };
        let r = backend.delete(kg, &key);
        r.map_err(|e| self.backend_error(e))
    }

    /// Calls `f` with every entry of the key groups of `range`, key group after key group
    /// (within one, in the order of `(group key length, group key, sub-key)`), and stops at the
    /// first error. An entry that does not split, or is stored under a key group that is not
    /// its group key's, fails the scan.
    pub fn scan<E: From<TableError>>(
        &self,
        range: KeyGroupRange,
        mut f: impl FnMut(TableEntry<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        for kg in range.iter() {
            self.visit(kg, None, &mut f)?;
        }
        Ok(())
    }

    /// Calls `f` with every entry of `group_key`, in sub-key order. It reads the whole key
    /// group of `group_key`: it costs what that key group holds.
    pub fn scan_key<E: From<TableError>>(
        &self,
        group_key: &[u8],
        mut f: impl FnMut(TableEntry<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.visit(self.key_group(group_key), Some(group_key), &mut f)
    }

    /// Writes a snapshot of `kind` to `out`: every entry ([`SnapshotKind::Full`]) or the
    /// entries put or deleted since the previous snapshot or restore
    /// ([`SnapshotKind::Changes`]); then tracks changes afresh. A table never opened writes an
    /// empty stream of `kind` without opening its backend.
    pub fn snapshot(
        &mut self,
        kind: SnapshotKind,
        out: &mut dyn Write,
    ) -> Result<SnapshotStats, TableError> {
        let r = match self.backend.as_mut() {
            Some(backend) => backend.snapshot(kind, out),
            None => SnapshotWriter::new(out, kind).and_then(SnapshotWriter::finish),
        };
        r.map_err(|e| self.backend_error(e))
    }

    /// Replaces the table's entries with `full` (a full snapshot) and the changelogs
    /// `changes` after it, oldest first, then calls `f` with every entry, key group after key
    /// group, for the operator to rebuild its memory from.
    ///
    /// A damaged stream, an entry that does not split or is stored under another key group
    /// than its group key's, or an error of `f` fails the restore and leaves the table empty.
    pub fn restore<E: From<TableError>>(
        &mut self,
        full: &mut dyn Read,
        changes: &mut [&mut dyn Read],
        mut f: impl FnMut(TableEntry<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let r = self.backend()?.restore(full, changes);
        r.map_err(|e| self.backend_error(e))?;
        let result = self.scan(self.all_key_groups(), &mut f);
        if result.is_err() {
            // The first error is the one to report; the table must not keep half a restore.
            let _ = self.clear();
        }
        result
    }

    /// Writes every entry of the key groups of `range` to `out` as a full snapshot (what
    /// [`KeyedTable::import`] reads), then removes them, recorded as deletes for the next
    /// changelog. If writing fails, nothing is removed.
    pub fn export(
        &mut self,
        range: KeyGroupRange,
        out: &mut dyn Write,
    ) -> Result<SnapshotStats, TableError> {
        let r = match self.backend.as_mut() {
            Some(backend) => backend.extract(range, out),
            None => SnapshotWriter::new(out, SnapshotKind::Full).and_then(SnapshotWriter::finish),
        };
        r.map_err(|e| self.backend_error(e))
    }

    /// A live rescale's giving side: [`KeyedTable::export`] of each of `ranges`, one full
    /// stream ("piece") per range, in order; what [`KeyedTable::import_scanned`] of another
    /// instance reads.
    pub fn export_each(&mut self, ranges: &[KeyGroupRange]) -> Result<Vec<Vec<u8>>, TableError> {
        let mut pieces = Vec::with_capacity(ranges.len());
        for range in ranges {
            let mut piece = Vec::new();
            let _stats = self.export(*range, &mut piece)?;
            pieces.push(piece);
        }
        Ok(pieces)
    }

    /// A live rescale's taking side: [`KeyedTable::import`] of `piece` (what
    /// [`KeyedTable::export_each`] of another instance wrote for `range`), then `f` with each
    /// entry of `range`, as [`KeyedTable::scan`] calls it, to rebuild them in memory.
    pub fn import_scanned<E: From<TableError>>(
        &mut self,
        range: KeyGroupRange,
        piece: &[u8],
        f: impl FnMut(TableEntry<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let _count = self.import(range, &mut &piece[..])?;
        self.scan(range, f)
    }

    /// Adds the entries of `input` (what [`KeyedTable::export`] wrote for `range`), recorded
    /// as puts for the next changelog; returns how many. The table must hold nothing in
    /// `range` (a range moves only to an instance that does not own it), and every entry must
    /// be of a key group in `range`, split, and be stored under its group key's key group.
    /// If anything fails, the table holds nothing in `range` afterwards.
    pub fn import(
        &mut self,
        range: KeyGroupRange,
        input: &mut dyn Read,
    ) -> Result<u64, TableError> {
        if let Some(kg) = self.first_held(range)? {
            return Err(self.error(TableProblem::ImportConflict { range, kg }));
        }
        let max = self.max_key_groups;
        let backend = self.backend()?;
        let result = import_records(backend.as_mut(), max, range, input);
        if result.is_err() {
            // The first error is the one to report.
            let _ = remove_range(backend.as_mut(), range);
        }
        result.map_err(|problem| self.error(problem))
    }

    /// Approximate bytes held (a metric, see [`StateBackend::size_bytes`]); `None` while the
    /// backend is not open.
    pub fn size_bytes(&self) -> Option<u64> {
        self.backend.as_ref().map(|b| b.size_bytes())
    }

    pub(crate) fn error(&self, problem: TableProblem) -> TableError {
        TableError {
            operator: self.operator.clone(),
            problem: Box::new(problem),
        }
    }

    fn backend_error(&self, e: StateError) -> TableError {
        self.error(TableProblem::Backend(e))
    }

    fn entry_key(&self, group_key: &[u8], sub_key: &[u8]) -> Result<Vec<u8>, TableError> {
        entry_key::encode(group_key, sub_key).map_err(|t| {
            self.error(TableProblem::EntryKeyTooLong {
                group_key: t.group_key,
                sub_key: t.sub_key,
            })
        })
    }

    fn backend(&mut self) -> Result<&mut Box<dyn StateBackend>, TableError> {
        if self.backend.is_none() {
            let opened = open_backend(self.kind, self.dir.as_deref());
            self.backend = Some(opened.map_err(|e| self.backend_error(e))?);
        }
        Ok(self.backend.as_mut().expect("opened just above"))
    }

    /// Calls `f` with the entries of `kg` (only those of `only`, if given), checked.
    fn visit<E: From<TableError>>(
        &self,
        kg: KeyGroup,
        only: Option<&[u8]>,
        f: &mut dyn FnMut(TableEntry<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let Some(backend) = &self.backend else {
            return Ok(());
        };
        // Copied out so that `f` may fail with its own error type.
        let mut found: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let r = backend.scan(kg, &mut |key, value| {
            // An entry that does not split is kept, to be reported below.
            let keep = match (only, entry_key::split(key)) {
                (Some(wanted), Ok(entry_key::Split::Short(group_key, _))) => group_key == wanted,
                (Some(wanted), Ok(entry_key::Split::Long(_))) => {
                    entry_key::unwrap(value).is_none_or(|(group_key, _)| group_key == wanted)
                }
                _ => true,
            };
            if keep {
                found.push((key.to_vec(), value.to_vec()));
            }
            Ok(())
        });
        r.map_err(|e| self.backend_error(e))?;
        for (key, value) in &found {
            let (group_key, sub_key, value) =
                check_entry(self.max_key_groups, kg, key, value).map_err(|p| self.error(p))?;
            f(TableEntry {
                kg,
                group_key,
                sub_key,
                value,
            })?;
        }
        Ok(())
    }

    /// The first key group of `range` that holds an entry.
    pub(crate) fn first_held(&self, range: KeyGroupRange) -> Result<Option<KeyGroup>, TableError> {
        let Some(backend) = &self.backend else {
            return Ok(None);
        };
        for kg in range.iter() {
            let mut held = false;
            let r = backend.scan(kg, &mut |_, _| {
                held = true;
                Ok(())
            });
            r.map_err(|e| self.backend_error(e))?;
            if held {
                return Ok(Some(kg));
            }
        }
        Ok(None)
    }

    /// Empties the table (restoring an empty full snapshot keeps the backend open).
    fn clear(&mut self) -> Result<(), TableError> {
        let Some(backend) = self.backend.as_mut() else {
            return Ok(());
        };
        let mut empty = Vec::new();
        let r = SnapshotWriter::new(&mut empty as &mut dyn Write, SnapshotKind::Full)
            .and_then(SnapshotWriter::finish)
            .and_then(|_| backend.restore(&mut empty.as_slice(), &mut []));
        r.map_err(|e| self.backend_error(e))
    }
}

/// An entry read back: its group key, sub-key and value.
type Parts<'a> = (&'a [u8], &'a [u8], &'a [u8]);

/// The group key, sub-key and value of the entry stored as `key` with `value` in `kg`, if it
/// splits (a long group key: its value carries it, and it has the key's hash) and its group
/// key belongs to `kg`.
fn check_entry<'a>(
    max: NonZeroU16,
    kg: KeyGroup,
    key: &'a [u8],
    value: &'a [u8],
) -> Result<Parts<'a>, TableProblem> {
    let corrupt = |reason: String| TableProblem::CorruptEntry {
        kg,
        key: key.iter().take(32).copied().collect(),
        reason,
    };
    let (group_key, sub_key, value) =
        match entry_key::split(key).map_err(|why| corrupt(why.to_string()))? {
            entry_key::Split::Short(group_key, sub_key) => (group_key, sub_key, value),
            entry_key::Split::Long(sub_key) => {
                let (group_key, value) = entry_key::unwrap(value)
                    .ok_or_else(|| corrupt("a long group key's value is cut short".into()))?;
                if entry_key::encode(group_key, sub_key).ok().as_deref() != Some(key) {
                    return Err(corrupt("a long group key's value holds another key".into()));
                }
                (group_key, sub_key, value)
            }
        };
    let belongs = key_group_for_key(group_key, max);
    if belongs != kg {
        return Err(TableProblem::MisplacedEntry {
            stored: kg,
            belongs,
        });
    }
    Ok((group_key, sub_key, value))
}

/// The group key and value of the long-form entry stored as `key` with `stored` in `kg`,
/// which `get` asked for under `wanted`: another group key with the same hash is an error.
fn checked_long<'a>(
    kg: KeyGroup,
    key: &[u8],
    stored: &'a [u8],
    wanted: &[u8],
) -> Result<(&'a [u8], &'a [u8]), TableProblem> {
    let (held, value) = entry_key::unwrap(stored).ok_or_else(|| TableProblem::CorruptEntry {
        kg,
        key: key.iter().take(32).copied().collect(),
        reason: "a long group key's value is cut short".into(),
    })?;
    if held != wanted {
        return Err(TableProblem::LongKeyCollision {
            kg,
            len: wanted.len(),
        });
    }
    Ok((held, value))
}

/// Puts every entry of the full stream `input` into `backend`, checking each; how many.
fn import_records(
    backend: &mut dyn StateBackend,
    max: NonZeroU16,
    range: KeyGroupRange,
    input: &mut dyn Read,
) -> Result<u64, TableProblem> {
    let mut reader = SnapshotReader::new(input, StreamIndex(0)).map_err(TableProblem::Backend)?;
    reader
        .expect_kind(SnapshotKind::Full)
        .map_err(TableProblem::Backend)?;
    let mut imported = 0;
    loop {
        let offset = reader.offset();
        let record = reader.next_record().map_err(TableProblem::Backend)?;
        match record {
            None => return Ok(imported),
            Some(Record::Put { kg, key, value }) => {
                if !range.contains(kg) {
                    return Err(TableProblem::ImportOutsideRange { range, kg });
                }
                check_entry(max, kg, key, value)?;
                backend.put(kg, key, value).map_err(TableProblem::Backend)?;
                imported += 1;
            }
            // The reader refuses deletes in a full stream; a record of a later kind is not an
            // entry this build can import.
            Some(_) => {
                return Err(TableProblem::Backend(StateError::BadStream {
                    stream: StreamIndex(0),
                    problem: StreamProblem::Malformed {
                        offset,
                        reason: "a record other than a put in an exported range".into(),
                    },
                }))
            }
        }
    }
}

/// Deletes every entry of the key groups of `range`.
fn remove_range(backend: &mut dyn StateBackend, range: KeyGroupRange) -> Result<(), StateError> {
    for kg in range.iter() {
        let mut keys = Vec::new();
        backend.scan(kg, &mut |key, _| {
            keys.push(key.to_vec());
            Ok(())
        })?;
        for key in keys {
            backend.delete(kg, &key)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::HeapBackend;

    const OP: &str = "win/1";

    fn table() -> KeyedTable {
        KeyedTable::new(OP, BackendKind::Heap, None)
    }

    fn full_of(table: &mut KeyedTable) -> Vec<u8> {
        let mut out = Vec::new();
        let _ = table
            .snapshot(SnapshotKind::Full, &mut out)
            .expect("writes to memory");
        out
    }

    /// A full snapshot of a raw backend holding `key` in `kg` (what no table writes).
    fn raw_snapshot(kg: KeyGroup, key: &[u8]) -> Vec<u8> {
        let mut raw = HeapBackend::new();
        raw.put(kg, key, b"v").expect("small");
        let mut out = Vec::new();
        let _ = raw
            .snapshot(SnapshotKind::Full, &mut out)
            .expect("writes to memory");
        out
    }

    /// `(key group, group key, sub-key)` of every entry.
    type Keys = Vec<(KeyGroup, Vec<u8>, Vec<u8>)>;

    fn entries_of(table: &KeyedTable) -> Result<Keys, TableError> {
        let mut out = Vec::new();
        table.scan(table.all_key_groups(), |e| {
            out.push((e.kg, e.group_key.to_vec(), e.sub_key.to_vec()));
            Ok::<(), TableError>(())
        })?;
        Ok(out)
    }

    #[test]
    fn a_table_opens_its_backend_on_the_first_write_only() -> Result<(), TableError> {
        let mut t = KeyedTable::new(OP, BackendKind::Lsm, None);
        assert_eq!(t.get(b"k", b"")?, None);
        t.delete(b"k", b"")?;
        let mut empty = Vec::new();
        let stats = t.snapshot(SnapshotKind::Changes, &mut empty)?;
        assert_eq!(stats.entries, 0);
        assert_eq!(
            t.size_bytes(),
            None,
            "reads, deletes and snapshots open nothing"
        );
        t.put(b"k", b"", b"value")?;
        assert!(t.size_bytes().is_some());
        assert_eq!(t.get(b"k", b"")?, Some(b"value".to_vec()));
        // The empty stream of a table never opened restores to nothing.
        let mut other = table();
        other
            .restore(&mut empty.as_slice(), &mut [], |_| {
                Err::<(), TableError>(other_error("no entry expected"))
            })
            .expect_err("a changelog is no full snapshot");
        Ok(())
    }

    fn other_error(what: &str) -> TableError {
        TableError {
            operator: what.to_string(),
            problem: Box::new(TableProblem::ImportConflict {
                range: KeyGroupRange::new(0, 0),
                kg: KeyGroup(0),
            }),
        }
    }

    #[test]
    fn entries_are_stored_under_the_key_group_the_exchange_routes_their_key_to(
    ) -> Result<(), TableError> {
        let mut t = table();
        for key in [&b""[..], b"a", b"user-42", b"\x00\x01\x02\x03"] {
            t.put(key, b"s", key)?;
            let kg = key_group_for_key(key, DEFAULT_MAX_KEY_GROUPS);
            assert_eq!(t.key_group(key), kg);
            let mut seen = Vec::new();
            t.scan(KeyGroupRange::new(kg.0, kg.0 + 1), |e| {
                seen.push(e.group_key.to_vec());
                Ok::<(), TableError>(())
            })?;
            assert!(seen.contains(&key.to_vec()), "{key:?} in {kg}");
        }
        Ok(())
    }

    #[test]
    fn scan_key_returns_one_group_keys_entries_in_sub_key_order() -> Result<(), TableError> {
        let mut t = table();
        t.put(b"a", b"\x02", b"2")?;
        t.put(b"a", b"\x01", b"1")?;
        t.put(b"ab", b"", b"other")?;
        t.put(b"", b"a\x01", b"global")?;
        let mut seen = Vec::new();
        t.scan_key(b"a", |e| {
            seen.push((e.sub_key.to_vec(), e.value.to_vec()));
            Ok::<(), TableError>(())
        })?;
        assert_eq!(
            seen,
            vec![
                (b"\x01".to_vec(), b"1".to_vec()),
                (b"\x02".to_vec(), b"2".to_vec())
            ]
        );
        Ok(())
    }

    #[test]
    fn a_changelog_holds_exactly_the_entries_put_or_deleted_since_the_last_snapshot(
    ) -> Result<(), TableError> {
        for kind in [BackendKind::Heap, BackendKind::Lsm] {
            let mut t = KeyedTable::new(OP, kind, None);
            for i in 0..10u8 {
                t.put(&[i], b"", &[i])?;
            }
            let full = full_of(&mut t);
            t.put(&[1], b"", b"new")?;
            t.put(&[1], b"", b"newer")?;
            t.delete(&[2], b"")?;
            t.put(&[20], b"x", b"added")?;
            let mut changes = Vec::new();
            let stats = t.snapshot(SnapshotKind::Changes, &mut changes)?;
            assert_eq!(stats.entries, 3, "{kind:?}: one record per entry touched");
            let mut back = table();
            let mut model = BTreeMap::new();
            back.restore(&mut full.as_slice(), &mut [&mut changes.as_slice()], |e| {
                model.insert((e.group_key.to_vec(), e.sub_key.to_vec()), e.value.to_vec());
                Ok::<(), TableError>(())
            })?;
            assert_eq!(model.len(), 10, "{kind:?}");
            assert_eq!(model.get(&(vec![1], vec![])), Some(&b"newer".to_vec()));
            assert_eq!(model.get(&(vec![2], vec![])), None);
            assert_eq!(
                model.get(&(vec![20], b"x".to_vec())),
                Some(&b"added".to_vec())
            );
        }
        Ok(())
    }

    #[test]
    fn an_entry_that_does_not_split_fails_the_restore_and_leaves_the_table_empty() {
        let mut t = table();
        t.put(b"stale", b"", b"gone after any restore")
            .expect("small");
        let snapshot = raw_snapshot(KeyGroup(3), b"\x00\x09ab");
        let mut calls = 0;
        let e = t
            .restore(&mut snapshot.as_slice(), &mut [], |_| {
                calls += 1;
                Ok::<(), TableError>(())
            })
            .expect_err("a corrupt entry is an error, never skipped");
        assert_eq!(calls, 0);
        assert!(e.is_corrupt_state());
        assert!(matches!(
            *e.problem,
            TableProblem::CorruptEntry {
                kg: KeyGroup(3),
                ..
            }
        ));
        let message = e.to_string();
        assert!(message.contains("operator win/1"), "{message}");
        assert!(
            message.contains("restore from an earlier checkpoint"),
            "{message}"
        );
        assert_eq!(
            entries_of(&t).expect("clean"),
            vec![],
            "nothing half restored"
        );
    }

    #[test]
    fn an_entry_stored_under_another_key_group_than_its_keys_fails_the_restore() {
        let key = entry_key::encode(b"alice", b"").expect("short");
        let right = key_group_for_key(b"alice", DEFAULT_MAX_KEY_GROUPS);
        let wrong = KeyGroup((right.0 + 1) % DEFAULT_MAX_KEY_GROUPS.get());
        let snapshot = raw_snapshot(wrong, &key);
        let e = table()
            .restore(&mut snapshot.as_slice(), &mut [], |_| {
                Ok::<(), TableError>(())
            })
            .expect_err("routing and storage must agree");
        assert!(
            matches!(*e.problem, TableProblem::MisplacedEntry { stored, belongs } if stored == wrong && belongs == right),
            "{e}"
        );
    }

    #[test]
    fn an_error_of_the_operators_callback_fails_the_restore_and_empties_the_table() {
        let mut source = table();
        source.put(b"a", b"", b"1").expect("small");
        let full = full_of(&mut source);
        let mut t = table();
        let e = t
            .restore(&mut full.as_slice(), &mut [], |_| {
                Err(other_error("decoding"))
            })
            .expect_err("the callback's error");
        assert_eq!(e.operator, "decoding");
        assert_eq!(entries_of(&t).expect("clean"), vec![]);
    }

    #[test]
    fn importing_into_a_range_the_table_already_holds_is_refused() -> Result<(), TableError> {
        let mut a = table();
        let mut b = table();
        a.put(b"k", b"", b"from a")?;
        b.put(b"k", b"", b"from b")?;
        let kg = a.key_group(b"k");
        let range = KeyGroupRange::new(kg.0, kg.0 + 1);
        let mut moved = Vec::new();
        let _ = a.export(range, &mut moved)?;
        let e = b
            .import(range, &mut moved.as_slice())
            .expect_err("b owns the range");
        assert!(matches!(*e.problem, TableProblem::ImportConflict { kg: k, .. } if k == kg));
        assert_eq!(b.get(b"k", b"")?, Some(b"from b".to_vec()), "b unchanged");
        Ok(())
    }

    #[test]
    fn a_failed_import_leaves_nothing_of_the_range() -> Result<(), TableError> {
        let mut a = table();
        for i in 0..200u16 {
            a.put(&i.to_be_bytes(), b"", b"v")?;
        }
        let all = a.all_key_groups();
        let mut moved = Vec::new();
        let stats = a.export(all, &mut moved)?;
        assert_eq!(stats.entries, 200);
        assert_eq!(entries_of(&a)?, vec![], "exported entries leave the source");

        // Truncated: the entries read before the damage are removed again.
        let mut b = table();
        let cut = moved.get(..moved.len() - 3).expect("longer than 3");
        let e = b.import(all, &mut &cut[..]).expect_err("truncated");
        assert!(e.is_corrupt_state(), "{e}");
        assert_eq!(entries_of(&b)?, vec![]);

        // An entry outside the range announced.
        let narrow = KeyGroupRange::new(0, 1);
        let e = b.import(narrow, &mut moved.as_slice()).expect_err("wider");
        assert!(
            matches!(*e.problem, TableProblem::ImportOutsideRange { .. }),
            "{e}"
        );
        assert_eq!(entries_of(&b)?, vec![]);

        // The whole stream imports, and b's next changelog carries it.
        let full = full_of(&mut b);
        assert_eq!(b.import(all, &mut moved.as_slice())?, 200);
        let mut changes = Vec::new();
        let _ = b.snapshot(SnapshotKind::Changes, &mut changes)?;
        let mut c = table();
        let mut n = 0;
        c.restore(&mut full.as_slice(), &mut [&mut changes.as_slice()], |_| {
            n += 1;
            Ok::<(), TableError>(())
        })?;
        assert_eq!(n, 200);
        Ok(())
    }

    #[test]
    fn a_sub_key_beyond_the_limit_is_refused_naming_both_lengths() {
        let mut t = table();
        let long = vec![0u8; crate::MAX_KEY_LEN];
        let e = t.put(b"k", &long, b"v").expect_err("too long");
        assert!(matches!(
            *e.problem,
            TableProblem::EntryKeyTooLong { group_key: 1, .. }
        ));
        assert_eq!(t.size_bytes(), None, "nothing opened for a refused write");
    }

    /// Every entry by (group key, sub-key).
    type Entries = BTreeMap<(Vec<u8>, Vec<u8>), Vec<u8>>;

    /// A group key longer than an entry key may be (a 70 KB string key) is stored under its
    /// hash with the key in the value: it comes back whole from get, scans, a snapshot and
    /// its restore, an export and its import, and goes with delete; beside short keys.
    #[test]
    fn a_group_key_longer_than_an_entry_key_comes_back_whole_through_every_path(
    ) -> Result<(), TableError> {
        for kind in [BackendKind::Heap, BackendKind::Lsm] {
            let dir = tempfile::tempdir().expect("tempdir");
            let mut t = KeyedTable::new(OP, kind, Some(dir.path().join("a")));
            let long: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
            let other: Vec<u8> = long.iter().map(|b| b ^ 1).collect();
            t.put(&long, b"p1", b"one")?;
            t.put(&long, b"p2", b"two")?;
            t.put(&other, b"p1", b"other")?;
            t.put(b"short", b"", b"s")?;
            assert_eq!(t.get(&long, b"p1")?, Some(b"one".to_vec()));
            assert_eq!(t.get(&other, b"p1")?, Some(b"other".to_vec()));
            assert_eq!(t.get(&long, b"p3")?, None);
            let mut seen = Vec::new();
            t.scan_key(&long, |e| {
                seen.push((e.group_key.len(), e.sub_key.to_vec(), e.value.to_vec()));
                Ok::<(), TableError>(())
            })?;
            assert_eq!(
                seen,
                vec![
                    (70_000, b"p1".to_vec(), b"one".to_vec()),
                    (70_000, b"p2".to_vec(), b"two".to_vec())
                ]
            );
            let all = |t: &KeyedTable| -> Result<Entries, TableError> {
                let mut m = BTreeMap::new();
                t.scan(t.all_key_groups(), |e| {
                    m.insert((e.group_key.to_vec(), e.sub_key.to_vec()), e.value.to_vec());
                    Ok::<(), TableError>(())
                })?;
                Ok(m)
            };
            let before = all(&t)?;
            assert_eq!(before.len(), 4);
            let mut full = Vec::new();
            let _ = t.snapshot(SnapshotKind::Full, &mut full)?;
            let mut back = KeyedTable::new(OP, kind, Some(dir.path().join("b")));
            back.restore(&mut full.as_slice(), &mut [], |_| Ok::<(), TableError>(()))?;
            assert_eq!(all(&back)?, before, "{kind:?}: restored");
            let kg = t.key_group(&long);
            let range = KeyGroupRange::new(kg.0, kg.0 + 1);
            let mut moved = Vec::new();
            let _ = back.export(range, &mut moved)?;
            assert_eq!(back.get(&long, b"p1")?, None);
            let mut other_table = KeyedTable::new(OP, kind, Some(dir.path().join("c")));
            other_table.import(range, &mut moved.as_slice())?;
            assert_eq!(other_table.get(&long, b"p2")?, Some(b"two".to_vec()));
            t.delete(&long, b"p1")?;
            assert_eq!(t.get(&long, b"p1")?, None);
            assert_eq!(t.get(&long, b"p2")?, Some(b"two".to_vec()));
        }
        Ok(())
    }
}
