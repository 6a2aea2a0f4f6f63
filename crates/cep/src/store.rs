//! Where a pattern operator keeps its partitions and the rows waiting for the watermark.
//! Partitions in use live in memory; a keyed table (`anduin_state::KeyedTable`: heap or LSM,
//! chosen per operator) holds each partition's durable copy under its partition key, so that a
//! checkpoint is the table's snapshot (full, or the changes since the last one) and a range of
//! key groups can later move between instances. With the LSM backend, idle partitions (no
//! partial match, no row waiting) beyond `cache` are dropped from memory and read back when a
//! row for them arrives: state larger than memory.
//!
//! Entries, under a partition key (the bytes the exchange routes by; empty without
//! `partition_by`):
//!
//! | sub-key                          | value                                     |
//! |----------------------------------|-------------------------------------------|
//! | `p`                              | the partition (its rows and counters)     |
//! | `w` + sequence number (8 bytes BE) | a row of it waiting for the watermark   |
//!
//! A waiting row is written by the first snapshot after it arrived and deleted when the
//! watermark releases it, so that every row moves with its partition's key group.
//!
//! Partitions with a partial match that a time bound ends are also queued by the time it
//! ends (`deadlines.rs`), so that a watermark visits those whose time has come.

mod deadlines;
mod table;

use std::path::PathBuf;

use std::io::{Read, Write};

use anduin_state::{
    BackendKind, KeyGroup, KeyGroupRange, KeyedTable, SnapshotKind, TableEntry, TableError,
};

use super::key::Key;
use super::matcher::{Partition, Pattern, Refused, Row, Starts};
use super::value::Value;
use deadlines::{Deadlines, UNQUEUED};
use table::Table;

/// Why the store failed.
#[derive(Debug)]
pub(crate) enum StoreError {
    Table(TableError),
    /// An entry that does not decode: what it is and where it is stored.
    Corrupt(&'static str, KeyGroup),
    /// An entry whose sub-key is neither a partition's nor a waiting row's.
    UnknownEntry(KeyGroup, Vec<u8>),
    /// Replaying a partition's rows refused one (it cannot: each was taken before).
    Replay(Refused),
    /// A partition handed over at a live rescale is in memory here already.
    AlreadyHeld(KeyGroup),
}

impl From<TableError> for StoreError {
    fn from(e: TableError) -> Self {
        StoreError::Table(e)
    }
}

/// A row waiting for the watermark: its sequence number, its partition key and the row.
pub(crate) type Waiting = (u64, Key, Row);

/// What a restore or a live rescale's take read back: the rows waiting for the watermark,
/// by sequence number, and the keys of the partitions rebuilt in memory.
pub(crate) struct Loaded {
    pub(crate) waiting: Vec<Waiting>,
    pub(crate) partitions: Vec<Key>,
}

/// A partition in memory.
#[derive(Debug)]
struct Held {
    part: Partition,
    /// It changed since the last snapshot.
    changed: bool,
    /// The table has an entry of it.
    stored: bool,
    /// The time at which it is queued in [`Store::deadlines`] ([`UNQUEUED`]: it is not).
    due: i64,
}

impl Held {
    fn new(part: Partition, changed: bool, stored: bool) -> Self {
        Self {
            part,
            changed,
            stored,
            due: UNQUEUED,
        }
    }
}

/// Partitions in memory by key.
type Live = Table<Held>;

/// A partition in memory, marked as changed, and its place in the queue of deadlines.
pub(crate) struct Slot<'s> {
    pub(crate) part: &'s mut Partition,
    due: &'s mut i64,
    deadlines: &'s mut Deadlines,
}

impl Slot<'_> {
    /// After rows were pushed to the partition (of `key`, under `p`): queues it at the time
    /// the time bound ends its first partial match, if it has one and is not queued. (One
    /// queued stays queued: its partial matches end no earlier than the time it is queued
    /// at, as attempts start in event-time order, and the visit at that time queues it again
    /// at its next.)
    pub(crate) fn queue(&mut self, p: &Pattern, key: &[u8]) {
        if *self.due == UNQUEUED && p.within.is_some() {
            let due = self.part.next_deadline(p, i64::MIN);
            queue(self.deadlines, self.due, key, due);
        }
    }

    /// After a visit at a watermark ([`Store::next_due`]), which left the partition (of
    /// `key`) unqueued: queues it at `due`, when the time bound next ends one of its partial
    /// matches (`None`: never).
    pub(crate) fn queue_at(&mut self, key: &[u8], due: Option<i64>) {
        queue(self.deadlines, self.due, key, due);
    }
}

/// [`Slot::queue`] of a partition recording `slot`.
fn queue(deadlines: &mut Deadlines, slot: &mut i64, key: &[u8], due: Option<i64>) {
    if let Some(due) = due.filter(|d| *slot == UNQUEUED && *d != UNQUEUED) {
        *slot = due;
        deadlines.push(due, Key::from(key));
    }
}

/// The sub-key of a partition.
const PARTITION: &[u8] = b"p";
/// The first byte of the sub-key of a waiting row.
const WAITING: u8 = b'w';

/// The sub-key of the waiting row numbered `seq` (on the stack: no allocation).
fn waiting_sub_key(seq: u64) -> [u8; 9] {
    let mut k = [WAITING; 9];
    let (_, n) = k.split_at_mut(1);
    n.copy_from_slice(&seq.to_be_bytes());
    k
}

/// The sequence number of a waiting row's sub-key; `None` for another sub-key.
fn split_waiting_sub_key(sub_key: &[u8]) -> Option<u64> {
    let (tag, seq) = sub_key.split_first()?;
    let seq: [u8; 8] = seq.try_into().ok()?;
    (*tag == WAITING).then(|| u64::from_be_bytes(seq))
}

/// The partitions of one operator instance.
pub(crate) struct Store {
    kind: BackendKind,
    table: KeyedTable,
    live: Live,
    /// LSM: how many partitions stay in memory before idle ones are dropped.
    cache: usize,
    /// Partitions only in the table.
    spilled: usize,
    /// A reused buffer for a waiting row's bytes.
    row_bytes: Vec<u8>,
    /// The instance only extends the partial matches handed to it: a partition without
    /// one is forgotten, and a snapshot keeps the start rows of its attempts.
    extend_only: bool,
    /// The partitions with partial matches a time bound ends, by when (see `deadlines.rs`).
    deadlines: Deadlines,
}

impl Store {
    /// The (empty) store of pattern `operator`, in a backend of `kind` working in `dir` (LSM;
    /// a temporary directory if `None`), keeping `cache` partitions in memory (LSM).
    pub(crate) fn new(
        operator: &str,
        kind: BackendKind,
        dir: Option<PathBuf>,
        cache: usize,
    ) -> Self {
        Self {
            kind,
            table: KeyedTable::new(operator, kind, dir),
            live: Table::default(),
            cache: cache.max(1),
            spilled: 0,
            row_bytes: Vec::new(),
            extend_only: false,
            deadlines: Deadlines::default(),
        }
    }

    /// Makes this the store of an instance that only extends the partial matches handed to
    /// it (see [`Store::forget`] and the snapshot's partition entry).
    pub(crate) fn set_extend_only(&mut self, extend_only: bool) {
        self.extend_only = extend_only;
    }

    /// Whether `part` holds nothing the instance needs: it is [`Partition::is_blank`] under
    /// `p`, or (an instance that only extends) it holds no partial match.
    fn unneeded(&self, p: &Pattern, part: &Partition) -> bool {
        part.is_blank(p) || (self.extend_only && part.is_idle())
    }

    /// The partition of `key` if it is in memory, marked as changed.
    pub(crate) fn live_mut(&mut self, key: &[u8]) -> Option<Slot<'_>> {
        let Store {
            live, deadlines, ..
        } = self;
        live.get_mut(key).map(|h| {
            h.changed = true;
            Slot {
                part: &mut h.part,
                due: &mut h.due,
                deadlines,
            }
        })
    }

    /// Calls `f` with every partition in memory and its key; marks those it says it
    /// changed.
    pub(crate) fn each_live(&mut self, mut f: impl FnMut(&[u8], &mut Partition) -> bool) {
        for (k, h) in self.live.iter_mut() {
            if f(k, &mut h.part) {
                h.changed = true;
            }
        }
    }

    /// The partitions in memory (to count what they hold).
    pub(crate) fn live(&self) -> impl Iterator<Item = &Partition> {
        self.live.values().map(|h| &h.part)
    }

    /// The next partition whose time bound ends a partial match by `watermark`, no longer
    /// queued (see `deadlines.rs`); after changing it, [`Slot::queue_at`] queues it again.
    pub(crate) fn next_due(&mut self, watermark: i64) -> Option<Key> {
        while let Some((due, key)) = self.deadlines.pop_due(watermark) {
            // An entry the partition does not record is one it outlived (it was forgotten, or
            // visited at that time already).
            if let Some(h) = self.live.get_mut(key.as_bytes()).filter(|h| h.due == due) {
                h.due = UNQUEUED;
                return Some(key);
            }
        }
        None
    }

    /// The next partition queued by `watermark`, with the time it is queued at: out of the
    /// queue, but still recording that time, so that rows pushed to it do not queue it
    /// elsewhere; [`Store::requeue`] puts it back as it was (or forget it).
    pub(crate) fn pop_due(&mut self, watermark: i64) -> Option<(i64, Key)> {
        while let Some((due, key)) = self.deadlines.pop_due(watermark) {
            if self
                .live
                .get_mut(key.as_bytes())
                .is_some_and(|h| h.due == due)
            {
                return Some((due, key));
            }
        }
        None
    }

    /// Puts back entries [`Store::pop_due`] took (those of partitions forgotten since are
    /// skipped when due, as any entry a partition outlived).
    pub(crate) fn requeue(&mut self, entries: Vec<(i64, Key)>) {
        for (due, key) in entries {
            self.deadlines.push(due, key);
        }
    }

    /// Queues every partition in memory that is not, at `due(partition)` (after a restore,
    /// a live rescale's take, or partial matches taken from another instance).
    pub(crate) fn queue_all(&mut self, mut due: impl FnMut(&Partition) -> Option<i64>) {
        for (k, h) in self.live.iter_mut() {
            queue(&mut self.deadlines, &mut h.due, k, due(&h.part));
        }
    }

    /// How many partitions there are (in memory and only in the table).
    pub(crate) fn partitions(&self) -> usize {
        self.live.len() + self.spilled
    }

    /// The table's bytes (a metric; 0 before it is opened).
    pub(crate) fn backend_bytes(&self) -> u64 {
        self.table.size_bytes().unwrap_or(0)
    }

    /// The partition of `key`, read back from the table if it was dropped from memory, or a
    /// new one; marked as changed. (One hash of the key: a Nexmark run looks up a partition
    /// per row, most of them new.)
    pub(crate) fn get_mut(&mut self, p: &Pattern, key: &[u8]) -> Result<Slot<'_>, StoreError> {
        let Store {
            kind,
            table,
            live,
            spilled,
            deadlines,
            ..
        } = self;
        let h = live.get_or_try_insert(key, || {
            // Only the LSM backend drops partitions from memory: with the heap one, the
            // table holds none that is not in memory too.
            let bytes = match kind {
                BackendKind::Heap => None,
                _ => table.get(key, PARTITION)?,
            };
            let (part, stored) = match bytes {
                Some(bytes) => {
                    *spilled = spilled.saturating_sub(1);
                    (decode(p, &bytes, table.key_group(key))?, true)
                }
                None => (Partition::default(), false),
            };
            Ok::<_, StoreError>(Held::new(part, true, stored))
        })?;
        h.changed = true;
        Ok(Slot {
            part: &mut h.part,
            due: &mut h.due,
            deadlines,
        })
    }

    /// Forgets the partition of `key` (in memory and in the table), which is
    /// [`Partition::is_blank`] under `p`: a new one is the same. Partitions whose rows all
    /// ended without a match (most of a Nexmark run's millions) take no memory. An instance
    /// that only extends also forgets a partition without partial matches (one handed to it
    /// later comes with the rows it needs).
    pub(crate) fn forget(&mut self, p: &Pattern, key: &[u8]) -> Result<(), StoreError> {
        if let Some(h) = self.live.remove(key) {
            debug_assert!(
                self.unneeded(p, &h.part),
                "only an unneeded partition is forgotten"
            );
            if h.stored {
                self.table.delete(key, PARTITION)?;
            }
        }
        Ok(())
    }

    /// Forgets every partition in memory that is [`Partition::is_blank`] under `p` (or, in
    /// an instance that only extends, idle: see [`Store::forget`]); returns how many rows
    /// they kept (none, but for an idle one kept for `PREV` in an instance that extends).
    pub(crate) fn forget_blank(&mut self, p: &Pattern) -> Result<usize, StoreError> {
        let Store {
            live,
            table,
            extend_only,
            ..
        } = self;
        let mut failed = None;
        let mut rows = 0;
        live.retain(|key, h| {
            if !(h.part.is_blank(p) || (*extend_only && h.part.is_idle())) {
                return true;
            }
            rows += h.part.rows_kept();
            if h.stored {
                if let Err(e) = table.delete(key, PARTITION) {
                    failed.get_or_insert(e);
                }
            }
            false
        });
        failed.map_or(Ok(rows), |e| Err(e.into()))
    }

    /// Every partition in memory, marked as changed, in the order of their keys.
    pub(crate) fn all_live(&mut self) -> impl Iterator<Item = &mut Partition> {
        let mut live: Vec<_> = self.live.iter_mut().collect();
        // In the order of their keys, not of their slots (which a restored table does not
        // repeat): what ending them reports comes out in one order on every run.
        live.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        live.into_iter().map(|(_, h)| {
            h.changed = true;
            &mut h.part
        })
    }

    /// LSM: drops idle partitions from memory (their copy goes to the table) while more than
    /// `cache` are live.
    pub(crate) fn spill(&mut self) -> Result<(), StoreError> {
        if self.kind != BackendKind::Lsm || self.live.len() <= self.cache {
            return Ok(());
        }
        let idle: Vec<Key> = self
            .live
            .iter()
            .filter(|(_, h)| h.part.is_idle())
            .map(|(k, _)| k.clone())
            .take(self.live.len() - self.cache)
            .collect();
        for key in idle {
            if let Some(h) = self.live.remove(key.as_bytes()) {
                if h.changed {
                    self.table
                        .put(&key, PARTITION, &encode(&h.part, self.extend_only))?;
                }
                self.spilled += 1;
            }
        }
        Ok(())
    }

    /// Forgets every partition and waiting row, in memory and in the table (recorded as
    /// deletes for the next changelog, so that a restore of a later checkpoint finds none of
    /// them): a pattern that switched to a new definition starts afresh.
    pub(crate) fn clear(&mut self) -> Result<(), StoreError> {
        self.live.clear();
        self.deadlines.clear();
        self.spilled = 0;
        let all = self.table.all_key_groups();
        let _removed = self.table.export(all, &mut std::io::sink())?;
        Ok(())
    }

    /// Forgets the entry of the waiting row `seq` of partition `key` (released by the
    /// watermark after a snapshot wrote it).
    pub(crate) fn forget_waiting(&mut self, key: &[u8], seq: u64) -> Result<(), StoreError> {
        Ok(self.table.delete(key, &waiting_sub_key(seq))?)
    }

    /// Writes the changed partitions and the rows that started waiting since the last
    /// snapshot (`new_waiting`: sequence number, partition key, row) to the table: then it
    /// holds every partition and waiting row as they are in memory.
    pub(crate) fn save<'a>(
        &mut self,
        new_waiting: impl Iterator<Item = (u64, &'a [u8], Row)>,
    ) -> Result<(), StoreError> {
        for (key, h) in self.live.iter_mut() {
            if std::mem::take(&mut h.changed) {
                self.table
                    .put(key, PARTITION, &encode(&h.part, self.extend_only))?;
                h.stored = true;
            }
        }
        for (seq, key, row) in new_waiting {
            self.row_bytes.clear();
            put_row(&mut self.row_bytes, &row);
            self.table
                .put(key, &waiting_sub_key(seq), &self.row_bytes)?;
        }
        Ok(())
    }

    /// Writes the table's snapshot of `kind` to `out` (after [`Store::save`]).
    pub(crate) fn snapshot(
        &mut self,
        kind: SnapshotKind,
        out: &mut dyn Write,
    ) -> Result<(), StoreError> {
        let _stats = self.table.snapshot(kind, out)?;
        Ok(())
    }

    /// The key group of partition key `key`, as the exchange routes it.
    pub(crate) fn key_group(&self, key: &[u8]) -> KeyGroup {
        self.table.key_group(key)
    }

    /// A live rescale: the partitions and waiting rows of the key groups of `ranges` leave,
    /// each range's entries as a full stream (what [`Store::take`] of another instance
    /// reads), out of the table and out of memory; `gone` sees each partition leaving
    /// memory. The table must hold them as they are ([`Store::save`] first).
    pub(crate) fn give(
        &mut self,
        ranges: &[KeyGroupRange],
        mut gone: impl FnMut(&Partition),
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let Store {
            table,
            live,
            spilled,
            ..
        } = self;
        if *spilled > 0 {
            // LSM: the partitions only in the table leave with their key groups.
            for range in ranges {
                table.scan(*range, |e: TableEntry<'_>| {
                    if e.sub_key == PARTITION && !live.contains_key(e.group_key) {
                        *spilled = spilled.saturating_sub(1);
                    }
                    Ok::<(), StoreError>(())
                })?;
            }
        }
        let pieces = table.export_each(ranges)?;
        live.retain(|key, h| {
            let kg = table.key_group(key);
            let leaves = ranges.iter().any(|r| r.contains(kg));
            if leaves {
                gone(&h.part);
            }
            !leaves
        });
        Ok(pieces)
    }

    /// A live rescale: adds the partitions and waiting rows other instances gave
    /// ([`Store::give`]), each piece with its range, to the table, and rebuilds them in
    /// memory as a restore does.
    pub(crate) fn take(
        &mut self,
        p: &Pattern,
        pieces: &[(KeyGroupRange, Vec<u8>)],
    ) -> Result<Loaded, StoreError> {
        let (table, mut loader) = self.loading();
        for (range, piece) in pieces {
            table.import_scanned(*range, piece, |e| loader.load(p, e))?;
        }
        Ok(loader.finish())
    }

    /// The table, and a loader of its entries into memory.
    fn loading(&mut self) -> (&mut KeyedTable, Loader<'_>) {
        let loader = Loader {
            kind: self.kind,
            live: &mut self.live,
            spilled: &mut self.spilled,
            loaded: Loaded {
                waiting: Vec::new(),
                partitions: Vec::new(),
            },
        };
        (&mut self.table, loader)
    }

    /// Calls `f` with each partition of `keys` in memory, not marking them as changed (a
    /// restore or a take settles what it read back).
    pub(crate) fn each_of(&mut self, keys: &[Key], mut f: impl FnMut(&mut Partition)) {
        for key in keys {
            if let Some(h) = self.live.get_mut(key.as_bytes()) {
                f(&mut h.part);
            }
        }
    }

    /// Replaces everything with a full snapshot and the changelogs after it; returns what it
    /// read back. Partitions with partial matches (and, with the heap backend, all of them)
    /// are rebuilt in memory.
    pub(crate) fn restore(
        &mut self,
        p: &Pattern,
        full: &mut dyn Read,
        changes: &mut [&mut dyn Read],
    ) -> Result<Loaded, StoreError> {
        self.live.clear();
        self.deadlines.clear();
        self.spilled = 0;
        let (table, mut loader) = self.loading();
        table.restore(full, changes, |e: TableEntry<'_>| loader.load(p, e))?;
        Ok(loader.finish())
    }
}

/// Rebuilds partitions in memory and collects waiting rows from table entries (a restore,
/// or the key groups a live rescale hands over).
struct Loader<'s> {
    kind: BackendKind,
    live: &'s mut Live,
    spilled: &'s mut usize,
    loaded: Loaded,
}

impl Loader<'_> {
    fn load(&mut self, p: &Pattern, e: TableEntry<'_>) -> Result<(), StoreError> {
        if e.sub_key == PARTITION {
            if self.live.contains_key(e.group_key) {
                return Err(StoreError::AlreadyHeld(e.kg));
            }
            let part = decode(p, e.value, e.kg)?;
            if self.kind == BackendKind::Heap || !part.is_idle() {
                let key = Key::from(e.group_key);
                self.loaded.partitions.push(key.clone());
                self.live.insert(key, Held::new(part, false, true));
            } else {
                *self.spilled += 1;
            }
        } else if let Some(seq) = split_waiting_sub_key(e.sub_key) {
            let mut r = e.value;
            let row = get_row(&mut r)
                .filter(|_| r.is_empty())
                .ok_or(StoreError::Corrupt("waiting row", e.kg))?;
            self.loaded.waiting.push((seq, Key::from(e.group_key), row));
        } else {
            return Err(StoreError::UnknownEntry(
                e.kg,
                e.sub_key.iter().take(16).copied().collect(),
            ));
        }
        Ok(())
    }

    /// What it read, the waiting rows by sequence number.
    fn finish(mut self) -> Loaded {
        self.loaded.waiting.sort_by_key(|(seq, _, _)| *seq);
        self.loaded
    }
}

/// A partition's entry: its counters, rows, covered point and, in an instance that only
/// extends (`starts`), the first rows of its attempts (a restore starts exactly those again).
fn encode(part: &Partition, starts: bool) -> Vec<u8> {
    let (rows, base, replay, resume, matches) = part.parts();
    let mut out = Vec::new();
    for n in [base, replay, resume] {
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(&matches.to_le_bytes());
    put_rows(&mut out, rows.iter());
    out.extend_from_slice(&part.covered().to_le_bytes());
    if starts {
        let starts = part.starts();
        out.extend_from_slice(&(starts.len() as u64).to_le_bytes());
        for s in starts {
            out.extend_from_slice(&s.to_le_bytes());
        }
    }
    out
}

fn decode(p: &Pattern, bytes: &[u8], kg: KeyGroup) -> Result<Partition, StoreError> {
    let bad = || StoreError::Corrupt("partition", kg);
    let mut r = bytes;
    let mut u64s = [0u64; 3];
    for n in &mut u64s {
        *n = get_u64(&mut r).ok_or_else(bad)?;
    }
    let matches = get_u64(&mut r).ok_or_else(bad)? as i64;
    let rows = get_rows(&mut r).ok_or_else(bad)?;
    // Written after the rows since issue 18; an older snapshot's rows before the resume point
    // are the covered ones.
    let covered = match r.len() {
        0 => u64s[2],
        _ => get_u64(&mut r).ok_or_else(bad)?,
    };
    // An instance that only extends keeps the first rows of its attempts after `covered`.
    let starts = match r.len() {
        0 => None,
        _ => {
            let n = usize::try_from(get_u64(&mut r).ok_or_else(bad)?).map_err(|_| bad())?;
            let mut starts = Vec::with_capacity(n.min(1 << 16));
            for _ in 0..n {
                starts.push(get_u64(&mut r).ok_or_else(bad)?);
            }
            if !r.is_empty() || !starts.windows(2).all(|w| w[0] < w[1]) {
                return Err(bad());
            }
            Some(starts)
        }
    };
    let starts = match &starts {
        None => Starts::Every,
        Some(s) => Starts::At(s),
    };
    Partition::rebuild(
        p,
        rows,
        (u64s[0], u64s[1], u64s[2]),
        (matches, covered),
        starts,
    )
    .map_err(StoreError::Replay)
}

pub(crate) fn put_rows<'a>(out: &mut Vec<u8>, rows: impl ExactSizeIterator<Item = &'a Row>) {
    out.extend_from_slice(&(rows.len() as u64).to_le_bytes());
    for row in rows {
        put_row(out, row);
    }
}

fn put_row(out: &mut Vec<u8>, row: &Row) {
    {
        out.extend_from_slice(&row.ts.to_le_bytes());
        out.extend_from_slice(&(row.cells.len() as u32).to_le_bytes());
        for c in row.cells.iter() {
            match c {
                // A row holds the cells of an input row: no list (only a measure computes one).
                Value::Null | Value::List(_) => out.push(0),
                Value::Bool(false) => out.push(1),
                Value::Bool(true) => out.push(2),
                Value::Int(i) => {
                    out.push(3);
                    out.extend_from_slice(&i.to_le_bytes());
                }
                Value::Float(f) => {
                    out.push(4);
                    out.extend_from_slice(&f.to_le_bytes());
                }
                Value::Str(s) => {
                    out.push(5);
                    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                    out.extend_from_slice(s.as_bytes());
                }
            }
        }
    }
}

fn take<'a>(r: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if r.len() < n {
        return None;
    }
    let (head, tail) = r.split_at(n);
    *r = tail;
    Some(head)
}

pub(crate) fn get_u64(r: &mut &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(take(r, 8)?.try_into().ok()?))
}

fn get_u32(r: &mut &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(take(r, 4)?.try_into().ok()?))
}

pub(crate) fn get_rows(r: &mut &[u8]) -> Option<Vec<Row>> {
    let n = usize::try_from(get_u64(r)?).ok()?;
    let mut rows = Vec::with_capacity(n.min(1 << 20));
    for _ in 0..n {
        rows.push(get_row(r)?);
    }
    Some(rows)
}

fn get_row(r: &mut &[u8]) -> Option<Row> {
    {
        let ts = get_u64(r)? as i64;
        let k = get_u32(r)? as usize;
        let mut cells = Vec::with_capacity(k.min(1 << 10));
        for _ in 0..k {
            let tag = take(r, 1)?[0];
            cells.push(match tag {
                0 => Value::Null,
                1 => Value::Bool(false),
                2 => Value::Bool(true),
                3 => Value::Int(get_u64(r)? as i64),
                4 => Value::Float(f64::from_bits(get_u64(r)?)),
                5 => {
                    let len = get_u32(r)? as usize;
                    Value::Str(std::str::from_utf8(take(r, len)?).ok()?.into())
                }
                _ => return None,
            });
        }
        Some(Row {
            ts,
            cells: cells.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_sub_keys_sort_by_sequence_number_and_split_back() {
        let seqs = [0, 1, 255, 256, u64::MAX];
        let keys: Vec<[u8; 9]> = seqs.iter().map(|s| waiting_sub_key(*s)).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(sorted, keys);
        for (k, s) in keys.iter().zip(seqs) {
            assert_eq!(split_waiting_sub_key(k), Some(s));
        }
        assert_eq!(split_waiting_sub_key(PARTITION), None);
        assert_eq!(split_waiting_sub_key(b"x12345678"), None);
        assert_eq!(split_waiting_sub_key(b"w1234567"), None);
    }

    #[test]
    fn rows_round_trip_through_bytes() {
        let rows = vec![
            Row {
                ts: -5,
                cells: vec![Value::Null, Value::Bool(true), Value::Int(-7)].into(),
            },
            Row {
                ts: 9,
                cells: vec![
                    Value::Float(1.5),
                    Value::Str("héllo".into()),
                    Value::Bool(false),
                ]
                .into(),
            },
        ];
        let mut bytes = Vec::new();
        put_rows(&mut bytes, rows.iter());
        let back = get_rows(&mut &bytes[..]).expect("decodes");
        assert_eq!(back, rows);
        assert!(
            get_rows(&mut &bytes[..bytes.len() - 1]).is_none(),
            "truncated"
        );
    }
}
