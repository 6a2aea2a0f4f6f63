//! The running top-N: a batch's rows added to (or taken out of) their partitions, the changes
//! of the partitions' first rows emitted after it (`rank.rs`), or for keep-first
//! deduplication each key's earliest row held until the watermark passes it; the partitions
//! checkpointed through a keyed table and restored from it.
//!
//! A checkpoint writes one table entry per partition changed since the previous one (its
//! key's bytes as group key, `t` as sub-key, `entry.rs` as value), or deletes the entry of a
//! partition that holds nothing any more; the manifest keeps how many retractions found no
//! row to take out.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use ahash::RandomState;
use anduin_operator_api::event_time::event_times;
use anduin_operator_api::rescale::Combine;
use anduin_operator_api::{
    BuildContext, Collector, KeyGroupsGiven, Operator, OperatorError, RestoreIn, SnapshotOut,
};
use anduin_state::{KeyGroupRange, KeyedTable, TableEntry};
use anduin_types::{ChangeKind, Watermark};
use arrow::record_batch::RecordBatch;
use hashbrown::HashMap;

use crate::retracting;
use crate::ttl::{Incoming, StateTtl};

use super::entry;
use super::rank::{changes, Change, Partition, Ties, Top};
use super::rows::{internal, Codecs};
use super::{Mode, TopSetup};

/// The sub-key of a partition's entry.
const ROWS: &[u8] = b"t";

/// A running top-N.
pub(crate) struct TopN {
    setup: TopSetup,
    /// A row's values and order columns to row-format bytes and back.
    codecs: Codecs,
    /// The partitions holding rows (or the mark of an emitted first row), by their key's bytes
    /// (the bytes the hash exchange routes by; empty for one partition of every row).
    partitions: HashMap<Box<[u8]>, Partition, RandomState>,
    /// Partitions changed since the last checkpoint.
    dirty: HashSet<Box<[u8]>, RandomState>,
    /// Keep-first: the partitions whose row waits for the watermark, by its event time.
    pending: BTreeSet<(i64, Box<[u8]>)>,
    /// The checkpointed copy of the partitions.
    table: KeyedTable,
    /// When each partition was last written, if its state expires (`state_ttl`).
    ttl: StateTtl,
    /// Retractions of rows no partition held.
    unmatched_retractions: u64,
    /// Keep-first: rows dropped because their key's row was emitted already.
    duplicates_dropped: u64,
    /// How many rows the partitions hold, kept as they change (a sum over millions of
    /// partitions at each reading of the metrics would cost more than the rows).
    rows_held: usize,
}

impl TopN {
    pub(crate) fn new(setup: TopSetup, ctx: &BuildContext) -> Result<Self, OperatorError> {
        let dir = ctx.backend_dir(&setup.name);
        let table = KeyedTable::new(&setup.name, setup.backend, dir);
        let codecs = Codecs::new(&setup)?;
        let ttl = StateTtl::new(setup.ttl_ms, 1, Arc::clone(&ctx.clock));
        Ok(Self {
            ttl,
            setup,
            codecs,
            partitions: HashMap::with_hasher(RandomState::with_seeds(1, 2, 3, 4)),
            dirty: HashSet::with_hasher(RandomState::with_seeds(1, 2, 3, 4)),
            pending: BTreeSet::new(),
            table,
            unmatched_retractions: 0,
            duplicates_dropped: 0,
            rows_held: 0,
        })
    }

    /// Counts the rows held again, after the partitions were replaced (a restore, a rescale).
    fn recount(&mut self) {
        self.rows_held = self.partitions.values().map(|p| p.len).sum();
    }

    /// Writes the partitions changed since the last checkpoint to the table (deleting those
    /// gone).
    fn flush(&mut self) -> Result<(), OperatorError> {
        for key in self.dirty.drain() {
            let present = match self.partitions.get(&key) {
                Some(p) => {
                    self.table.put(&key, ROWS, &entry::encode(p))?;
                    true
                }
                None => {
                    self.table.delete(&key, ROWS)?;
                    false
                }
            };
            self.ttl.store(&mut self.table, &key, |_| present)?;
        }
        Ok(())
    }

    /// Forgets the partitions not written for the time-to-live (as of now), and a
    /// keep-first partition's row waiting for the watermark with it: a partition seen again
    /// starts empty, its rows emitted before not retracted.
    fn expire(&mut self) {
        let (partitions, dirty, pending, held) = (
            &mut self.partitions,
            &mut self.dirty,
            &mut self.pending,
            &mut self.rows_held,
        );
        self.ttl.tick();
        self.ttl.sweep(|key, _| {
            if let Some(p) = partitions.remove(key) {
                *held = held.saturating_sub(p.len);
                if let Some(t) = p.pending {
                    pending.remove(&(t, Box::from(key)));
                }
            }
            dirty.insert(key.into());
        });
    }

    /// Ranked: applies a batch's rows and emits the changes of the partitions it touched.
    fn ranked(
        &mut self,
        ties: Ties,
        batch: &RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let adds = retracting::adds(&self.setup.name, batch, self.setup.change_in)?;
        let (keys, values, sort) = self.codecs.rows(&self.setup, batch)?;
        let (limit, append_only) = (self.setup.limit, self.setup.change_in.is_none());
        // The partitions this batch touches, in order of first touch, and their first rows
        // before it.
        let mut index: HashMap<&[u8], usize, RandomState> =
            HashMap::with_hasher(RandomState::with_seeds(1, 2, 3, 4));
        let mut touched: Vec<(&[u8], Top)> = Vec::new();
        for (i, add) in adds.iter().enumerate() {
            let key = self.setup.codec.stored(keys.row(i));
            if !index.contains_key(key) {
                let before = self
                    .partitions
                    .get(key)
                    .map_or_else(Vec::new, |p| p.top(limit));
                index.insert(key, touched.len());
                touched.push((key, before));
            }
            let (sort, row) = (sort.row(i), values.row(i));
            if *add {
                let p = self.partitions.entry_ref(key).or_default();
                let before = p.len;
                p.add(sort.as_ref(), row.as_ref(), ties);
                if append_only {
                    p.trim(limit);
                }
                self.rows_held = (self.rows_held + p.len).saturating_sub(before);
            } else if self
                .partitions
                .get_mut(key)
                .is_some_and(|p| p.take(sort.as_ref(), row.as_ref()))
            {
                self.rows_held = self.rows_held.saturating_sub(1);
            } else {
                self.unmatched_retractions += 1;
            }
        }
        let mut emitted = Vec::new();
        for (key, before) in touched {
            let after = self
                .partitions
                .get(key)
                .map_or_else(Vec::new, |p| p.top_refs(limit));
            changes(&before, &after, self.setup.ranked, &mut emitted);
            if self.partitions.get(key).is_some_and(Partition::is_empty) {
                self.partitions.remove(key);
            }
            self.ttl.wrote(key, 0);
            if !self.dirty.contains(key) {
                self.dirty.insert(key.into());
            }
        }
        if emitted.is_empty() {
            return Ok(());
        }
        let batch = self.codecs.output(&self.setup, &emitted)?;
        out.collect(0, batch)
    }

    /// Keep-first: each row replaces its key's held row if it is earlier; a key whose row was
    /// emitted drops it.
    fn keep_first(&mut self, batch: &RecordBatch) -> Result<(), OperatorError> {
        let (keys, values, sort) = self.codecs.rows(&self.setup, batch)?;
        let time = self.setup.time.ok_or_else(|| {
            internal(
                &self.setup.name,
                "keep-first deduplication without an event-time column",
            )
        })?;
        let times = event_times(batch, time);
        for (i, t) in times.into_iter().enumerate() {
            let key = self.setup.codec.stored(keys.row(i));
            let p = self.partitions.entry_ref(key).or_default();
            if p.emitted {
                self.duplicates_dropped += 1;
                continue;
            }
            let sort = sort.row(i);
            if p.first_sort().is_some_and(|s| *s <= *sort.as_ref()) {
                continue;
            }
            // A null time sorts first, and waits for the next watermark.
            let t = t.unwrap_or(i64::MIN);
            if let Some(old) = p.pending.replace(t) {
                self.pending.remove(&(old, Box::from(key)));
            }
            self.rows_held = (self.rows_held + 1).saturating_sub(p.len);
            p.clear();
            p.add(sort.as_ref(), values.row(i).as_ref(), Ties::Earliest);
            self.pending.insert((t, key.into()));
            self.ttl.wrote(key, 0);
            if !self.dirty.contains(key) {
                self.dirty.insert(key.into());
            }
        }
        Ok(())
    }

    /// Keep-first: emits the held rows whose time the watermark `w` passed, once.
    fn emit_first(&mut self, w: Watermark, out: &mut dyn Collector) -> Result<(), OperatorError> {
        let mut emitted = Vec::new();
        while self.pending.first().is_some_and(|(t, _)| *t <= w.0) {
            let Some((_, key)) = self.pending.pop_first() else {
                break;
            };
            let Some(p) = self.partitions.get_mut(&key) else {
                return Err(internal(
                    &self.setup.name,
                    "a pending key holds no partition",
                ));
            };
            emitted.extend(p.top(1).into_iter().map(|row| Change {
                row,
                rank: 1,
                kind: ChangeKind::Insert,
            }));
            self.rows_held = self.rows_held.saturating_sub(p.len);
            *p = Partition::emitted();
            self.dirty.insert(key);
        }
        if emitted.is_empty() {
            return Ok(());
        }
        let batch = self.codecs.output(&self.setup, &emitted)?;
        out.collect(0, batch)
    }

    /// Rebuilds the keep-first index of what waits for the watermark.
    fn index_pending(&mut self) {
        self.pending = self
            .partitions
            .iter()
            .filter_map(|(k, p)| p.pending.map(|t| (t, k.clone())))
            .collect();
    }
}

impl Operator for TopN {
    fn name(&self) -> &str {
        &self.setup.name
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.expire();
        match self.setup.mode {
            Mode::Ranked(ties) => self.ranked(ties, &batch, out),
            Mode::KeepFirst => self.keep_first(&batch),
        }
    }

    fn handle_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector,
    ) -> Result<Option<Watermark>, OperatorError> {
        match self.setup.mode {
            Mode::KeepFirst => {
                self.emit_first(watermark, out)?;
                Ok(Some(watermark))
            }
            // A change may retract a row older than any watermark so far: only the end of
            // input passes.
            Mode::Ranked(_) => Ok((watermark == Watermark::MAX).then_some(watermark)),
        }
    }

    fn on_end_of_input(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
        if self.setup.mode == Mode::KeepFirst {
            self.emit_first(Watermark::MAX, out)?;
        }
        Ok(())
    }

    /// No row will come: a keep-first deduplication emits every key's first row now, as at
    /// the end of event time (after an exhausted input the next watermark is that +∞); a
    /// ranking emits each batch's changes with it. Either way the output is exhausted too.
    fn on_input_exhausted(
        &mut self,
        _input: usize,
        out: &mut dyn Collector,
    ) -> Result<bool, OperatorError> {
        if self.setup.mode == Mode::KeepFirst {
            self.emit_first(Watermark::MAX, out)?;
        }
        Ok(true)
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        self.expire();
        self.flush()?;
        retracting::snapshot(
            &self.setup.name,
            &mut self.table,
            self.unmatched_retractions,
            &self.ttl,
            out,
        )
    }

    fn rescale_inline(
        &self,
        parts: &[Option<serde_json::Value>],
        how: Combine,
    ) -> Result<Option<serde_json::Value>, anduin_operator_api::RescaleError> {
        retracting::rescale_inline(parts, how)
    }

    fn restore(&mut self, state: RestoreIn) -> Result<(), OperatorError> {
        let name = &self.setup.name;
        let partitions = &mut self.partitions;
        partitions.clear();
        self.dirty.clear();
        self.unmatched_retractions = retracting::restore(
            name,
            "top-N",
            &mut self.table,
            &mut self.ttl,
            state,
            |e: TableEntry<'_>| {
                partitions.insert(e.group_key.into(), decode(name, &e)?);
                Ok(())
            },
        )?;
        self.index_pending();
        self.recount();
        Ok(())
    }

    fn moves_key_groups(&self) -> bool {
        true
    }

    fn give_key_groups(
        &mut self,
        ranges: &[KeyGroupRange],
    ) -> Result<KeyGroupsGiven, OperatorError> {
        // The table first holds every partition as it is in memory.
        self.flush()?;
        let pieces = self.table.export_each(ranges)?;
        let table = &self.table;
        self.partitions
            .retain(|key, _| !retracting::given_away(table, ranges, key));
        self.ttl
            .retain(|key| !retracting::given_away(table, ranges, key));
        self.index_pending();
        self.recount();
        retracting::given(&self.setup.name, pieces, self.unmatched_retractions)
    }

    fn take_key_groups(
        &mut self,
        pieces: Vec<(KeyGroupRange, Vec<u8>)>,
        inline: Vec<Option<serde_json::Value>>,
    ) -> Result<(), OperatorError> {
        self.unmatched_retractions =
            retracting::taken(&self.setup.name, self.unmatched_retractions, inline)?;
        let name = &self.setup.name;
        let mut incoming = Incoming::for_ttl(&self.ttl);
        for (range, bytes) in pieces {
            let partitions = &mut self.partitions;
            self.table
                .import_scanned(range, &bytes, |e: TableEntry<'_>| {
                    if incoming.take(name, &e)? {
                        return Ok(());
                    }
                    if partitions
                        .insert(e.group_key.into(), decode(name, &e)?)
                        .is_some()
                    {
                        return Err(OperatorError::internal(
                            name,
                            format!(
                                "a partition of {} handed over at a rescale is held here already",
                                e.kg
                            ),
                        ));
                    }
                    Ok::<(), OperatorError>(())
                })?;
        }
        self.ttl.taken(incoming, &mut self.table)?;
        self.index_pending();
        self.recount();
        Ok(())
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        let mut metrics = vec![
            ("partitions", self.partitions.len() as u64),
            ("rows_held", self.rows_held as u64),
            ("unmatched_retractions", self.unmatched_retractions),
        ];
        if self.setup.mode == Mode::KeepFirst {
            metrics.push(("duplicates_dropped", self.duplicates_dropped));
        }
        metrics.extend(self.table.size_bytes().map(|b| ("state_backend_bytes", b)));
        metrics.extend(self.ttl.metrics());
        metrics
    }

    fn is_stateless(&self) -> bool {
        false
    }
}

/// The partition a checkpointed entry holds.
fn decode(name: &str, e: &TableEntry<'_>) -> Result<Partition, OperatorError> {
    (e.sub_key == ROWS)
        .then(|| entry::decode(e.value))
        .flatten()
        .ok_or_else(|| OperatorError::Execution {
            operator: name.to_string(),
            message: format!(
                "the checkpoint's top-N state holds an entry in {} that is not a partition of this top-N: the state is corrupt, or the query changed its input; restore from an earlier checkpoint",
                e.kg
            ),
        })
}
