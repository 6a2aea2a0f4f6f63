//! The running lookup join: the side table's rows gathered by key until the side ends (with
//! the stream rows that came before then, waiting in arrival order), then each stream batch
//! joined with them and forgotten. A checkpoint writes one entry per key changed since the
//! previous one (`entry.rs`), and the side's end inline.
//!
//! The side ends when its input is exhausted ([`Operator::on_input_exhausted`]: its sources
//! were read to their end), never at idleness: a side read with `idle_timeout` that pauses
//! looks idle, and its event time +∞, to the task, but more rows may come.

use std::collections::HashSet;
use std::sync::Arc;

use ahash::RandomState;
use anduin_operator_api::keys::KeyEncoder;
use anduin_operator_api::rescale::{Combine, RescaleError};
use anduin_operator_api::{
    BuildContext, Collector, Operator, OperatorError, RestoreIn, SnapshotOut,
};
use anduin_state::{KeyedTable, TableEntry};
use anduin_types::{SnapshotKind, Watermark};
use arrow::array::{Array, ArrayRef, UInt32Array};
use arrow::record_batch::RecordBatch;
use arrow::row::{RowConverter, SortField};
use hashbrown::HashMap;
use serde::{Deserialize, Serialize};

use super::entry::{self, KeyRows};
use super::LookupSetup;

/// The sub-key of a key's entry.
const ROWS: &[u8] = b"l";

/// How many waiting stream rows are joined in one output batch when the side ends.
const RELEASE_BATCH: usize = 4096;

/// What a lookup join keeps in a checkpoint's manifest.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    /// Whether the side table had ended.
    side_ended: bool,
    /// The place in arrival order of the next stream row to wait.
    next_place: u64,
}

impl anduin_operator_api::rescale::RescaleMeta for Meta {
    fn combine(parts: Vec<Self>, _how: Combine) -> Result<Self, RescaleError> {
        Ok(Meta {
            // Every instance reads the whole side input: its end is seen by all or none.
            side_ended: parts.iter().all(|p| p.side_ended),
            next_place: parts.iter().map(|p| p.next_place).max().unwrap_or(0),
        })
    }
}

/// A running lookup join.
pub(crate) struct LookupJoin {
    setup: LookupSetup,
    /// The keys' bytes, as the exchange routes by (both inputs' key columns have one type).
    keys: KeyEncoder,
    /// Each input's columns to row-format bytes and back (0 the stream, 1 the side).
    values: [RowConverter; 2],
    /// The rows held, by key.
    held: HashMap<Box<[u8]>, KeyRows, RandomState>,
    /// Keys changed since the last checkpoint.
    dirty: HashSet<Box<[u8]>, RandomState>,
    /// The checkpointed copy of the rows.
    table: KeyedTable,
    side_ended: bool,
    /// The stream input is exhausted (not kept: a restored run hears it again).
    stream_exhausted: bool,
    /// Event time reached +∞ while the side had not ended (the stream finished while the side
    /// was idle): forwarded after the waiting rows, when the side ends.
    held_end: bool,
    next_place: u64,
    side_rows: u64,
    waiting: u64,
    peak_waiting: u64,
    stream_rows: u64,
}

fn internal(name: &str, e: impl std::fmt::Display) -> OperatorError {
    OperatorError::internal(name, e.to_string())
}

impl LookupJoin {
    pub(crate) fn new(setup: LookupSetup, ctx: &BuildContext) -> Result<Self, OperatorError> {
        let dir = ctx.backend_dir(&setup.name);
        let table = KeyedTable::new(&setup.name, setup.backend, dir);
        let fields = setup.schema.fields();
        let keys = KeyEncoder::new(setup.keys[0].iter().map(|i| fields[*i].data_type().clone()))
            .map_err(|e| internal(&setup.name, e))?;
        let converter = |range: std::ops::Range<usize>| {
            RowConverter::new(
                fields[range]
                    .iter()
                    .map(|f| SortField::new(f.data_type().clone()))
                    .collect(),
            )
            .map_err(|e| internal(&setup.name, e))
        };
        let values = [
            converter(0..setup.stream_width)?,
            converter(setup.stream_width..fields.len())?,
        ];
        let hasher = || RandomState::with_seeds(1, 2, 3, 4);
        Ok(Self {
            setup,
            keys,
            values,
            held: HashMap::with_hasher(hasher()),
            dirty: HashSet::with_hasher(hasher()),
            table,
            side_ended: false,
            stream_exhausted: false,
            held_end: false,
            next_place: 0,
            side_rows: 0,
            waiting: 0,
            peak_waiting: 0,
            stream_rows: 0,
        })
    }

    /// The keys of `batch` of input `input`, and which rows have a null key column (equal
    /// to no key).
    fn keys_of(
        &self,
        input: usize,
        batch: &RecordBatch,
    ) -> Result<(arrow::row::Rows, Vec<bool>), OperatorError> {
        let columns: Vec<ArrayRef> = self.setup.keys[input]
            .iter()
            .map(|i| Arc::clone(batch.column(*i)))
            .collect();
        let nulls = (0..batch.num_rows())
            .map(|r| columns.iter().any(|c| c.is_null(r)))
            .collect();
        let keys = self
            .keys
            .encode(&columns)
            .map_err(|e| internal(&self.setup.name, e))?;
        Ok((keys, nulls))
    }

    /// Keeps the side's rows of `batch` under their keys.
    fn take_side(&mut self, batch: &RecordBatch) -> Result<(), OperatorError> {
        if self.side_ended {
            // The side ends only when its input is exhausted, after which no row comes.
            return Err(internal(
                &self.setup.name,
                "a row of the side table came after its input said it was exhausted (this is a bug)",
            ));
        }
        let (keys, nulls) = self.keys_of(1, batch)?;
        let rows = self.values[1]
            .convert_columns(batch.columns())
            .map_err(|e| internal(&self.setup.name, e))?;
        for (i, null) in nulls.into_iter().enumerate() {
            if null {
                continue;
            }
            let key = keys.row(i);
            let key: &[u8] = key.as_ref();
            self.held
                .entry_ref(key)
                .or_default()
                .side
                .push(rows.row(i).as_ref().into());
            self.side_rows += 1;
            if !self.dirty.contains(key) {
                self.dirty.insert(key.into());
            }
        }
        Ok(())
    }

    /// Keeps the stream rows of `batch` until the side ends, in arrival order.
    fn wait(&mut self, batch: &RecordBatch) -> Result<(), OperatorError> {
        let (keys, _) = self.keys_of(0, batch)?;
        let rows = self.values[0]
            .convert_columns(batch.columns())
            .map_err(|e| internal(&self.setup.name, e))?;
        for i in 0..batch.num_rows() {
            let key = keys.row(i);
            let key: &[u8] = key.as_ref();
            let place = self.next_place;
            self.next_place += 1;
            self.held
                .entry_ref(key)
                .or_default()
                .waiting
                .push((place, rows.row(i).as_ref().into()));
            if !self.dirty.contains(key) {
                self.dirty.insert(key.into());
            }
        }
        self.waiting += batch.num_rows() as u64;
        self.peak_waiting = self.peak_waiting.max(self.waiting);
        Ok(())
    }

    /// Joins a stream batch with the side's rows of its keys.
    fn join(&mut self, batch: &RecordBatch, out: &mut dyn Collector) -> Result<(), OperatorError> {
        let name = &self.setup.name;
        let (keys, nulls) = self.keys_of(0, batch)?;
        let mut stream_at: Vec<u32> = Vec::new();
        let mut side_at: Vec<Option<u32>> = Vec::new();
        let parser = self.values[1].parser();
        let mut side = Vec::new();
        for (i, null) in nulls.into_iter().enumerate() {
            let rows = if null {
                None
            } else {
                self.held.get(keys.row(i).as_ref()).map(|k| &k.side)
            };
            let rows = rows.filter(|r| !r.is_empty());
            match rows {
                Some(rows) => {
                    for r in rows {
                        stream_at.push(i as u32);
                        side_at.push(Some(side.len() as u32));
                        side.push(parser.parse(r));
                    }
                }
                None if self.setup.left => {
                    stream_at.push(i as u32);
                    side_at.push(None);
                }
                None => {}
            }
        }
        self.stream_rows += batch.num_rows() as u64;
        if stream_at.is_empty() {
            return Ok(());
        }
        let side_columns = self.values[1]
            .convert_rows(side.iter().copied())
            .map_err(|e| internal(name, e))?;
        let stream_at = UInt32Array::from(stream_at);
        let side_at = UInt32Array::from(side_at);
        let mut columns = Vec::with_capacity(self.setup.schema.fields().len());
        for c in batch.columns() {
            columns.push(
                arrow::compute::take(c.as_ref(), &stream_at, None)
                    .map_err(|e| internal(name, e))?,
            );
        }
        for c in &side_columns {
            columns.push(
                arrow::compute::take(c.as_ref(), &side_at, None).map_err(|e| internal(name, e))?,
            );
        }
        let batch = RecordBatch::try_new(Arc::clone(&self.setup.schema), columns)
            .map_err(|e| internal(name, e))?;
        out.collect(0, batch)
    }

    /// The side has ended: the waiting stream rows are joined, in arrival order, and forgotten;
    /// then event time goes to +∞ if it was held there.
    fn release(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
        if self.side_ended {
            return Ok(());
        }
        self.side_ended = true;
        let mut waiting: Vec<(u64, Box<[u8]>)> = Vec::new();
        for (key, rows) in self.held.iter_mut() {
            if rows.waiting.is_empty() {
                continue;
            }
            waiting.append(&mut rows.waiting);
            if !self.dirty.contains(key) {
                self.dirty.insert(key.clone());
            }
        }
        self.held.retain(|_, rows| !rows.is_empty());
        self.waiting = 0;
        waiting.sort_unstable_by_key(|(place, _)| *place);
        tracing::debug!(operator = %self.setup.name, side_rows = self.side_rows, waiting = waiting.len(), "side table ended: joining the stream rows that waited");
        for chunk in waiting.chunks(RELEASE_BATCH) {
            let parser = self.values[0].parser();
            let columns = self.values[0]
                .convert_rows(chunk.iter().map(|(_, r)| parser.parse(r)))
                .map_err(|e| internal(&self.setup.name, e))?;
            let schema = Arc::new(arrow::datatypes::Schema::new(
                self.setup.schema.fields()[..self.setup.stream_width].to_vec(),
            ));
            let batch =
                RecordBatch::try_new(schema, columns).map_err(|e| internal(&self.setup.name, e))?;
            self.join(&batch, out)?;
        }
        if std::mem::take(&mut self.held_end) {
            out.watermark(Watermark::MAX)?;
        }
        Ok(())
    }

    /// Writes the keys changed since the last checkpoint to the table (deleting those gone).
    fn flush(&mut self) -> Result<(), OperatorError> {
        for key in self.dirty.drain() {
            match self.held.get(&key) {
                Some(rows) => self.table.put(&key, ROWS, &entry::encode(rows))?,
                None => self.table.delete(&key, ROWS)?,
            }
        }
        Ok(())
    }
}

impl Operator for LookupJoin {
    fn name(&self) -> &str {
        &self.setup.name
    }

    fn process_batch(
        &mut self,
        input: usize,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        match (input, self.side_ended) {
            (0, true) => self.join(&batch, out),
            (0, false) => self.wait(&batch),
            _ => self.take_side(&batch),
        }
    }

    /// The side ends here, and only here: not when its event time reaches +∞, which it also
    /// does while the side is idle.
    fn on_input_exhausted(
        &mut self,
        input: usize,
        out: &mut dyn Collector,
    ) -> Result<bool, OperatorError> {
        if input == 0 {
            self.stream_exhausted = true;
        } else {
            self.release(out)?;
        }
        // Once both are, every row has been joined.
        Ok(self.side_ended && self.stream_exhausted)
    }

    fn handle_watermark(
        &mut self,
        watermark: Watermark,
        _out: &mut dyn Collector,
    ) -> Result<Option<Watermark>, OperatorError> {
        // Stream rows wait for the side's end: its rows may be older than the watermark. The
        // end of event time waits for the side's end too (the stream can finish while the
        // side is idle), so that the rows released then are not late.
        if watermark != Watermark::MAX {
            return Ok(None);
        }
        if self.side_ended {
            Ok(Some(watermark))
        } else {
            self.held_end = true;
            Ok(None)
        }
    }

    fn on_end_of_input(&mut self, _out: &mut dyn Collector) -> Result<(), OperatorError> {
        // Every input ended without the side's being exhausted: the run was stopped (its
        // last checkpoint keeps the waiting rows, joined when a resumed run reads the side
        // to its end). Joining them now would join them with part of the side table.
        if !self.side_ended && self.waiting > 0 {
            tracing::info!(operator = %self.setup.name, waiting = self.waiting, side_rows = self.side_rows, "input ended before the side table was read to its end (a stop): the waiting stream rows are not joined");
        }
        Ok(())
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        self.flush()?;
        let kind = if out.full_due() {
            SnapshotKind::Full
        } else {
            SnapshotKind::Changes
        };
        let meta = Meta {
            side_ended: self.side_ended,
            next_place: self.next_place,
        };
        out.inline_typed(&self.setup.name, &meta)?;
        let stream = out.stream(kind)?;
        let _stats = self.table.snapshot(kind, stream)?;
        Ok(())
    }

    fn rescale_inline(
        &self,
        parts: &[Option<serde_json::Value>],
        how: Combine,
    ) -> Result<Option<serde_json::Value>, RescaleError> {
        anduin_operator_api::rescale::rescale_inline_as::<Meta>(parts, how)
    }

    fn restore(&mut self, mut state: RestoreIn) -> Result<(), OperatorError> {
        let name = self.setup.name.clone();
        let meta: Meta = state.inline_as(&name)?;
        let Some((full, changes)) = state.files.split_first_mut() else {
            return Err(OperatorError::Execution {
                operator: name,
                message: "the checkpoint has no state file for this lookup join".into(),
            });
        };
        let mut changes: Vec<&mut dyn std::io::Read> = changes
            .iter_mut()
            .map(|f| f as &mut dyn std::io::Read)
            .collect();
        self.held.clear();
        self.dirty.clear();
        let held = &mut self.held;
        self.table.restore(full, &mut changes, |e: TableEntry<'_>| {
            let rows = (e.sub_key == ROWS)
                .then(|| entry::decode(e.value))
                .flatten()
                .ok_or_else(|| OperatorError::Execution {
                    operator: name.clone(),
                    message: format!("the checkpoint's lookup join state holds an entry in {} that is not a key's rows of this join: the state is corrupt, or the query changed its inputs; restore from an earlier checkpoint", e.kg),
                })?;
            held.insert(e.group_key.into(), rows);
            Ok::<(), OperatorError>(())
        })?;
        self.side_ended = meta.side_ended;
        self.next_place = meta.next_place;
        self.side_rows = self.held.values().map(|k| k.side.len() as u64).sum();
        self.waiting = self.held.values().map(|k| k.waiting.len() as u64).sum();
        Ok(())
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        let mut metrics = vec![
            ("side_keys", self.held.len() as u64),
            ("side_rows", self.side_rows),
            ("stream_rows_joined", self.stream_rows),
            ("peak_stream_rows_waiting", self.peak_waiting),
        ];
        metrics.extend(self.table.size_bytes().map(|b| ("state_backend_bytes", b)));
        metrics
    }

    fn is_stateless(&self) -> bool {
        false
    }
}
