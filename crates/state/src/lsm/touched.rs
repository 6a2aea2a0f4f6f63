//! The LSM backend's record of keys changed since the last snapshot: a hash set in memory
//! (sorted only when read or spilled) up to a byte budget, spilled as a sorted run into a
//! keyspace of its own whenever it grows past the budget. Memory stays bounded however much
//! changes between two snapshots.

use std::collections::HashSet;
use std::path::PathBuf;

use fjall::Keyspace;

use crate::StateError;

/// Bytes charged per key in memory beyond its own length (the `Vec`, its allocation header and
/// the table slot).
const PER_KEY_OVERHEAD: usize = 48;

pub(crate) struct TouchedKeys {
    /// Stored keys (key group prefix included) touched since the last reset, not yet spilled.
    memory: HashSet<Vec<u8>>,
    memory_bytes: usize,
    budget: usize,
    /// Spilled keys, as keys with empty values.
    spilled: Keyspace,
    has_spilled: bool,
    dir: PathBuf,
}

impl TouchedKeys {
    /// A record that spills into `spilled` (which it clears) beyond `budget` bytes.
    pub(crate) fn new(spilled: Keyspace, budget: usize, dir: PathBuf) -> Result<Self, StateError> {
        let mut touched = TouchedKeys {
            memory: HashSet::new(),
            memory_bytes: 0,
            budget,
            spilled,
            has_spilled: true,
            dir,
        };
        touched.clear()?;
        Ok(touched)
    }

    /// Records that `stored_key` changed.
    pub(crate) fn insert(&mut self, stored_key: &[u8]) -> Result<(), StateError> {
        if self.memory.contains(stored_key) {
            return Ok(());
        }
        self.memory.insert(stored_key.to_vec());
        self.memory_bytes += stored_key.len() + PER_KEY_OVERHEAD;
        if self.memory_bytes > self.budget {
            self.spill()?;
        }
        Ok(())
    }

    /// Writes the in-memory keys as one sorted run (bulk ingestion bypasses the journal and
    /// the memtable) and empties memory, only once the run is in: a failed spill loses no key.
    fn spill(&mut self) -> Result<(), StateError> {
        let mut keys: Vec<&Vec<u8>> = self.memory.iter().collect();
        keys.sort_unstable();
        self.has_spilled = true;
        let mut ingestion = self.spilled.start_ingestion().map_err(self.lsm())?;
        for key in keys {
            ingestion
                .write(key.as_slice(), b"".as_slice())
                .map_err(self.lsm())?;
        }
        ingestion.finish().map_err(self.lsm())?;
        self.memory.clear();
        self.memory_bytes = 0;
        Ok(())
    }

    /// Calls `f` with every touched key once, in byte order (memory and spilled runs merged).
    pub(crate) fn for_each(
        &self,
        mut f: impl FnMut(&[u8]) -> Result<(), StateError>,
    ) -> Result<(), StateError> {
        let mut sorted: Vec<&Vec<u8>> = self.memory.iter().collect();
        sorted.sort_unstable();
        let mut memory = sorted.into_iter().peekable();
        if self.has_spilled {
            for guard in self.spilled.iter() {
                let disk = guard.key().map_err(self.lsm())?;
                while let Some(key) = memory.next_if(|m| m.as_slice() < &*disk) {
                    f(key)?;
                }
                memory.next_if(|m| m.as_slice() == &*disk);
                f(&disk)?;
            }
        }
        memory.try_for_each(|key| f(key))
    }

    /// Forgets every touched key. The spilled keys go first: if that fails, the record still
    /// holds (a superset of) every change, which a later snapshot can write again harmlessly.
    pub(crate) fn clear(&mut self) -> Result<(), StateError> {
        if self.has_spilled {
            self.spilled.clear().map_err(self.lsm())?;
            self.has_spilled = false;
        }
        self.memory.clear();
        self.memory_bytes = 0;
        Ok(())
    }

    fn lsm(&self) -> impl Fn(fjall::Error) -> StateError + '_ {
        |source| StateError::Lsm {
            dir: self.dir.clone(),
            source,
        }
    }
}
