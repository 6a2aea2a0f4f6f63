//! The running join: rows buffered per side and key, pairs emitted as soon as both rows are
//! there (interval join) or when the watermark closes their window (window join), buffered
//! rows dropped when the watermark says no partner can come.

use std::collections::BTreeMap;
use std::sync::Arc;

use anduin_types::{SnapshotKind, Watermark};
use arrow::array::{Array, ArrayRef, BooleanArray, Int64Array, TimestampMillisecondArray};
use arrow::compute::interleave;
use arrow::record_batch::RecordBatch;
use arrow::row::{RowConverter, SortField};
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;

use super::output::{joined, Pair};
use super::store::{Entry, Store};
use super::{JoinKind, JoinSetup};
use crate::{Collector, Operator, OperatorError, RestoreIn, SnapshotOut};

/// A running join.
pub(crate) struct Join {
    setup: JoinSetup,
    left: Store,
    right: Store,
    keys: RowConverter,
    watermark: i64,
    late: u64,
}

fn err(operator: &str, e: impl std::fmt::Display) -> OperatorError {
    OperatorError::Execution {
        operator: operator.to_string(),
        message: e.to_string(),
    }
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

impl Join {
    pub(crate) fn new(setup: JoinSetup) -> Result<Self, OperatorError> {
        let fields = setup
            .left_keys
            .iter()
            .map(|i| SortField::new(setup.left_schema.field(*i).data_type().clone()))
            .collect();
        let keys = RowConverter::new(fields).map_err(|e| err(&setup.name, e))?;
        Ok(Self {
            setup,
            left: Store::default(),
            right: Store::default(),
            keys,
            watermark: i64::MIN,
            late: 0,
        })
    }

    /// Buffers the rows of `batch` from `side` (0 left, 1 right) and returns the pairs they
    /// complete (interval join).
    fn add(
        &mut self,
        side: usize,
        batch: RecordBatch,
        matched: Option<&BooleanArray>,
    ) -> Result<Vec<Pair>, OperatorError> {
        let name = self.setup.name.clone();
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
            .convert_columns(&columns)
            .map_err(|e| err(&name, e))?;
        let ts = times(&batch, time_col);
        let restoring = matched.is_some();
        let (own, other) = if side == 0 {
            (&mut self.left, &mut self.right)
        } else {
            (&mut self.right, &mut self.left)
        };
        let chunk = own.add_chunk(batch);
        let mut pairs = Vec::new();
        for (i, t) in ts.iter().enumerate() {
            let Some(t) = *t else {
                self.late += 1;
                continue;
            };
            if !restoring && t < self.watermark {
                self.late += 1;
                continue;
            }
            let key = rows.row(i);
            let mut entry = Entry {
                time: t,
                at: (chunk, i),
                matched: matched.is_some_and(|m| m.value(i)),
            };
            if let (JoinKind::Interval { lower, upper }, false) = (self.setup.kind, restoring) {
                if let Some(list) = other.by_key.get_mut(key.as_ref()) {
                    for o in list.iter_mut() {
                        let (l, r) = if side == 0 { (t, o.time) } else { (o.time, t) };
                        let d = r.saturating_sub(l);
                        if d >= lower && d <= upper {
                            if side == 0 {
                                pairs.push((entry.at, Some(o.at)));
                                entry.matched = true;
                            } else {
                                pairs.push((o.at, Some(entry.at)));
                                o.matched = true;
                            }
                        }
                    }
                }
            }
            own.insert(key.as_ref(), entry);
        }
        Ok(pairs)
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
            &self.left,
            &self.right,
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
                // No right row still to come (time >= wm) matches a left row with time + upper < wm.
                let gone_left = self.left.prune(|e| e.time.saturating_add(upper) < wm);
                let gone_right = self.right.prune(|e| e.time.saturating_sub(lower) < wm);
                if self.setup.left_outer {
                    let pairs: Vec<Pair> = gone_left
                        .iter()
                        .filter(|(_, e)| !e.matched)
                        .map(|(_, e)| (e.at, None))
                        .collect();
                    self.emit(&pairs, None, out)?;
                }
                self.left.release(&gone_left);
                self.right.release(&gone_right);
            }
            JoinKind::Window { size } => {
                let end = |t: i64| t.div_euclid(size) * size + size;
                let gone_left = self.left.prune(|e| end(e.time) <= wm);
                let gone_right = self.right.prune(|e| end(e.time) <= wm);
                // Group by window and key.
                type Sides = (Vec<Entry>, Vec<Entry>);
                let mut groups: BTreeMap<(i64, Box<[u8]>), Sides> = BTreeMap::new();
                for (k, e) in &gone_left {
                    groups
                        .entry((e.time.div_euclid(size), k.clone()))
                        .or_default()
                        .0
                        .push(*e);
                }
                for (k, e) in &gone_right {
                    groups
                        .entry((e.time.div_euclid(size), k.clone()))
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
                                pairs.push((l.at, None));
                                starts.push(w * size);
                                ends.push(w * size + size);
                            }
                            continue;
                        }
                        for r in rs {
                            pairs.push((l.at, Some(r.at)));
                            starts.push(w * size);
                            ends.push(w * size + size);
                        }
                    }
                }
                self.emit(&pairs, Some((starts, ends)), out)?;
                self.left.release(&gone_left);
                self.right.release(&gone_right);
            }
        }
        Ok(())
    }

    /// The buffered rows of one side as one batch, with their `matched` flags.
    fn live(
        &self,
        store: &Store,
        schema: &arrow::datatypes::SchemaRef,
    ) -> Result<RecordBatch, OperatorError> {
        let name = &self.setup.name;
        let entries = store.entries();
        let mut slot = vec![usize::MAX; store.chunks.len()];
        let mut batches: Vec<&RecordBatch> = Vec::new();
        for (i, c) in store.chunks.iter().enumerate() {
            if let Some(b) = c {
                slot[i] = batches.len();
                batches.push(b);
            }
        }
        let indices: Vec<(usize, usize)> = entries
            .iter()
            .map(|(_, e)| (slot[e.at.0], e.at.1))
            .collect();
        let mut columns = Vec::new();
        for c in 0..schema.fields().len() {
            let arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
            columns.push(if arrays.is_empty() {
                arrow::array::new_empty_array(schema.field(c).data_type())
            } else {
                interleave(&arrays, &indices).map_err(|e| err(name, e))?
            });
        }
        columns.push(Arc::new(BooleanArray::from(
            entries.iter().map(|(_, e)| e.matched).collect::<Vec<_>>(),
        )));
        let mut fields: Vec<arrow::datatypes::FieldRef> = schema.fields().iter().cloned().collect();
        fields.push(Arc::new(arrow::datatypes::Field::new(
            "__matched",
            arrow::datatypes::DataType::Boolean,
            false,
        )));
        RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(fields)), columns)
            .map_err(|e| err(name, e))
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
        let pairs = self.add(input, batch, None)?;
        self.emit(&pairs, None, out)
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

    fn on_end_of_input(&mut self, _out: &mut dyn Collector) -> Result<(), OperatorError> {
        if self.late > 0 {
            tracing::info!(operator = %self.setup.name, late_rows = self.late, "late rows dropped");
        }
        Ok(())
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        let name = self.setup.name.clone();
        let left = self.live(&self.left, &self.setup.left_schema)?;
        let right = self.live(&self.right, &self.setup.right_schema)?;
        out.inline(serde_json::json!({ "watermark": self.watermark, "late": self.late }));
        let stream = out.stream(SnapshotKind::Full)?;
        for batch in [left, right] {
            let mut w =
                StreamWriter::try_new(&mut *stream, &batch.schema()).map_err(|e| err(&name, e))?;
            w.write(&batch).map_err(|e| err(&name, e))?;
            w.finish().map_err(|e| err(&name, e))?;
        }
        Ok(())
    }

    fn restore(&mut self, mut state: RestoreIn) -> Result<(), OperatorError> {
        let name = self.setup.name.clone();
        let inline = state.inline.take().unwrap_or_default();
        self.watermark = inline["watermark"].as_i64().unwrap_or(i64::MIN);
        self.late = inline["late"].as_u64().unwrap_or(0);
        let Some(file) = state.files.last_mut() else {
            return Err(err(&name, "the checkpoint has no state file for this join"));
        };
        for side in 0..2 {
            let reader = StreamReader::try_new(&mut *file, None)
                .map_err(|e| err(&name, format!("unreadable join state: {e}")))?;
            for batch in reader {
                let batch = batch.map_err(|e| err(&name, format!("unreadable join state: {e}")))?;
                let n = batch.num_columns();
                let matched = batch
                    .column(n - 1)
                    .as_any()
                    .downcast_ref::<BooleanArray>()
                    .cloned()
                    .ok_or_else(|| err(&name, "unreadable join state: no matched flags"))?;
                let schema = if side == 0 {
                    &self.setup.left_schema
                } else {
                    &self.setup.right_schema
                };
                let rows =
                    RecordBatch::try_new(Arc::clone(schema), batch.columns()[..n - 1].to_vec())
                        .map_err(|e| err(&name, e))?;
                if rows.num_rows() > 0 {
                    self.add(side, rows, Some(&matched))?;
                }
            }
        }
        Ok(())
    }

    fn is_stateless(&self) -> bool {
        false
    }
}
