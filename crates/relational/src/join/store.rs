//! The rows a join holds in memory: per side the batches they are kept in (one per input
//! batch: its buffered rows' kept columns, copied out of it), and per key both sides' rows
//! still waiting for partners, with a mark saying how they relate to the key's checkpointed
//! copy in the state backend (see `checkpoint.rs`).
//!
//! A join can hold millions of keys with one row each (Nexmark q7 keys its bids by price), so
//! a key costs no allocation of its own: its bytes are inline when short, a side holding one
//! row holds it inline, and the hash index holds only slab slot numbers (4 bytes, the key's
//! bytes are compared in the slab).

use std::collections::{BTreeMap, VecDeque};

use ahash::RandomState;
use arrow::record_batch::RecordBatch;
use hashbrown::HashTable;

/// A buffered row: its event time, and where it is in its side's [`Chunks`] (batch and row),
/// with whether it found a partner (for outer joins) in the row number's top bit. 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Its event time.
    pub time: i64,
    chunk: u32,
    /// The row in its batch, and in the top bit whether it found a partner.
    row: u32,
}

const MATCHED: u32 = 1 << 31;

impl Entry {
    /// A row with time `time` at `(batch, row)` of its side's chunks.
    pub(crate) fn new(time: i64, (chunk, row): (usize, usize), matched: bool) -> Self {
        let chunk = u32::try_from(chunk).expect("fewer than 2^32 batches per side");
        let row = u32::try_from(row)
            .ok()
            .filter(|r| r & MATCHED == 0)
            .expect("fewer than 2^31 rows per batch");
        Self {
            time,
            chunk,
            row: if matched { row | MATCHED } else { row },
        }
    }

    /// Where it is in its side's chunks: batch and row.
    pub(crate) fn at(&self) -> (usize, usize) {
        (self.chunk as usize, (self.row & !MATCHED) as usize)
    }

    /// Whether it found a partner.
    pub(crate) fn matched(&self) -> bool {
        self.row & MATCHED != 0
    }

    /// Records that it found a partner.
    pub(crate) fn set_matched(&mut self) {
        self.row |= MATCHED;
    }
}

/// Both sides' rows of a key, each side in arrival order: none, or one of either side, without
/// an allocation (24 bytes); more in a box.
#[derive(Debug, Default)]
enum Rows {
    #[default]
    Empty,
    Left(Entry),
    Right(Entry),
    Many(Box<[VecDeque<Entry>; 2]>),
}

impl Rows {
    /// The one row of `side` if that is all there is.
    fn one(&self, side: usize) -> Option<&Entry> {
        match (self, side) {
            (Rows::Left(e), 0) | (Rows::Right(e), 1) => Some(e),
            _ => None,
        }
    }

    fn list(&self, side: usize) -> Option<&VecDeque<Entry>> {
        match self {
            Rows::Many(v) => v.get(side),
            _ => None,
        }
    }

    fn push(&mut self, side: usize, e: Entry) {
        let many = |left: &[Entry], right: &[Entry]| {
            let v: [VecDeque<Entry>; 2] = [
                left.iter().copied().collect(),
                right.iter().copied().collect(),
            ];
            Rows::Many(Box::new(v))
        };
        *self = match (std::mem::take(self), side) {
            (Rows::Empty, 0) => Rows::Left(e),
            (Rows::Empty, _) => Rows::Right(e),
            (Rows::Left(first), 0) => many(&[first, e], &[]),
            (Rows::Left(first), _) => many(&[first], &[e]),
            (Rows::Right(first), 0) => many(&[e], &[first]),
            (Rows::Right(first), _) => many(&[], &[first, e]),
            (Rows::Many(mut v), side) => {
                if let Some(list) = v.get_mut(side) {
                    list.push_back(e);
                }
                Rows::Many(v)
            }
        };
    }

    /// Back to no allocation once one row or none is left.
    fn settle(&mut self) {
        let Rows::Many(v) = self else {
            return;
        };
        let [left, right] = &mut **v;
        match (left.len(), right.len()) {
            (0, 0) => *self = Rows::Empty,
            (1, 0) => *self = left.pop_front().map_or(Rows::Empty, Rows::Left),
            (0, 1) => *self = right.pop_front().map_or(Rows::Empty, Rows::Right),
            _ => {
                for list in [left, right] {
                    if list.len() * 4 < list.capacity() {
                        list.shrink_to(list.len() * 2);
                    }
                }
            }
        }
    }
}

/// The rows of one side of a key, first to last.
pub(crate) enum SideIter<'a> {
    One(Option<&'a Entry>),
    Many(std::collections::vec_deque::Iter<'a, Entry>),
}

impl<'a> Iterator for SideIter<'a> {
    type Item = &'a Entry;

    fn next(&mut self) -> Option<&'a Entry> {
        match self {
            SideIter::One(e) => e.take(),
            SideIter::Many(i) => i.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self {
            SideIter::One(e) => usize::from(e.is_some()),
            SideIter::Many(i) => i.len(),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for SideIter<'_> {}

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
    rows: Rows,
    pub mark: Mark,
    /// Per side, whether its rows' times ascend (the usual case: then the rows a watermark
    /// expires are a prefix).
    in_order: [bool; 2],
}

impl Key {
    /// A key without rows, marked `mark`.
    pub(crate) fn new(mark: Mark) -> Self {
        Self {
            rows: Rows::Empty,
            mark,
            in_order: [true, true],
        }
    }

    fn touch(&mut self) {
        if self.mark == Mark::Saved {
            self.mark = Mark::Changed;
        }
    }

    /// Whether neither side has a row.
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self.rows, Rows::Empty)
    }

    /// The rows of `side` (0 left, 1 right), first to last.
    pub(crate) fn side(&self, side: usize) -> SideIter<'_> {
        match self.rows.list(side) {
            Some(list) => SideIter::Many(list.iter()),
            None => SideIter::One(self.rows.one(side)),
        }
    }

    /// The rows of `side`, first to last, to mark as matched.
    pub(crate) fn side_mut(&mut self, side: usize) -> impl Iterator<Item = &mut Entry> {
        let (one, many) = match (&mut self.rows, side) {
            (Rows::Left(e), 0) | (Rows::Right(e), 1) => (Some(e), None),
            (Rows::Many(v), side) => (None, v.get_mut(side).map(|l| l.iter_mut())),
            _ => (None, None),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    /// Adds a row of `side`, after the others.
    pub(crate) fn push(&mut self, side: usize, e: Entry) {
        let last = match self.rows.list(side) {
            Some(list) => list.back(),
            None => self.rows.one(side),
        };
        if last.is_some_and(|last| last.time > e.time) {
            if let Some(o) = self.in_order.get_mut(side) {
                *o = false;
            }
        }
        self.rows.push(side, e);
    }

    /// Removes the rows of each side whose time that side's `expired` says, adding them to
    /// that side's `gone` with `slot`, in order; whether any was.
    fn remove_expired(
        &mut self,
        expired: [&dyn Fn(i64) -> bool; 2],
        slot: u32,
        gone: &mut [Vec<(u32, Entry)>; 2],
    ) -> bool {
        let [expired_left, expired_right] = expired;
        let [gone_left, gone_right] = gone;
        match &mut self.rows {
            Rows::Empty => false,
            Rows::Left(e) => {
                let e = *e;
                if !expired_left(e.time) {
                    return false;
                }
                gone_left.push((slot, e));
                self.rows = Rows::Empty;
                true
            }
            Rows::Right(e) => {
                let e = *e;
                if !expired_right(e.time) {
                    return false;
                }
                gone_right.push((slot, e));
                self.rows = Rows::Empty;
                true
            }
            Rows::Many(v) => {
                let mut removed = false;
                for (((list, in_order), expired), gone) in v
                    .iter_mut()
                    .zip(&mut self.in_order)
                    .zip([expired_left, expired_right])
                    .zip([gone_left, gone_right])
                {
                    let before = gone.len();
                    if *in_order {
                        // Times ascend: the expired rows are a prefix.
                        let n = list.partition_point(|e| expired(e.time));
                        gone.extend(list.drain(..n).map(|e| (slot, e)));
                    } else {
                        list.retain(|e| {
                            if expired(e.time) {
                                gone.push((slot, *e));
                                false
                            } else {
                                true
                            }
                        });
                        if gone.len() > before {
                            *in_order = list
                                .iter()
                                .zip(list.iter().skip(1))
                                .all(|(a, b)| a.time <= b.time);
                        }
                    }
                    removed |= gone.len() > before;
                }
                self.rows.settle();
                if !matches!(self.rows, Rows::Many(_)) {
                    self.in_order = [true, true];
                }
                removed
            }
        }
    }
}

/// A key's bytes (Arrow row format): inline up to 14 bytes (an integer key takes 9), else on
/// the heap; 16 bytes either way.
#[derive(Debug)]
enum KeyBuf {
    Inline {
        len: u8,
        bytes: [u8; 14],
    },
    // A thin pointer, so that the enum stays 16 bytes.
    #[allow(clippy::box_collection)]
    Heap(Box<Vec<u8>>),
}

impl KeyBuf {
    fn new(key: &[u8]) -> Self {
        let mut bytes = [0u8; 14];
        match (bytes.get_mut(..key.len()), u8::try_from(key.len())) {
            (Some(inline), Ok(len)) => {
                inline.copy_from_slice(key);
                KeyBuf::Inline { len, bytes }
            }
            _ => KeyBuf::Heap(Box::new(key.to_vec())),
        }
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            KeyBuf::Inline { len, bytes } => bytes.get(..usize::from(*len)).unwrap_or_default(),
            KeyBuf::Heap(b) => b,
        }
    }

    /// The bytes it holds on the heap: its bytes and the vector's own.
    fn heap_bytes(&self) -> usize {
        match self {
            KeyBuf::Inline { .. } => 0,
            KeyBuf::Heap(b) => std::mem::size_of::<Vec<u8>>() + b.capacity(),
        }
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
    pub(crate) fn release(&mut self, gone: &[(u32, Entry)]) {
        for (_, e) in gone {
            self.release_one(e);
        }
    }

    /// Forgets one row pruned earlier: its batch is dropped if it was its last.
    pub(crate) fn release_one(&mut self, e: &Entry) {
        let chunk = e.at().0;
        if let Some(n) = self.live.get_mut(chunk) {
            if *n > 0 {
                *n -= 1;
                self.rows -= 1;
            }
            if *n == 0 {
                self.drop_chunk(chunk);
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

/// Slots of a slab per page: a page is 3 MB at most, so that the slab grows by pages, never
/// by copying every slot into an allocation twice as large (millions of keys: hundreds of MB
/// held twice for a moment). The last page grows as a vector does, so a small join holds a
/// few slots, not a page.
const PAGE_BITS: u32 = 16;
const PAGE: usize = 1 << PAGE_BITS;

/// The keys and their rows, by slot number, in pages.
#[derive(Debug, Default)]
struct Slab {
    pages: Vec<Vec<Option<(KeyBuf, Key)>>>,
    /// Slots handed out so far (in use or free).
    len: usize,
}

impl Slab {
    fn place(slot: u32) -> (usize, usize) {
        ((slot >> PAGE_BITS) as usize, slot as usize & (PAGE - 1))
    }

    fn get(&self, slot: u32) -> Option<&(KeyBuf, Key)> {
        let (page, at) = Self::place(slot);
        self.pages.get(page)?.get(at)?.as_ref()
    }

    fn get_mut(&mut self, slot: u32) -> Option<&mut (KeyBuf, Key)> {
        let (page, at) = Self::place(slot);
        self.pages.get_mut(page)?.get_mut(at)?.as_mut()
    }

    fn cell(&mut self, slot: u32) -> Option<&mut Option<(KeyBuf, Key)>> {
        let (page, at) = Self::place(slot);
        self.pages.get_mut(page)?.get_mut(at)
    }

    /// A new slot, past the last.
    fn grow(&mut self) -> u32 {
        let slot = u32::try_from(self.len).expect("fewer than 2^32 keys");
        if self.pages.last().is_none_or(|p| p.len() == PAGE) {
            self.pages.push(Vec::new());
        }
        if let Some(page) = self.pages.last_mut() {
            page.push(None);
        }
        self.len += 1;
        slot
    }

    /// The slots handed out, in order.
    fn slots(&self) -> std::ops::Range<u32> {
        0..u32::try_from(self.len).expect("fewer than 2^32 keys")
    }

    /// Every key in use and its slot.
    fn iter(&self) -> impl Iterator<Item = (u32, &(KeyBuf, Key))> {
        self.slots()
            .zip(self.pages.iter().flat_map(|p| p.iter()))
            .filter_map(|(s, c)| Some((s, c.as_ref()?)))
    }

    /// The bytes of the pages.
    fn size_bytes(&self) -> usize {
        let slots: usize = self.pages.iter().map(Vec::capacity).sum();
        slots * std::mem::size_of::<Option<(KeyBuf, Key)>>()
    }
}

/// Both sides' rows by key (the Arrow row-format bytes of the key columns). A key whose rows
/// are all gone stays, empty and [`Mark::Changed`], until the next snapshot deletes its entry
/// from the backend, unless the backend never saw it.
///
/// The keys live in a slab (their bytes inline, see [`KeyBuf`]), found through a hash table of
/// slab slot numbers, so that millions of keys cost no allocation each and the index 4 bytes a
/// key (and its control byte). Which keys hold rows of which time is kept per side (time →
/// slots, in arrival order), so that a watermark visits only the keys with rows it expires, not
/// every key. A slot freed and reused meanwhile is visited for nothing: a visit only removes
/// rows the watermark expires.
#[derive(Debug, Default)]
pub(crate) struct Keys {
    hasher: RandomState,
    index: HashTable<u32>,
    slab: Slab,
    free: Vec<u32>,
    due: [BTreeMap<i64, Vec<u32>>; 2],
    /// Slots whose keys [`Keys::prune`] emptied and the backend never saw, to be freed by
    /// [`Keys::drop_emptied`] (until then their bytes can still be read).
    emptied: Vec<u32>,
    /// The bytes of the keys held on the heap (not inline), and how many keys those are.
    key_bytes: usize,
    heap_keys: usize,
}

impl Keys {
    /// Bytes the keys and their entries hold, about (`rows` buffered in all): the index, the
    /// slab's slots in use, long keys' bytes, the rows (16 bytes each, inline or in a longer
    /// list), the time index.
    pub(crate) fn size_bytes(&self, rows: usize) -> usize {
        use std::mem::size_of;
        // A table of n slots has about n / 7 * 8 buckets of a slot and a control byte.
        let index = self.index.capacity() / 7 * 8 * (size_of::<u32>() + 1);
        let slab = self.slab.size_bytes();
        // A long key's box: its bytes and the allocator's header.
        let keys = self.key_bytes + self.heap_keys * 2 * size_of::<usize>();
        let due: usize = self.due.iter().map(BTreeMap::len).sum();
        index
            + slab
            + keys
            + rows * (size_of::<Entry>() + size_of::<u32>())
            + due * (size_of::<(i64, Vec<u32>)>() + 8)
    }

    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    /// The slot of `key`, if it is held.
    fn find(&self, key: &[u8]) -> Option<u32> {
        let slab = &self.slab;
        self.index
            .find(self.hash(key), |s| {
                slab.get(*s).is_some_and(|(b, _)| b.as_slice() == key)
            })
            .copied()
    }

    /// Puts `key` with `k` in a free slot and indexes it; returns the slot.
    fn add(&mut self, key: &[u8], k: Key) -> u32 {
        let slot = self.free.pop().unwrap_or_else(|| self.slab.grow());
        let buf = KeyBuf::new(key);
        if matches!(buf, KeyBuf::Heap(_)) {
            self.key_bytes += buf.heap_bytes();
            self.heap_keys += 1;
        }
        if let Some(cell) = self.slab.cell(slot) {
            *cell = Some((buf, k));
        }
        let hash = self.hash(key);
        let (hasher, slab) = (&self.hasher, &self.slab);
        self.index.insert_unique(hash, slot, |s| {
            slab.get(*s)
                .map_or(0, |(b, _)| hasher.hash_one(b.as_slice()))
        });
        slot
    }

    /// Frees `slot`: out of the index and the slab.
    fn remove(&mut self, slot: u32) -> Option<(KeyBuf, Key)> {
        let (buf, k) = self.slab.cell(slot)?.take()?;
        let hash = self.hash(buf.as_slice());
        if let Ok(entry) = self.index.find_entry(hash, |s| *s == slot) {
            entry.remove();
        }
        if matches!(buf, KeyBuf::Heap(_)) {
            self.key_bytes = self.key_bytes.saturating_sub(buf.heap_bytes());
            self.heap_keys = self.heap_keys.saturating_sub(1);
        }
        self.free.push(slot);
        Some((buf, k))
    }

    /// The rows of `key` (new and empty if there are none), marked as changed, and its slot.
    pub(crate) fn key_mut(&mut self, key: &[u8]) -> (u32, &mut Key) {
        let slot = match self.find(key) {
            Some(slot) => slot,
            None => self.add(key, Key::new(Mark::New)),
        };
        let (_, k) = self
            .slab
            .get_mut(slot)
            .expect("an indexed slot holds its key");
        k.touch();
        (slot, k)
    }

    /// The bytes of the key in `slot` (also of one [`Keys::prune`] emptied, until
    /// [`Keys::drop_emptied`]).
    pub(crate) fn key_of(&self, slot: u32) -> Option<&[u8]> {
        self.slab.get(slot).map(|(b, _)| b.as_slice())
    }

    /// Records that the key in `slot` holds a row of `side` with time `time`.
    pub(crate) fn due(&mut self, side: usize, time: i64, slot: u32) {
        if let Some(due) = self.due.get_mut(side) {
            due.entry(time).or_default().push(slot);
        }
    }

    /// Every key and its rows.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &Key)> {
        self.slab.iter().map(|(_, (b, k))| (b.as_slice(), k))
    }

    /// Adds a key restored from a checkpoint (its rows pushed already); call
    /// [`Keys::reindex`] after the last.
    pub(crate) fn insert(&mut self, key: &[u8], k: Key) {
        self.add(key, k);
    }

    /// Whether `key` is held (with rows, or empty until the next snapshot).
    pub(crate) fn contains(&self, key: &[u8]) -> bool {
        self.find(key).is_some()
    }

    /// Removes every key `moved` says (a live rescale gives them away) and returns their rows
    /// per side, for their batches to be released.
    pub(crate) fn remove_where(&mut self, moved: impl Fn(&[u8]) -> bool) -> [Vec<(u32, Entry)>; 2] {
        self.drop_emptied();
        let mut gone: [Vec<(u32, Entry)>; 2] = [Vec::new(), Vec::new()];
        for slot in self.slab.slots() {
            if !self.key_of(slot).is_some_and(&moved) {
                continue;
            }
            if let Some((_, k)) = self.remove(slot) {
                for (side, gone) in gone.iter_mut().enumerate() {
                    gone.extend(k.side(side).map(|e| (slot, *e)));
                }
            }
        }
        gone
    }

    /// Marks every key as saved, forgetting the empty ones (after a snapshot wrote them).
    pub(crate) fn saved(&mut self) {
        self.drop_emptied();
        for slot in self.slab.slots() {
            let Some((_, k)) = self.slab.get_mut(slot) else {
                continue;
            };
            k.mark = Mark::Saved;
            if k.is_empty() {
                self.remove(slot);
            }
        }
    }

    /// Rebuilds the time index from the rows (after a restore).
    pub(crate) fn reindex(&mut self) {
        let mut due: [BTreeMap<i64, Vec<u32>>; 2] = Default::default();
        for (slot, (_, k)) in self.slab.iter() {
            for (side, due) in due.iter_mut().enumerate() {
                for e in k.side(side) {
                    due.entry(e.time).or_default().push(slot);
                }
            }
        }
        self.due = due;
    }

    /// Removes the rows of each side whose time `expired` says is done (a predicate that,
    /// once true for a time, is true for every earlier time) and returns them per side with
    /// their keys' slots, in arrival order. Their batches stay until [`Chunks::release`]; the
    /// keys it empties that the backend never saw stay readable ([`Keys::key_of`]) until
    /// [`Keys::drop_emptied`].
    pub(crate) fn prune(&mut self, expired: [&dyn Fn(i64) -> bool; 2]) -> [Vec<(u32, Entry)>; 2] {
        let mut gone: [Vec<(u32, Entry)>; 2] = [Vec::new(), Vec::new()];
        self.visit_expired(expired, true, &mut |side, slot, e| {
            if let Some(g) = gone.get_mut(side) {
                g.push((slot, e));
            }
        });
        for g in &mut gone {
            g.sort_by_key(|(_, e)| e.at());
        }
        gone
    }

    /// [`Keys::prune`] that hands each row removed to `each` (its side, its key's slot) as it
    /// goes, in no particular order, and frees the keys it empties that the backend never saw
    /// at once: the end of input can expire millions of rows without listing them.
    pub(crate) fn prune_each(
        &mut self,
        expired: [&dyn Fn(i64) -> bool; 2],
        each: &mut dyn FnMut(usize, u32, Entry),
    ) {
        self.visit_expired(expired, false, each);
    }

    fn visit_expired(
        &mut self,
        expired: [&dyn Fn(i64) -> bool; 2],
        keep_emptied: bool,
        each: &mut dyn FnMut(usize, u32, Entry),
    ) {
        self.drop_emptied();
        let mut gone: [Vec<(u32, Entry)>; 2] = [Vec::new(), Vec::new()];
        for side in 0..2 {
            // One time's keys at a time; a key listed twice is visited twice, the second visit
            // finds nothing to remove.
            while let Some(first) = self.due.get_mut(side).and_then(BTreeMap::first_entry) {
                if !expired[side](*first.key()) {
                    break;
                }
                for slot in first.remove() {
                    let Some((_, k)) = self.slab.get_mut(slot) else {
                        continue;
                    };
                    let removed = k.remove_expired(expired, slot, &mut gone);
                    if !removed {
                        continue;
                    }
                    k.touch();
                    for (side, gone) in gone.iter_mut().enumerate() {
                        for (slot, e) in gone.drain(..) {
                            each(side, slot, e);
                        }
                    }
                    // A key the backend never saw needs no delete.
                    if k.mark == Mark::New && k.is_empty() {
                        if keep_emptied {
                            self.emptied.push(slot);
                        } else {
                            self.remove(slot);
                        }
                    }
                }
            }
        }
    }

    /// Frees the keys the last [`Keys::prune`] emptied that the backend never saw (if no row
    /// came for them since).
    pub(crate) fn drop_emptied(&mut self) {
        for slot in std::mem::take(&mut self.emptied) {
            let empty_new = self
                .slab
                .get(slot)
                .is_some_and(|(_, k)| k.mark == Mark::New && k.is_empty());
            if empty_new {
                self.remove(slot);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A key's rows as the naive model holds them (per side, in arrival order), and its mark.
    type Naive = BTreeMap<Vec<u8>, ([Vec<Entry>; 2], Mark)>;

    fn held(keys: &Keys) -> Naive {
        keys.iter()
            .map(|(b, k)| {
                let sides = [k.side(0).copied().collect(), k.side(1).copied().collect()];
                (b.to_vec(), (sides, k.mark))
            })
            .collect()
    }

    /// A key of `n` bytes from `i`: short ones inline, long ones on the heap.
    fn key(i: u64, n: usize) -> Vec<u8> {
        i.to_be_bytes().iter().copied().cycle().take(n).collect()
    }

    #[test]
    fn a_key_and_a_row_are_small() {
        assert_eq!(std::mem::size_of::<Entry>(), 16);
        assert_eq!(std::mem::size_of::<KeyBuf>(), 16);
        assert_eq!(std::mem::size_of::<Rows>(), 24);
        assert!(std::mem::size_of::<Option<(KeyBuf, Key)>>() <= 48);
    }

    #[test]
    fn keys_past_a_page_of_slots_are_found_and_freed_slots_reused() {
        let mut keys = Keys::default();
        let n = PAGE as u64 + 5_000;
        for i in 0..n {
            let (slot, k) = keys.key_mut(&key(i, 9));
            k.push(0, Entry::new(0, (0, 0), false));
            keys.due(0, 0, slot);
        }
        assert_eq!(keys.iter().count() as u64, n);
        assert!((0..n).all(|i| keys.contains(&key(i, 9))));
        // Every key expires and, never saved, goes.
        let mut gone = 0;
        keys.prune_each([&|_| true, &|_| true], &mut |_, _, _| gone += 1);
        assert_eq!((gone, keys.iter().count()), (n, 0));
        keys.key_mut(&key(n, 9));
        assert_eq!(keys.slab.pages.len(), 2, "a freed slot is used again");
    }

    #[test]
    fn entries_round_trip_their_place_and_mark() {
        let mut e = Entry::new(-7, (3, (1 << 31) - 1), false);
        assert_eq!(
            (e.time, e.at(), e.matched()),
            (-7, (3, (1 << 31) - 1), false)
        );
        e.set_matched();
        assert_eq!((e.at(), e.matched()), ((3, (1 << 31) - 1), true));
    }

    /// Seeded random rows of both sides (times mostly ascending, some behind), pruned by
    /// watermarks, some keys given away and snapshots marking keys saved: the keys hold the
    /// rows and marks a naive map of lists holds, and pruning returns the rows it drops.
    #[test]
    fn keys_hold_and_prune_the_rows_a_naive_map_of_lists_does() {
        for seed in 0..40u64 {
            let mut rng = crate::test_rng::Lcg::scrambled(seed);
            let mut next = |n: u64| rng.below(n);
            let mut keys = Keys::default();
            let mut naive = Naive::new();
            let (mut t, mut row) = (0i64, 0usize);
            for step in 0..600 {
                match next(20) {
                    0 => {
                        // A watermark: each side's rows before it (the right's a bit earlier).
                        let (wl, wr) = (t - 50, t - 50 - next(30) as i64);
                        let each = next(2) == 0;
                        let [gl, gr] = if each {
                            // Rows as they go, keys emptied freed at once: compared by entry.
                            let mut gone: [Vec<(u32, Entry)>; 2] = Default::default();
                            keys.prune_each([&|x| x < wl, &|x| x < wr], &mut |side, _, e| {
                                gone[side].push((u32::MAX, e));
                            });
                            for g in &mut gone {
                                g.sort_by_key(|(_, e)| e.at());
                            }
                            gone
                        } else {
                            keys.prune([&|x| x < wl, &|x| x < wr])
                        };
                        let mut want: [Vec<(Vec<u8>, Entry)>; 2] = Default::default();
                        for (k, (sides, mark)) in &mut naive {
                            let mut removed = false;
                            for (side, w) in [wl, wr].into_iter().enumerate() {
                                let expired = sides[side].iter().filter(|e| e.time < w);
                                want[side].extend(expired.map(|e| (k.clone(), *e)));
                                let before = sides[side].len();
                                sides[side].retain(|e| e.time >= w);
                                removed |= sides[side].len() < before;
                            }
                            if removed && *mark == Mark::Saved {
                                *mark = Mark::Changed;
                            }
                        }
                        for (side, got) in [gl, gr].into_iter().enumerate() {
                            let got: Vec<(Vec<u8>, Entry)> = got
                                .into_iter()
                                .map(|(s, e)| {
                                    let k = if each {
                                        Vec::new()
                                    } else {
                                        keys.key_of(s).expect("readable").to_vec()
                                    };
                                    (k, e)
                                })
                                .collect();
                            want[side].sort_by_key(|(_, e)| e.at());
                            if each {
                                for (k, _) in &mut want[side] {
                                    k.clear();
                                }
                            }
                            assert_eq!(got, want[side], "seed {seed} step {step} side {side}");
                        }
                        keys.drop_emptied();
                        // A key the backend never saw goes once empty.
                        naive.retain(|_, (s, mark)| {
                            *mark != Mark::New || !s[0].is_empty() || !s[1].is_empty()
                        });
                    }
                    1 => {
                        // A snapshot: every key saved, the empty ones forgotten.
                        keys.saved();
                        naive.retain(|_, (s, _)| !s[0].is_empty() || !s[1].is_empty());
                        for (_, mark) in naive.values_mut() {
                            *mark = Mark::Saved;
                        }
                    }
                    2 => {
                        // A rescale gives away the keys of one residue.
                        let r = next(5) as u8;
                        let leaves = |k: &[u8]| k.last().is_some_and(|b| b % 5 == r);
                        let gone = keys.remove_where(leaves);
                        let n: usize = gone.iter().map(Vec::len).sum();
                        let mut want = 0;
                        naive.retain(|k, (s, _)| {
                            let leave = leaves(k);
                            if leave {
                                want += s[0].len() + s[1].len();
                            }
                            !leave
                        });
                        assert_eq!(n, want, "seed {seed} step {step}");
                    }
                    _ => {
                        t += next(10) as i64;
                        let time = if next(8) == 0 {
                            t - next(100) as i64
                        } else {
                            t
                        };
                        let side = next(2) as usize;
                        let len = if next(6) == 0 { 20 } else { 9 };
                        let among = if next(3) == 0 { 5 } else { 400 };
                        let k = key(next(among), len);
                        row += 1;
                        let e = Entry::new(time, (row / 7, row % 7), next(3) == 0);
                        let (slot, k_held) = keys.key_mut(&k);
                        k_held.push(side, e);
                        keys.due(side, time, slot);
                        let (sides, mark) = naive
                            .entry(k)
                            .or_insert_with(|| (Default::default(), Mark::New));
                        sides[side].push(e);
                        if *mark == Mark::Saved {
                            *mark = Mark::Changed;
                        }
                    }
                }
                assert_eq!(held(&keys), naive, "seed {seed} step {step}");
            }
            for k in naive.keys() {
                assert!(keys.contains(k), "seed {seed}");
            }
        }
    }
}
