//! The heap backend: every key group a sorted map in memory.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Read, Write};

use crate::format::{check_entry, check_key, Record, SnapshotReader, SnapshotWriter};
use crate::restore::{restore_streams, RestoreTarget};
use crate::{
    KeyGroup, KeyGroupRange, ScanCallback, SnapshotKind, SnapshotStats, StateBackend, StateError,
};

/// A key group's entries from a full stream, in key order.
type GroupRun = (u16, Vec<(Vec<u8>, Vec<u8>)>);

/// State in memory: a `BTreeMap` of keys per key group, and the set of keys changed since the
/// last snapshot. The default backend, for state that fits comfortably in memory.
#[derive(Debug, Default)]
pub struct HeapBackend {
    groups: BTreeMap<u16, BTreeMap<Vec<u8>, Vec<u8>>>,
    /// Keys put or deleted since the last snapshot or restore, per key group (hashed: cheaper
    /// per write than a second ordered map; sorted once per snapshot instead).
    touched: HashMap<u16, HashSet<Vec<u8>>>,
    /// Key and value bytes held.
    bytes: u64,
}

impl HeapBackend {
    /// An empty backend.
    pub fn new() -> Self {
        HeapBackend::default()
    }

    /// Sets an entry without recording it as a change.
    fn set(&mut self, kg: KeyGroup, key: &[u8], value: &[u8]) {
        // One search per put: the key is copied even when it exists, which is cheaper than
        // searching twice for a new one.
        match self.groups.entry(kg.0).or_default().entry(key.to_vec()) {
            Entry::Occupied(mut old) => {
                let old = old.get_mut();
                self.bytes -= old.len() as u64;
                old.clear();
                old.extend_from_slice(value);
            }
            Entry::Vacant(slot) => {
                self.bytes += key.len() as u64;
                slot.insert(value.to_vec());
            }
        }
        self.bytes += value.len() as u64;
    }

    /// Removes an entry without recording it as a change; whether it was there.
    fn remove(&mut self, kg: KeyGroup, key: &[u8]) -> bool {
        let Some(group) = self.groups.get_mut(&kg.0) else {
            return false;
        };
        let Some(value) = group.remove(key) else {
            return false;
        };
        self.bytes -= (key.len() + value.len()) as u64;
        if group.is_empty() {
            self.groups.remove(&kg.0);
        }
        true
    }

    fn touch(&mut self, kg: KeyGroup, key: &[u8]) {
        let keys = self.touched.entry(kg.0).or_default();
        if !keys.contains(key) {
            keys.insert(key.to_vec());
        }
    }

    /// Writes the current state of every touched key, in `(kg, key)` order.
    fn write_changes(&self, w: &mut SnapshotWriter<&mut dyn Write>) -> Result<(), StateError> {
        let mut kgs: Vec<u16> = self.touched.keys().copied().collect();
        kgs.sort_unstable();
        for kg in kgs {
            let group = self.groups.get(&kg);
            let mut keys: Vec<&Vec<u8>> = self.touched.get(&kg).into_iter().flatten().collect();
            keys.sort_unstable();
            for key in keys {
                match group.and_then(|g| g.get(key)) {
                    Some(value) => w.put(KeyGroup(kg), key, value)?,
                    None => w.delete(KeyGroup(kg), key)?,
                }
            }
        }
        Ok(())
    }

    /// Adds a key group's sorted entries (from a full stream) without recording changes.
    fn install(&mut self, pending: Option<GroupRun>) {
        let Some((kg, entries)) = pending else {
            return;
        };
        self.bytes += entries
            .iter()
            .map(|(k, v)| (k.len() + v.len()) as u64)
            .sum::<u64>();
        match self.groups.entry(kg) {
            Entry::Vacant(slot) => {
                // Collecting sorted, distinct pairs builds the tree in one pass.
                slot.insert(entries.into_iter().collect());
            }
            Entry::Occupied(mut group) => {
                for (key, value) in entries {
                    let key_len = key.len();
                    if let Some(old) = group.get_mut().insert(key, value) {
                        self.bytes -= (key_len + old.len()) as u64;
                    }
                }
            }
        }
    }

    fn apply(&mut self, reader: &mut SnapshotReader<&mut dyn Read>) -> Result<(), StateError> {
        while let Some(record) = reader.next_record()? {
            match record {
                Record::Put { kg, key, value } => self.set(kg, key, value),
                Record::Delete { kg, key } => {
                    self.remove(kg, key);
                }
            }
        }
        Ok(())
    }
}

impl StateBackend for HeapBackend {
    fn get(&self, kg: KeyGroup, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        Ok(self.groups.get(&kg.0).and_then(|g| g.get(key)).cloned())
    }

    fn put(&mut self, kg: KeyGroup, key: &[u8], value: &[u8]) -> Result<(), StateError> {
        check_entry(kg, key, value)?;
        self.set(kg, key, value);
        self.touch(kg, key);
        Ok(())
    }

    fn delete(&mut self, kg: KeyGroup, key: &[u8]) -> Result<(), StateError> {
        check_key(kg, key)?;
        if self.remove(kg, key) {
            self.touch(kg, key);
        }
        Ok(())
    }

    fn scan(&self, kg: KeyGroup, f: &mut ScanCallback<'_>) -> Result<(), StateError> {
        for (key, value) in self.groups.get(&kg.0).into_iter().flatten() {
            f(key, value)?;
        }
        Ok(())
    }

    fn size_bytes(&self) -> u64 {
        self.bytes
    }

    fn snapshot(
        &mut self,
        kind: SnapshotKind,
        out: &mut dyn Write,
    ) -> Result<SnapshotStats, StateError> {
        let mut w = SnapshotWriter::new(out, kind)?;
        match kind {
            SnapshotKind::Full => {
                for (&kg, group) in &self.groups {
                    for (key, value) in group {
                        w.put(KeyGroup(kg), key, value)?;
                    }
                }
            }
            SnapshotKind::Changes => self.write_changes(&mut w)?,
        }
        let stats = w.finish()?;
        self.touched.clear();
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
        let groups = if range.is_empty() {
            Vec::new()
        } else {
            self.groups
                .range(range.start..range.end)
                .map(|(&kg, _)| kg)
                .collect()
        };
        for &kg in &groups {
            for (key, value) in self.groups.get(&kg).into_iter().flatten() {
                w.put(KeyGroup(kg), key, value)?;
            }
        }
        let stats = w.finish()?;
        for kg in groups {
            let Some(group) = self.groups.remove(&kg) else {
                continue;
            };
            let touched = self.touched.entry(kg).or_default();
            for (key, value) in group {
                self.bytes -= (key.len() + value.len()) as u64;
                touched.insert(key);
            }
        }
        Ok(stats)
    }
}

impl RestoreTarget for HeapBackend {
    fn clear(&mut self) -> Result<(), StateError> {
        *self = HeapBackend::default();
        Ok(())
    }

    /// A full stream is sorted by `(kg, key)`: each key group's entries arrive together and in
    /// order, so each group's map is bulk-built from them instead of inserted into key by key.
    fn load_full(&mut self, reader: &mut SnapshotReader<&mut dyn Read>) -> Result<(), StateError> {
        let mut pending: Option<GroupRun> = None;
        while let Some(record) = reader.next_record()? {
            match record {
                Record::Put { kg, key, value } => {
                    if pending.as_ref().is_some_and(|(p, _)| *p != kg.0) {
                        self.install(pending.take());
                    }
                    let (_, entries) = pending.get_or_insert_with(|| (kg.0, Vec::new()));
                    entries.push((key.to_vec(), value.to_vec()));
                }
                Record::Delete { kg, key } => {
                    self.install(pending.take());
                    self.remove(kg, key);
                }
            }
        }
        self.install(pending.take());
        Ok(())
    }

    fn apply_changes(
        &mut self,
        reader: &mut SnapshotReader<&mut dyn Read>,
    ) -> Result<(), StateError> {
        self.apply(reader)
    }
}
