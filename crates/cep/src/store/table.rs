//! The partitions in memory by key: a hash index of 4-byte slot numbers over a slab of
//! entries in fixed chunks.
//!
//! A Nexmark run holds millions of (auction, bidder) partitions of a row or two. In a hash
//! map each partition (≈ 140 bytes with its key) lived inline in a bucket: at 5 M
//! partitions the table had 8 M buckets (1.1 GB), and while it grew the old table and the
//! new one were both in memory (1.6 GB), every entry moved and every page of the new one
//! fresh for the kernel to zero. Here the index holds a slot number per bucket (32 MB for
//! 8 M buckets), an entry never moves (chunks are never reallocated: a reference to one is
//! as good as the index), and a forgotten partition's slot goes to the next new one.

use hashbrown::HashTable;

use super::super::key::Key;

/// Entries per chunk of the slab.
const CHUNK: usize = 1024;

/// An entry of the slab: the key's hash (kept, so that growing the index reads no key), the
/// key and the value.
struct Entry<V> {
    hash: u64,
    key: Key,
    value: V,
}

/// Values by [`Key`] (see the module's documentation).
pub(crate) struct Table<V> {
    hasher: ahash::RandomState,
    index: HashTable<u32>,
    chunks: Vec<Vec<Option<Entry<V>>>>,
    /// Slots of removed entries, reused first.
    free: Vec<u32>,
    len: usize,
}

impl<V> Default for Table<V> {
    fn default() -> Self {
        Self {
            hasher: ahash::RandomState::new(),
            index: HashTable::new(),
            chunks: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

/// The entry in `slot` of `chunks`.
fn at<V>(chunks: &[Vec<Option<Entry<V>>>], slot: u32) -> Option<&Entry<V>> {
    let slot = slot as usize;
    chunks.get(slot / CHUNK)?.get(slot % CHUNK)?.as_ref()
}

fn at_mut<V>(chunks: &mut [Vec<Option<Entry<V>>>], slot: u32) -> Option<&mut Entry<V>> {
    let slot = slot as usize;
    chunks
        .get_mut(slot / CHUNK)?
        .get_mut(slot % CHUNK)?
        .as_mut()
}

impl<V> Table<V> {
    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    /// How many entries there are.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The slot of `key`, if present.
    fn find(&self, key: &[u8]) -> Option<u32> {
        let hash = self.hash(key);
        let chunks = &self.chunks;
        self.index
            .find(hash, |s| {
                at(chunks, *s).is_some_and(|e| e.hash == hash && e.key.as_bytes() == key)
            })
            .copied()
    }

    /// Whether `key` has an entry.
    pub(crate) fn contains_key(&self, key: &[u8]) -> bool {
        self.find(key).is_some()
    }

    /// The value of `key`.
    pub(crate) fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let slot = self.find(key)?;
        at_mut(&mut self.chunks, slot).map(|e| &mut e.value)
    }

    /// Puts an entry in a free slot (a new chunk if none is free); returns its slot.
    fn place(&mut self, entry: Entry<V>) -> u32 {
        self.len += 1;
        if let Some(slot) = self.free.pop() {
            let s = slot as usize;
            if let Some(cell) = self
                .chunks
                .get_mut(s / CHUNK)
                .and_then(|c| c.get_mut(s % CHUNK))
            {
                *cell = Some(entry);
                return slot;
            }
        }
        if self.chunks.last().is_none_or(|c| c.len() == CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        let n = self.chunks.len() - 1;
        let chunk = self.chunks.last_mut().expect("pushed above if none");
        let slot = u32::try_from(n * CHUNK + chunk.len())
            .expect("fewer than 2^32 partitions in memory in one instance");
        chunk.push(Some(entry));
        slot
    }

    /// The value of `key`, made with `make` if absent (one hash of the key either way).
    pub(crate) fn get_or_try_insert<E>(
        &mut self,
        key: &[u8],
        make: impl FnOnce() -> Result<V, E>,
    ) -> Result<&mut V, E> {
        let hash = self.hash(key);
        let found = {
            let chunks = &self.chunks;
            self.index
                .find(hash, |s| {
                    at(chunks, *s).is_some_and(|e| e.hash == hash && e.key.as_bytes() == key)
                })
                .copied()
        };
        let slot = match found {
            Some(slot) => slot,
            None => {
                let value = make()?;
                self.insert_hashed(hash, Key::from(key), value)
            }
        };
        Ok(&mut at_mut(&mut self.chunks, slot)
            .expect("an indexed slot holds an entry")
            .value)
    }

    fn insert_hashed(&mut self, hash: u64, key: Key, value: V) -> u32 {
        let slot = self.place(Entry { hash, key, value });
        let chunks = &self.chunks;
        self.index
            .insert_unique(hash, slot, |s| at(chunks, *s).map_or(0, |e| e.hash));
        slot
    }

    /// Adds `key`, which has no entry.
    pub(crate) fn insert(&mut self, key: Key, value: V) {
        debug_assert!(!self.contains_key(&key), "a new key");
        let hash = self.hash(&key);
        self.insert_hashed(hash, key, value);
    }

    /// Removes the entry of `key`; returns its value.
    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<V> {
        let hash = self.hash(key);
        let chunks = &self.chunks;
        let found = self.index.find_entry(hash, |s| {
            at(chunks, *s).is_some_and(|e| e.hash == hash && e.key.as_bytes() == key)
        });
        let slot = match found {
            Ok(entry) => entry.remove().0,
            Err(_) => return None,
        };
        self.take(slot).map(|e| e.value)
    }

    /// Empties `slot` (its index entry is gone already).
    fn take(&mut self, slot: u32) -> Option<Entry<V>> {
        let s = slot as usize;
        let entry = self.chunks.get_mut(s / CHUNK)?.get_mut(s % CHUNK)?.take()?;
        self.len -= 1;
        self.free.push(slot);
        Some(entry)
    }

    /// The entries, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Key, &V)> {
        self.chunks
            .iter()
            .flatten()
            .flatten()
            .map(|e| (&e.key, &e.value))
    }

    /// The entries, values mutable.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (&Key, &mut V)> {
        self.chunks
            .iter_mut()
            .flatten()
            .flatten()
            .map(|e| (&e.key, &mut e.value))
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }

    /// Keeps the entries `keep` says to keep.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&Key, &mut V) -> bool) {
        let mut gone = Vec::new();
        for (c, chunk) in self.chunks.iter_mut().enumerate() {
            for (i, cell) in chunk.iter_mut().enumerate() {
                if let Some(e) = cell {
                    if !keep(&e.key, &mut e.value) {
                        gone.push((e.hash, (c * CHUNK + i) as u32));
                    }
                }
            }
        }
        for (hash, slot) in gone {
            if let Ok(entry) = self.index.find_entry(hash, |s| *s == slot) {
                entry.remove();
            }
            self.take(slot);
        }
    }

    /// Removes every entry (and gives the memory back).
    pub(crate) fn clear(&mut self) {
        self.index = HashTable::new();
        self.chunks = Vec::new();
        self.free = Vec::new();
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::super::test_rng::Rng;
    use super::*;

    /// What a table holds, by key.
    fn contents(t: &Table<u64>) -> BTreeMap<Vec<u8>, u64> {
        t.iter().map(|(k, v)| (k.to_vec(), *v)).collect()
    }

    #[test]
    fn a_table_holds_what_a_map_holds_through_random_inserts_removals_and_retains() {
        let mut rng = Rng(33);
        let mut t: Table<u64> = Table::default();
        let mut m: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
        for step in 0..60_000u64 {
            // Keys of 1–30 bytes (inline and boxed), from a few thousand.
            let n = rng.below(3_000);
            let key: Vec<u8> = n.to_le_bytes().repeat(4)[..1 + (n % 30) as usize].to_vec();
            match rng.below(10) {
                0..=4 => {
                    let v = t
                        .get_or_try_insert(&key, || Ok::<_, ()>(step))
                        .expect("made");
                    *v += 1;
                    *m.entry(key.clone()).or_insert(step) += 1;
                }
                5..=7 => assert_eq!(t.remove(&key), m.remove(&key), "{key:?}"),
                8 => {
                    if !t.contains_key(&key) {
                        t.insert(Key::from(&key[..]), step);
                        m.insert(key.clone(), step);
                    }
                }
                _ => {
                    if step % 100 == 9 {
                        t.retain(|_, v| *v % 3 != 0);
                        m.retain(|_, v| *v % 3 != 0);
                    }
                }
            }
            assert_eq!(t.len(), m.len());
            assert_eq!(t.get_mut(&key).copied(), m.get(&key).copied());
        }
        assert_eq!(contents(&t), m);
        assert!(
            t.chunks.len() * CHUNK <= 2 * 3_000 + CHUNK,
            "removed slots are reused: {} chunks",
            t.chunks.len()
        );
        t.clear();
        assert_eq!((t.len(), t.iter().count()), (0, 0));
    }

    #[test]
    fn an_entry_never_moves_while_the_table_grows() {
        let mut t: Table<u64> = Table::default();
        t.insert(Key::from(&b"first"[..]), 1);
        let first: *const u64 = t.get_mut(b"first").expect("there");
        for i in 0..100_000u64 {
            t.insert(Key::from(&i.to_le_bytes()[..]), i);
        }
        let again: *const u64 = t.get_mut(b"first").expect("there");
        assert_eq!(first, again);
    }
}
