//! The rows a join holds in memory: per side the batches they are kept in (one per input
//! batch: its buffered rows' kept columns, copied out of it), and per key both sides' rows
//! still waiting for partners, with a mark saying how they relate to the key's checkpointed
//! copy in the state backend (see `checkpoint.rs`).

use std::collections::{BTreeMap, VecDeque};

use std::sync::Arc;

use hashbrown::hash_map::EntryRef;
use hashbrown::HashMap;

use ahash::RandomState;
use arrow::record_batch::RecordBatch;

/// A key's bytes (Arrow row format), shared by the map and the expiry index.
pub(crate) type KeyBytes = Arc<[u8]>;

/// A buffered row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    /// Its event time.
    pub time: i64,
    /// Where it is in its side's [`Chunks`]: batch and row.
    pub at: (usize, usize),
    /// Whether it found a partner (for outer joins).
    pub matched: bool,
}

/// How a key's rows in memory relate to its entry in the state backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    /// The backend has no entry for the key: it came after the last snapshot.
    New,
    /// The backend's entry is out of date (or, if both sides are empty, to be deleted).
    Changed,
    /// The backend's entry holds exactly these rows.
    Saved,
}

/// Both sides' rows of one key, each in arrival order.
#[derive(Debug)]
pub(crate) struct Key {
    /// Left rows, then right rows.
    pub sides: [VecDeque<Entry>; 2],
    pub mark: Mark,
    /// Per side, whether its rows' times ascend (the usual case: then the rows a watermark
    /// expires are a prefix).
    pub in_order: [bool; 2],
}

impl Key {
    fn touch(&mut self) {
        if self.mark == Mark::Saved {
            self.mark = Mark::Changed;
        }
    }

    /// Whether neither side has a row.
    pub(crate) fn is_empty(&self) -> bool {
        self.sides.iter().all(VecDeque::is_empty)
    }

    /// The rows of `side` (0 left, 1 right) and those of the other side.
    pub(crate) fn own_and_other(
        &mut self,
        side: usize,
    ) -> (&mut VecDeque<Entry>, &mut VecDeque<Entry>) {
        let [left, right] = &mut self.sides;
        if side == 0 {
            (left, right)
        } else {
            (right, left)
        }
    }

    /// Adds a row of `side`, after the others.
    pub(crate) fn push(&mut self, side: usize, e: Entry) {
        let list = &mut self.sides[side];
        if list.back().is_some_and(|last| last.time > e.time) {
            self.in_order[side] = false;
        }
        if list.capacity() == 0 {
            // Most keys hold one row: no room for four.
            list.reserve_exact(1);
        }
        list.push_back(e);
    }
}

/// The batches one side's rows are kept in.
#[derive(Debug, Default)]
pub(crate) struct Chunks {
    /// A batch none of whose rows is buffered anymore is dropped (`None`).
    pub batches: Vec<Option<RecordBatch>>,
    /// Rows still buffered per batch.
    live: Vec<usize>,
    /// The memory the batches not dropped hold.
    bytes: usize,
    /// Rows buffered in all.
    rows: usize,
}

impl Chunks {
    /// Adds a batch; returns its index for entries.
    pub(crate) fn add(&mut self, batch: RecordBatch) -> usize {
        self.bytes += batch.get_array_memory_size();
        self.batches.push(Some(batch));
        self.live.push(0);
        self.batches.len() - 1
    }

    /// The memory the batches hold, and how many rows are buffered in them.
    pub(crate) fn size(&self) -> (usize, usize) {
        (self.bytes, self.rows)
    }

    /// Drops batch `chunk`.
    fn drop_chunk(&mut self, chunk: usize) {
        if let Some(Some(b)) = self.batches.get_mut(chunk).map(Option::take) {
            self.bytes = self.bytes.saturating_sub(b.get_array_memory_size());
        }
    }

    /// Adds a batch all of whose rows are buffered (rebuilt by a restore).
    pub(crate) fn add_restored(&mut self, batch: RecordBatch) -> usize {
        let rows = batch.num_rows();
        let chunk = self.add(batch);
        if let Some(n) = self.live.get_mut(chunk) {
            *n = rows;
            self.rows += rows;
        }
        chunk
    }

    /// Counts a row of batch `chunk` as buffered.
    pub(crate) fn hold(&mut self, chunk: usize) {
        if let Some(n) = self.live.get_mut(chunk) {
            *n += 1;
            self.rows += 1;
        }
    }

    /// Drops batch `chunk` if none of its rows is buffered (all late, or none at all).
    pub(crate) fn drop_if_unused(&mut self, chunk: usize) {
        if self.live.get(chunk) == Some(&0) {
            self.drop_chunk(chunk);
        }
    }

    /// Forgets rows pruned earlier: a batch none of whose rows is buffered is dropped.
    pub(crate) fn release(&mut self, gone: &[(KeyBytes, Entry)]) {
        for (_, e) in gone {
            if let Some(n) = self.live.get_mut(e.at.0) {
                if *n > 0 {
                    *n -= 1;
                    self.rows -= 1;
                }
                if *n == 0 {
                    self.drop_chunk(e.at.0);
                }
            }
        }
    }
}

/// The rows of both sides: their batches, and the rows by key.
#[derive(Debug, Default)]
pub(crate) struct Store {
    /// The batches of the left and of the right side.
    pub chunks: [Chunks; 2],
    pub keys: Keys,
}

impl Store {
    /// Bytes the buffered rows hold, about: their batches, keys and indexes (none when no
    /// row is buffered).
    pub(crate) fn size_bytes(&self) -> usize {
        let (left, left_rows) = self.chunks[0].size();
        let (right, right_rows) = self.chunks[1].size();
        let rows = left_rows + right_rows;
        if rows == 0 && left + right == 0 {
            return 0;
        }
        left + right + self.keys.size_bytes(rows)
    }
}

/// Both sides' rows by key (the Arrow row-format bytes of the key columns). A key whose rows
/// are all gone stays, empty and [`Mark::Changed`], until the next snapshot deletes its entry
/// from the backend, unless the backend never saw it.
///
/// The keys live in a slab, found through a hash index of small slots (key → slab slot), so
/// that the index of millions of keys stays compact. Which keys hold rows of which time is
/// kept per side (time → slots, in arrival order), so that a watermark visits only the keys
/// with rows it expires, not every key. A slot freed and reused meanwhile is visited for
/// nothing: a visit only removes rows the watermark expires.
#[derive(Debug, Default)]
pub(crate) struct Keys {
    index: HashMap<KeyBytes, u32, RandomState>,
    slab: Vec<Option<(KeyBytes, Key)>>,
    free: Vec<u32>,
    due: [BTreeMap<i64, Vec<u32>>; 2],
    /// The bytes of the keys held.
    key_bytes: usize,
}

impl Keys {
    /// Bytes the keys and their entries hold, about (`rows` buffered in all): the index, the
    /// slab, each key's bytes and rows, the time index.
    pub(crate) fn size_bytes(&self, rows: usize) -> usize {
        use std::mem::size_of;
        let index = self.index.capacity() * (size_of::<(KeyBytes, u32)>() + 1);
        let slab = self.slab.capacity() * size_of::<Option<(KeyBytes, Key)>>();
        // An Arc's counts, and its bytes.
        let keys = self.index.len() * 2 * size_of::<usize>() + self.key_bytes;
        let due: usize = self.due.iter().map(BTreeMap::len).sum();
        index
            + slab
            + keys
            + rows * (size_of::<Entry>() + size_of::<u32>())
            + due * (size_of::<(i64, Vec<u32>)>() + 8)
    }

    /// The rows of `key` (new and empty if there are none), marked as changed, and its slot.
    pub(crate) fn key_mut(&mut self, key: &[u8]) -> (u32, &mut Key) {
        let slot = match self.index.entry_ref(key) {
            EntryRef::Occupied(o) => *o.get(),
            EntryRef::Vacant(v) => {
                let slot = self.free.pop().unwrap_or_else(|| {
                    self.slab.push(None);
                    u32::try_from(self.slab.len() - 1).expect("fewer than 2^32 keys")
                });
                self.key_bytes += key.len();
                let o = v.insert_entry(slot);
                self.slab[slot as usize] = Some((
                    Arc::clone(o.key()),
                    Key {
                        sides: [VecDeque::new(), VecDeque::new()],
                        mark: Mark::New,
                        in_order: [true, true],
                    },
                ));
                slot
            }
        };
        let (_, k) = self.slab[slot as usize]
            .as_mut()
            .expect("an indexed slot holds its key");
        k.touch();
        (slot, k)
    }

    /// Records that the key in `slot` holds a row of `side` with time `time`.
    pub(crate) fn due(&mut self, side: usize, time: i64, slot: u32) {
        if let Some(due) = self.due.get_mut(side) {
            due.entry(time).or_default().push(slot);
        }
    }

    /// Every key and its rows.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&KeyBytes, &Key)> {
        self.slab.iter().flatten().map(|(b, k)| (b, k))
    }

    /// Adds a key restored from a checkpoint (its rows pushed already); call
    /// [`Keys::reindex`] after the last.
    pub(crate) fn insert(&mut self, key: &[u8], k: Key) {
        let bytes: KeyBytes = key.into();
        let slot = u32::try_from(self.slab.len()).expect("fewer than 2^32 keys");
        self.key_bytes += bytes.len();
        self.slab.push(Some((Arc::clone(&bytes), k)));
        self.index.insert(bytes, slot);
    }

    /// Whether `key` is held (with rows, or empty until the next snapshot).
    pub(crate) fn contains(&self, key: &[u8]) -> bool {
        self.index.contains_key(key)
    }

    /// Removes every key `moved` says (a live rescale gives them away) and returns their rows
    /// per side, for their batches to be released.
    pub(crate) fn remove_where(
        &mut self,
        moved: impl Fn(&[u8]) -> bool,
    ) -> [Vec<(KeyBytes, Entry)>; 2] {
        let mut gone: [Vec<(KeyBytes, Entry)>; 2] = [Vec::new(), Vec::new()];
        for (slot, entry) in self.slab.iter_mut().enumerate() {
            if !entry.as_ref().is_some_and(|(key, _)| moved(key)) {
                continue;
            }
            if let Some((key, k)) = entry.take() {
                self.index.remove(&key);
                self.key_bytes = self.key_bytes.saturating_sub(key.len());
                for (list, gone) in k.sides.into_iter().zip(&mut gone) {
                    gone.extend(list.into_iter().map(|e| (Arc::clone(&key), e)));
                }
                self.free
                    .push(u32::try_from(slot).expect("fewer than 2^32 keys"));
            }
        }
        gone
    }

    /// Marks every key as saved, forgetting the empty ones (after a snapshot wrote them).
    pub(crate) fn saved(&mut self) {
        for slot in 0..self.slab.len() {
            let Some((bytes, k)) = self.slab[slot].as_mut() else {
                continue;
            };
            k.mark = Mark::Saved;
            if k.is_empty() {
                self.index.remove(bytes);
                self.key_bytes = self.key_bytes.saturating_sub(bytes.len());
                self.slab[slot] = None;
                self.free
                    .push(u32::try_from(slot).expect("fewer than 2^32 keys"));
            }
        }
    }

    /// Rebuilds the time index from the rows (after a restore).
    pub(crate) fn reindex(&mut self) {
        let mut due: [BTreeMap<i64, Vec<u32>>; 2] = Default::default();
        for (slot, entry) in self.slab.iter().enumerate() {
            let Some((_, k)) = entry else {
                continue;
            };
            let slot = u32::try_from(slot).expect("fewer than 2^32 keys");
            for (side, list) in k.sides.iter().enumerate() {
                for e in list {
                    due[side].entry(e.time).or_default().push(slot);
                }
            }
        }
        self.due = due;
    }

    /// Removes the rows of each side whose time `expired` says is done (a predicate that,
    /// once true for a time, is true for every earlier time) and returns them per side, in
    /// arrival order. Their batches stay until [`Chunks::release`].
    pub(crate) fn prune(
        &mut self,
        expired: [&dyn Fn(i64) -> bool; 2],
    ) -> [Vec<(KeyBytes, Entry)>; 2] {
        // A slot listed twice is visited twice; the second visit finds nothing to remove.
        let mut visit: Vec<u32> = Vec::new();
        for (due, expired) in self.due.iter_mut().zip(expired) {
            while due.first_key_value().is_some_and(|(t, _)| expired(*t)) {
                if let Some((_, slots)) = due.pop_first() {
                    visit.extend(slots);
                }
            }
        }
        let mut gone: [Vec<(KeyBytes, Entry)>; 2] = [Vec::new(), Vec::new()];
        for slot in visit {
            let Some(Some((key, k))) = self.slab.get_mut(slot as usize) else {
                continue;
            };
            let mut removed = false;
            for (((list, in_order), expired), gone) in k
                .sides
                .iter_mut()
                .zip(&mut k.in_order)
                .zip(expired)
                .zip(&mut gone)
            {
                if *in_order {
                    // Times ascend: the expired rows are a prefix.
                    let n = list.partition_point(|e| expired(e.time));
                    removed |= n > 0;
                    gone.extend(list.drain(..n).map(|e| (Arc::clone(key), e)));
                } else {
                    list.retain(|e| {
                        if expired(e.time) {
                            gone.push((Arc::clone(key), *e));
                            removed = true;
                            false
                        } else {
                            true
                        }
                    });
                    *in_order = list
                        .iter()
                        .zip(list.iter().skip(1))
                        .all(|(a, b)| a.time <= b.time);
                }
            }
            if removed {
                k.touch();
            }
            // A key the backend never saw needs no delete.
            if k.mark == Mark::New && k.is_empty() {
                self.index.remove(key);
                self.key_bytes = self.key_bytes.saturating_sub(key.len());
                self.slab[slot as usize] = None;
                self.free.push(slot);
            }
        }
        for g in &mut gone {
            g.sort_by_key(|(_, e)| e.at);
        }
        gone
    }
}
