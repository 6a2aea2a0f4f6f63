//! The LSM backend: state in an fjall keyspace on local disk, for state larger than memory.
//!
//! Stored keys are the key group as 2 big-endian bytes followed by the key, so a key group is
//! a contiguous range and a full scan is in `(kg, key)` order, the order of a full snapshot,
//! which is why a full restore can bulk-load sorted tables instead of writing through the
//! memtable. The directory is working storage, not durable state: checkpoints are the
//! durability, so the journal is never synced and whatever a previous process left in the
//! directory is discarded on open.

mod touched;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use fjall::{Database, Keyspace, KeyspaceCreateOptions};

use crate::format::{check_entry, check_key, Record, SnapshotReader, SnapshotWriter};
use crate::restore::{restore_streams, RestoreTarget};
use crate::storage_key;
use crate::{
    KeyGroup, KeyGroupRange, ScanCallback, SnapshotKind, SnapshotStats, StateBackend, StateError,
};
use touched::TouchedKeys;

/// Tuning of an [`LsmBackend`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LsmOptions {
    /// Memory for the record of keys changed since the last snapshot, before it spills to
    /// disk. Default 32 MiB.
    pub change_tracking_memory: usize,
    /// The block cache. Default 64 MiB.
    pub cache_bytes: u64,
}

impl Default for LsmOptions {
    fn default() -> Self {
        LsmOptions {
            change_tracking_memory: 32 << 20,
            cache_bytes: 64 << 20,
        }
    }
}

impl LsmOptions {
    /// These options with `bytes` of change-tracking memory.
    pub fn with_change_tracking_memory(mut self, bytes: usize) -> Self {
        self.change_tracking_memory = bytes;
        self
    }

    /// These options with a block cache of `bytes`.
    pub fn with_cache_bytes(mut self, bytes: u64) -> Self {
        self.cache_bytes = bytes;
        self
    }
}

/// State in an fjall LSM tree on local disk. Memory use is bounded (memtables, block cache,
/// change tracking) whatever the size of the state.
pub struct LsmBackend {
    data: Keyspace,
    touched: TouchedKeys,
    db: Database,
    dir: PathBuf,
}

impl LsmBackend {
    /// Opens an empty backend working in `dir` (created if missing; any state left there is
    /// discarded).
    pub fn open(dir: &Path) -> Result<Self, StateError> {
        LsmBackend::open_with(Some(dir), LsmOptions::default())
    }

    /// Opens an empty backend in a new temporary directory, removed when the backend drops.
    pub fn open_temporary() -> Result<Self, StateError> {
        LsmBackend::open_with(None, LsmOptions::default())
    }

    /// Opens an empty backend in `dir`, or in a temporary directory if `None`.
    pub fn open_with(dir: Option<&Path>, options: LsmOptions) -> Result<Self, StateError> {
        let (dir, temporary) = match dir {
            Some(dir) => (dir.to_path_buf(), false),
            None => {
                let temp = tempfile::Builder::new()
                    .prefix("anduin-state-")
                    .tempdir()
                    .map_err(|source| StateError::WorkDir {
                        dir: std::env::temp_dir(),
                        source,
                    })?;
                (temp.keep(), true)
            }
        };
        let lsm = |source| StateError::Lsm {
            dir: dir.clone(),
            source,
        };
        let db = Database::builder(&dir)
            .manual_journal_persist(true)
            .cache_size(options.cache_bytes)
            .temporary(temporary)
            .open()
            .map_err(lsm)?;
        let keyspace_options = || KeyspaceCreateOptions::default().manual_journal_persist(true);
        let data = db.keyspace("state", keyspace_options).map_err(lsm)?;
        data.clear().map_err(lsm)?;
        let spilled = db.keyspace("touched", keyspace_options).map_err(lsm)?;
        let touched = TouchedKeys::new(spilled, options.change_tracking_memory, dir.clone())?;
        Ok(LsmBackend {
            data,
            touched,
            db,
            dir,
        })
    }

    /// The directory the backend works in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn lsm(&self) -> impl Fn(fjall::Error) -> StateError + '_ {
        |source| StateError::Lsm {
            dir: self.dir.clone(),
            source,
        }
    }

    fn write_full(&self, w: &mut SnapshotWriter<&mut dyn Write>) -> Result<(), StateError> {
        for guard in self.data.iter() {
            let (stored, value) = guard.into_inner().map_err(self.lsm())?;
            let (kg, key) = decode(&stored);
            w.put(kg, key, &value)?;
        }
        Ok(())
    }

    fn write_changes(&self, w: &mut SnapshotWriter<&mut dyn Write>) -> Result<(), StateError> {
        self.touched.for_each(|stored| {
            let (kg, key) = decode(stored);
            match self.data.get(stored).map_err(self.lsm())? {
                Some(value) => w.put(kg, key, &value),
                None => w.delete(kg, key),
            }
        })
    }

    /// The stored keys of `range`: from the first key of `range.start` up to (excluding) the
    /// first key of `range.end`.
    fn range_bounds(range: KeyGroupRange) -> std::ops::Range<[u8; 2]> {
        storage_key::group_start(range.start)..storage_key::group_start(range.end)
    }
}

/// Splits a stored key; every key this backend stores starts with its key group.
fn decode(stored: &[u8]) -> (KeyGroup, &[u8]) {
    storage_key::decode(stored).expect("every stored key starts with its 2-byte key group")
}

impl StateBackend for LsmBackend {
    fn get(&self, kg: KeyGroup, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        let value = self
            .data
            .get(storage_key::encode(kg, key))
            .map_err(self.lsm())?;
        Ok(value.map(|v| v.to_vec()))
    }

    fn put(&mut self, kg: KeyGroup, key: &[u8], value: &[u8]) -> Result<(), StateError> {
        check_entry(kg, key, value)?;
        let stored = storage_key::encode(kg, key);
        // Tracked before written: a failed write leaves a tracked, unchanged key (harmless),
        // never an untracked change.
        self.touched.insert(&stored)?;
        self.data
            .insert(stored.as_slice(), value)
            .map_err(self.lsm())
    }

    fn delete(&mut self, kg: KeyGroup, key: &[u8]) -> Result<(), StateError> {
        check_key(kg, key)?;
        let stored = storage_key::encode(kg, key);
        self.touched.insert(&stored)?;
        self.data.remove(stored.as_slice()).map_err(self.lsm())
    }

    fn scan(&self, kg: KeyGroup, f: &mut ScanCallback<'_>) -> Result<(), StateError> {
        for guard in self.data.prefix(storage_key::group_start(kg.0)) {
            let (stored, value) = guard.into_inner().map_err(self.lsm())?;
            f(decode(&stored).1, &value)?;
        }
        Ok(())
    }

    fn size_bytes(&self) -> u64 {
        self.data.disk_space() + self.db.write_buffer_size()
    }

    fn snapshot(
        &mut self,
        kind: SnapshotKind,
        out: &mut dyn Write,
    ) -> Result<SnapshotStats, StateError> {
        let mut w = SnapshotWriter::new(out, kind)?;
        match kind {
            SnapshotKind::Full => self.write_full(&mut w)?,
            SnapshotKind::Changes => self.write_changes(&mut w)?,
        }
        let stats = w.finish()?;
        self.touched.clear()?;
        Ok(stats)
    }

    fn restore(
        &mut self,
        full: &mut dyn Read,
        changes: &mut [&mut dyn Read],
    ) -> Result<(), StateError> {
        restore_streams(self, full, changes)
    }

    fn extract(
        &mut self,
        range: KeyGroupRange,
        out: &mut dyn Write,
    ) -> Result<SnapshotStats, StateError> {
        let mut w = SnapshotWriter::new(out, SnapshotKind::Full)?;
        if range.is_empty() {
            return w.finish();
        }
        for guard in self.data.range(LsmBackend::range_bounds(range)) {
            let (stored, value) = guard.into_inner().map_err(self.lsm())?;
            let (kg, key) = decode(&stored);
            w.put(kg, key, &value)?;
        }
        let stats = w.finish()?;
        for guard in self.data.range(LsmBackend::range_bounds(range)) {
            let stored = guard.key().map_err(self.lsm())?;
            self.touched.insert(&stored)?;
            self.data.remove(stored).map_err(self.lsm())?;
        }
        Ok(stats)
    }
}

impl RestoreTarget for LsmBackend {
    fn clear(&mut self) -> Result<(), StateError> {
        self.data.clear().map_err(self.lsm())?;
        self.touched.clear()
    }

    fn load_full(&mut self, reader: &mut SnapshotReader<&mut dyn Read>) -> Result<(), StateError> {
        let lsm = |source| StateError::Lsm {
            dir: self.dir.clone(),
            source,
        };
        let mut ingestion = self.data.start_ingestion().map_err(lsm)?;
        // The reader guarantees strictly increasing (kg, key), hence stored-key, order: the
        // ingestion's ordering assertion cannot fire.
        while let Some(record) = reader.next_record()? {
            match record {
                Record::Put { kg, key, value } => ingestion
                    .write(storage_key::encode(kg, key), value)
                    .map_err(lsm)?,
                Record::Delete { kg, key } => ingestion
                    .write_tombstone(storage_key::encode(kg, key))
                    .map_err(lsm)?,
            }
        }
        ingestion.finish().map_err(lsm)
    }

    fn apply_changes(
        &mut self,
        reader: &mut SnapshotReader<&mut dyn Read>,
    ) -> Result<(), StateError> {
        // One write per record (not a batch): a batch gives all its writes one sequence
        // number, which would make two records of the same key ambiguous.
        while let Some(record) = reader.next_record()? {
            match record {
                Record::Put { kg, key, value } => self
                    .data
                    .insert(storage_key::encode(kg, key), value)
                    .map_err(self.lsm())?,
                Record::Delete { kg, key } => self
                    .data
                    .remove(storage_key::encode(kg, key))
                    .map_err(self.lsm())?,
            }
        }
        Ok(())
    }
}
