//! The running join: rows buffered per side and key, pairs emitted as soon as both rows are
//! there (interval join) or when the watermark closes their window (window join), buffered
//! rows dropped when the watermark says no partner can come.

use std::collections::BTreeMap;
use std::sync::Arc;

use anduin_operator_api::rescale::{agreed, combine_moved, Combine, RescaleError, RescaleMeta};
use anduin_types::{SnapshotKind, Watermark};
use arrow::array::UInt32Array;
use arrow::array::{Array, ArrayRef, Int64Array, TimestampMillisecondArray};
use arrow::buffer::NullBuffer;
use arrow::compute::take_record_batch;
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

use super::checkpoint::{CheckpointError, Checkpointed};
use super::output::{joined, Pair};
use super::store::{Entry, Store};
use super::{JoinKind, JoinSetup};
use crate::window::assign::sliding_fits;
use crate::window::reject::keep_fitting;
use anduin_operator_api::keys::KeyEncoder;
use anduin_operator_api::null_time::reject_null_times;
use anduin_operator_api::{
    BuildContext, Collector, DeadLetter, KeyGroupsGiven, Operator, OperatorError, RestoreIn,
    SnapshotOut,
};

/// A running join.
pub(crate) struct Join {
    setup: JoinSetup,
    /// The rows in memory.
    store: Store,
    /// Their checkpointed copy.
    checkpointed: Checkpointed,
    /// The keys' bytes, as the exchange routes by (both sides' key columns have the same types).
    keys: KeyEncoder,
    watermark: i64,
    late: u64,
    /// The most bytes the buffered rows held in memory (after a batch), this run.
    peak_bytes: usize,
    /// Which inputs are exhausted (not kept: a restored run hears it again).
    exhausted: [bool; 2],
    /// Where rejected rows go: rows without an event time, and a window join's rows whose
    /// window would not fit in a timestamp.
    dead_letter: Arc<DeadLetter>,
}

/// What a join keeps in a checkpoint's manifest.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    /// The watermark of the inputs.
    watermark: i64,
    /// Late rows dropped so far.
    late: u64,
}

impl RescaleMeta for Meta {
    fn combine(parts: Vec<Self>, how: Combine) -> Result<Self, RescaleError> {
        Ok(Meta {
            watermark: agreed("watermarks", parts.iter().map(|p| p.watermark))?,
            late: how.counter(parts.iter().map(|p| p.late)),
        })
    }
}

fn err(operator: &str, e: impl std::fmt::Display) -> OperatorError {
    OperatorError::Execution {
        operator: operator.to_string(),
        message: e.to_string(),
    }
}

/// A pruned row's key is gone from the slab: a bug.
fn lost_key(operator: &str) -> OperatorError {
    OperatorError::internal(operator, "a pruned row's key is no longer held")
}

/// A table's error names the operator itself; the others are named here.
fn checkpoint_error(operator: &str, e: CheckpointError) -> OperatorError {
    match e {
        CheckpointError::Table(e) => e.into(),
        e => err(operator, e),
    }
}

/// What [`Join::add`] did with a batch.
struct Added {
    /// Where the batch is in its side's chunks.
    chunk: usize,
    /// The pairs its rows complete (interval join).
    pairs: Vec<Pair>,
    /// Left rows of a left join with a null key column, and their times: each is a result
    /// row of its own, with nulls on the right.
    unpaired: Vec<((usize, usize), i64)>,
}

/// Which rows of the key `columns` have a null in some column (`None`: none has).
fn null_keys(columns: &[ArrayRef]) -> Option<NullBuffer> {
    columns.iter().fold(None, |acc, c| {
        NullBuffer::union(acc.as_ref(), c.logical_nulls().as_ref())
    })
}

/// Event times of `column` (an int or a millisecond timestamp); null as `None`.
fn times(batch: &RecordBatch, column: usize) -> Vec<Option<i64>> {
    let col = batch.column(column);
    if let Some(a) = col.as_any().downcast_ref::<TimestampMillisecondArray>() {
        return a.iter().collect();
    }
    if let Some(a) = col.as_any().downcast_ref::<Int64Array>() {
        return a.iter().collect();
    }
    vec![None; batch.num_rows()]
}

/// The `columns` of the rows of `batch` that stay (`staying`, by input row), copied into a
/// batch of their own: it holds none of `batch`'s buffers (a source's batch is often a slice of
/// a larger one), so `batch` and its unread columns are let go.
fn compact(
    batch: &RecordBatch,
    columns: &[usize],
    staying: &[(u32, i64, bool)],
) -> Result<RecordBatch, arrow::error::ArrowError> {
    let indices = UInt32Array::from_iter_values(staying.iter().map(|(i, _, _)| *i));
    let projected = batch.project(columns)?;
    take_record_batch(&projected, &indices)
}

impl Join {
    /// A join of `setup`, built with `ctx`: rejected rows go to its dead letters; with the LSM
    /// backend, its working files go in its backend directory (a temporary one if none).
    pub(crate) fn new(setup: JoinSetup, ctx: &BuildContext) -> Result<Self, OperatorError> {
        let dir = ctx.backend_dir(&setup.name);
        let dead_letter = Arc::clone(&ctx.dead_letter);
        let types = setup
            .left_keys
            .iter()
            .map(|i| setup.left_schema.field(*i).data_type().clone());
        let keys = KeyEncoder::new(types).map_err(|e| err(&setup.name, e))?;
        let checkpointed = Checkpointed::new(
            &setup.name,
            setup.backend,
            dir,
            [
                Arc::clone(&setup.stored_schemas[0]),
                Arc::clone(&setup.stored_schemas[1]),
            ],
        )
        .map_err(|e| err(&setup.name, e))?;
        Ok(Self {
            setup,
            store: Store::default(),
            checkpointed,
            keys,
            watermark: i64::MIN,
            late: 0,
            peak_bytes: 0,
            exhausted: [false; 2],
            dead_letter,
        })
    }

    /// Buffers the rows of `batch` from `side` (0 left, 1 right): the pairs they complete
    /// (interval join), and the left rows of a left join that can have no partner because a
    /// key column is null (SQL's `NULL = NULL` is not true), which are not buffered. Those rows'
    /// kept columns are copied into a batch of their own, which stays in its side's chunks,
    /// at the index returned, until `drop_if_unused` after the result is emitted (or until
    /// its last buffered row is dropped); `batch` itself is let go.
    fn add(&mut self, side: usize, batch: RecordBatch) -> Result<Added, OperatorError> {
        let (key_cols, time_col) = if side == 0 {
            (&self.setup.left_keys, self.setup.left_time)
        } else {
            (&self.setup.right_keys, self.setup.right_time)
        };
        let columns: Vec<ArrayRef> = key_cols
            .iter()
            .map(|i| Arc::clone(batch.column(*i)))
            .collect();
        let rows = self
            .keys
            .encode(&columns)
            .map_err(|e| err(&self.setup.name, e))?;
        let null_key = null_keys(&columns);
        let ts = times(&batch, time_col);
        // The rows that stay (their input row, time, and whether they are buffered or a left
        // join's row without a partner): not the late ones, nor the others with a null key.
        let mut staying: Vec<(u32, i64, bool)> = Vec::new();
        for (i, t) in ts.iter().enumerate() {
            let Some(t) = (*t).filter(|t| *t >= self.watermark) else {
                self.late += 1;
                continue;
            };
            let i = u32::try_from(i).map_err(|e| err(&self.setup.name, e))?;
            if null_key.as_ref().is_some_and(|n| n.is_null(i as usize)) {
                // Equal to no key: never buffered; a left join's left row is emitted alone.
                if side == 0 && self.setup.left_outer {
                    staying.push((i, t, false));
                }
                continue;
            }
            staying.push((i, t, true));
        }
        let kept = compact(&batch, &self.setup.stored[side], &staying)
            .map_err(|e| err(&self.setup.name, e))?;
        drop(batch);
        let Store { chunks, keys } = &mut self.store;
        let [left_chunks, right_chunks] = chunks;
        let chunks = if side == 0 { left_chunks } else { right_chunks };
        let chunk = chunks.add(kept);
        let mut added = Added {
            chunk,
            pairs: Vec::new(),
            unpaired: Vec::new(),
        };
        for (j, (i, t, buffered)) in staying.into_iter().enumerate() {
            if !buffered {
                added.unpaired.push(((chunk, j), t));
                continue;
            }
            let (key, k) = keys.key_mut(rows.row(i as usize).as_ref());
            let mut entry = Entry::new(t, (chunk, j), false);
            if let JoinKind::Interval { lower, upper } = self.setup.kind {
                for o in k.side_mut(1 - side) {
                    let (l, r) = if side == 0 { (t, o.time) } else { (o.time, t) };
                    let d = i128::from(r) - i128::from(l);
                    if d >= i128::from(lower) && d <= i128::from(upper) {
                        if side == 0 {
                            added.pairs.push((entry.at(), Some(o.at())));
                            entry.set_matched();
                        } else {
                            added.pairs.push((o.at(), Some(entry.at())));
                            o.set_matched();
                        }
                    }
                }
            }
            chunks.hold(chunk);
            k.push(side, entry);
            keys.due(side, t, key);
        }
        Ok(added)
    }

    fn emit(
        &self,
        pairs: &[Pair],
        windows: Option<(Vec<i64>, Vec<i64>)>,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        if pairs.is_empty() {
            return Ok(());
        }
        let batch = joined(
            &self.setup.schema,
            &self.store.chunks[0],
            &self.store.chunks[1],
            pairs,
            windows,
            &self.setup.name,
        )?;
        out.collect(0, batch)
    }

    /// Emits and drops what the watermark `wm` closes.
    fn advance(&mut self, wm: i64, out: &mut dyn Collector) -> Result<(), OperatorError> {
        match self.setup.kind {
            JoinKind::Interval { lower, upper } => {
                // No right row still to come (time >= wm) matches a left row with time + upper < wm,
                // nor a left row to come a right row with time - lower < wm; after the end of
                // input (+∞) none at all.
                let (wm, lower, upper) = (i128::from(wm), i128::from(lower), i128::from(upper));
                let end = wm == i128::from(i64::MAX);
                let expired: [&dyn Fn(i64) -> bool; 2] =
                    [&|t| end || i128::from(t) + upper < wm, &|t| {
                        end || i128::from(t) - lower < wm
                    }];
                // Each row's batch is let go as soon as its last row is pruned (the end of input
                // prunes every row: none is listed), but for a left join's left rows without a
                // partner, which are emitted first.
                let Store { chunks, keys } = &mut self.store;
                let outer = self.setup.left_outer;
                let mut alone: Vec<Entry> = Vec::new();
                keys.prune_each(expired, &mut |side, _, e| {
                    if outer && side == 0 && !e.matched() {
                        alone.push(e);
                    } else if let Some(c) = chunks.get_mut(side) {
                        c.release_one(&e);
                    }
                });
                if !alone.is_empty() {
                    alone.sort_by_key(Entry::at);
                    let pairs: Vec<Pair> = alone.iter().map(|e| (e.at(), None)).collect();
                    self.emit(&pairs, None, out)?;
                    for e in &alone {
                        self.store.chunks[0].release_one(e);
                    }
                }
            }
            JoinKind::Window { size } => {
                let end = |t: i64| t.div_euclid(size) * size + size;
                let [gone_left, gone_right] = self
                    .store
                    .keys
                    .prune([&|t| end(t) <= wm, &|t| end(t) <= wm]);
                // Group by window and key (the keys pruning emptied are readable until
                // `drop_emptied`).
                type Sides = (Vec<Entry>, Vec<Entry>);
                let keys = &self.store.keys;
                let mut groups: BTreeMap<(i64, &[u8]), Sides> = BTreeMap::new();
                for (slot, e) in &gone_left {
                    let key = keys
                        .key_of(*slot)
                        .ok_or_else(|| lost_key(&self.setup.name))?;
                    groups
                        .entry((e.time.div_euclid(size), key))
                        .or_default()
                        .0
                        .push(*e);
                }
                for (slot, e) in &gone_right {
                    let key = keys
                        .key_of(*slot)
                        .ok_or_else(|| lost_key(&self.setup.name))?;
                    groups
                        .entry((e.time.div_euclid(size), key))
                        .or_default()
                        .1
                        .push(*e);
                }
                let mut pairs = Vec::new();
                let (mut starts, mut ends) = (Vec::new(), Vec::new());
                for ((w, _), (ls, rs)) in &groups {
                    for l in ls {
                        if rs.is_empty() {
                            if self.setup.left_outer {
                                pairs.push((l.at(), None));
                                starts.push(w * size);
                                ends.push(w * size + size);
                            }
                            continue;
                        }
                        for r in rs {
                            pairs.push((l.at(), Some(r.at())));
                            starts.push(w * size);
                            ends.push(w * size + size);
                        }
                    }
                }
                drop(groups);
                self.emit(&pairs, Some((starts, ends)), out)?;
                self.store.chunks[0].release(&gone_left);
                self.store.chunks[1].release(&gone_right);
                self.store.keys.drop_emptied();
            }
        }
        Ok(())
    }
}

impl Operator for Join {
    fn name(&self) -> &str {
        &self.setup.name
    }

    fn process_batch(
        &mut self,
        input: usize,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let time = if input == 0 {
            self.setup.left_time
        } else {
            self.setup.right_time
        };
        let batch = reject_null_times(batch, time, &self.setup.name, &self.dead_letter)?;
        let batch = match self.setup.kind {
            JoinKind::Window { size } => {
                // A row whose window would not fit in a timestamp goes to the dead letters
                // (a late one is counted as late by `add`).
                let wm = self.watermark;
                let fits = |t: i64| {
                    if t < wm {
                        Ok(())
                    } else {
                        sliding_fits(t, size, size)
                    }
                };
                let ts = times(&batch, time);
                keep_fitting(batch, &ts, &self.setup.name, &self.dead_letter, fits)?
            }
            JoinKind::Interval { .. } => batch,
        };
        let Added {
            chunk,
            mut pairs,
            unpaired,
        } = self.add(input, batch)?;
        match self.setup.kind {
            JoinKind::Interval { .. } => {
                pairs.extend(unpaired.iter().map(|(at, _)| (*at, None)));
                self.emit(&pairs, None, out)?;
            }
            JoinKind::Window { size } => {
                // Pairs come when the watermark closes a window; a left row that cannot
                // have a partner comes now, in its window.
                let starts: Vec<i64> = unpaired
                    .iter()
                    .map(|(_, t)| t.div_euclid(size) * size)
                    .collect();
                let ends = starts.iter().map(|s| s + size).collect();
                let alone: Vec<Pair> = unpaired.iter().map(|(at, _)| (*at, None)).collect();
                self.emit(&alone, Some((starts, ends)), out)?;
            }
        }
        let [left, right] = &mut self.store.chunks;
        if input == 0 { left } else { right }.drop_if_unused(chunk);
        self.peak_bytes = self.peak_bytes.max(self.store.size_bytes());
        Ok(())
    }

    fn handle_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector,
    ) -> Result<Option<Watermark>, OperatorError> {
        self.watermark = self.watermark.max(watermark.0);
        self.advance(watermark.0, out)?;
        // Hold the watermark back by how far behind it a row can be when it leaves the
        // join, so that downstream event-time operators do not see joined rows as late.
        let behind = match self.setup.kind {
            JoinKind::Interval { lower, upper } => upper.max(lower.saturating_neg()).max(0),
            JoinKind::Window { size } => size,
        };
        if watermark == Watermark::MAX {
            return Ok(Some(watermark));
        }
        Ok(Some(Watermark(watermark.0.saturating_sub(behind))))
    }

    /// Once both inputs are exhausted no row will come: what the end of event time would
    /// emit goes out now (a window join's windows, a left join's rows left without a
    /// partner), as at that +∞ (after exhausted inputs the next watermark is that), so the
    /// output is exhausted too. The watermark stays where it is (event time is not over: a
    /// checkpoint, or an instance rescaled beside this one, must agree on it).
    fn on_input_exhausted(
        &mut self,
        input: usize,
        out: &mut dyn Collector,
    ) -> Result<bool, OperatorError> {
        self.exhausted[input.min(1)] = true;
        if self.exhausted != [true, true] {
            return Ok(false);
        }
        self.advance(i64::MAX, out)?;
        Ok(true)
    }

    fn on_end_of_input(&mut self, _out: &mut dyn Collector) -> Result<(), OperatorError> {
        if self.late > 0 {
            tracing::info!(operator = %self.setup.name, late_rows = self.late, "late rows dropped");
        }
        Ok(())
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        let meta = Meta {
            watermark: self.watermark,
            late: self.late,
        };
        out.inline_typed(&self.setup.name, &meta)?;
        let kind = if out.full_due() {
            SnapshotKind::Full
        } else {
            SnapshotKind::Changes
        };
        let stream = out.stream(kind)?;
        self.checkpointed
            .snapshot(&mut self.store, kind, stream)
            .map_err(|e| checkpoint_error(&self.setup.name, e))
    }

    fn rescale_inline(
        &self,
        parts: &[Option<serde_json::Value>],
        how: Combine,
    ) -> Result<Option<serde_json::Value>, anduin_operator_api::RescaleError> {
        anduin_operator_api::rescale::rescale_inline_as::<Meta>(parts, how)
    }

    fn moves_key_groups(&self) -> bool {
        true
    }

    fn give_key_groups(
        &mut self,
        ranges: &[anduin_state::KeyGroupRange],
    ) -> Result<KeyGroupsGiven, OperatorError> {
        let name = &self.setup.name;
        let pieces = self
            .checkpointed
            .give(&mut self.store, ranges)
            .map_err(|e| checkpoint_error(name, e))?;
        let meta = Meta {
            watermark: self.watermark,
            late: self.late,
        };
        KeyGroupsGiven::new(name, pieces, &meta)
    }

    fn take_key_groups(
        &mut self,
        pieces: Vec<(anduin_state::KeyGroupRange, Vec<u8>)>,
        inline: Vec<Option<serde_json::Value>>,
    ) -> Result<(), OperatorError> {
        let name = &self.setup.name;
        let own = Meta {
            watermark: self.watermark,
            late: self.late,
        };
        let meta = combine_moved(name, own, inline)?;
        self.watermark = meta.watermark;
        self.late = meta.late;
        self.checkpointed
            .take(&mut self.store, &pieces)
            .map_err(|e| checkpoint_error(name, e))
    }

    fn restore(&mut self, mut state: RestoreIn) -> Result<(), OperatorError> {
        let name = &self.setup.name;
        let meta: Meta = state.inline_as(name)?;
        self.watermark = meta.watermark;
        self.late = meta.late;
        let Some((full, changes)) = state.files.split_first_mut() else {
            return Err(err(name, "the checkpoint has no state file for this join"));
        };
        let mut changes: Vec<&mut dyn std::io::Read> = changes
            .iter_mut()
            .map(|f| f as &mut dyn std::io::Read)
            .collect();
        self.store = self
            .checkpointed
            .restore(full, &mut changes)
            .map_err(|e| checkpoint_error(name, e))?;
        Ok(())
    }

    /// Late rows, and the bytes the buffered rows hold in memory (`state_bytes`, while there
    /// are any: their kept columns, keys and indexes; `peak_state_bytes`, the most after a
    /// batch in this run).
    fn metrics(&self) -> Vec<(&'static str, u64)> {
        let mut metrics = vec![("late_rows", self.late)];
        if self.peak_bytes > 0 {
            metrics.push(("peak_state_bytes", self.peak_bytes as u64));
        }
        let bytes = self.store.size_bytes();
        if bytes > 0 {
            metrics.push(("state_bytes", bytes as u64));
        }
        metrics
    }

    fn is_stateless(&self) -> bool {
        false
    }
}
