//! The OVER window over an updating stream: its result is the OVER window of the table the
//! input's changes describe, kept up to date. Each batch's changes are applied to their
//! partitions' rows (`changes.rs`); for each partition changed, the results of the rows the
//! changes can alter are computed before and after, and what differs is emitted: the old
//! results taken back (`-U`, or `-D` for a row gone), the new ones added (`+U`, or `+I` for a
//! new row). A row whose result did not change emits nothing. The watermark does not hold
//! rows back (a later change corrects a result), so no row is late.
//!
//! A checkpoint writes one table entry per partition changed since the previous one (its
//! key's bytes as group key, `u` as sub-key, `entry.rs` as value), or deletes the entry of a
//! partition that holds no row any more; the manifest keeps how many retractions found no row
//! to take out.

use std::collections::HashSet;
use std::sync::Arc;

use ahash::RandomState;
use anduin_operator_api::null_time::reject_null_times;
use anduin_operator_api::rescale::Combine;
use anduin_operator_api::{
    BuildContext, Collector, KeyGroupsGiven, Operator, OperatorError, RestoreIn, RowOrigins,
    SnapshotOut,
};
use anduin_state::{KeyGroupRange, KeyedTable, TableEntry};
use anduin_types::{change_column, ChangeKind};
use arrow::array::{Array, ArrayRef, Int8Array};
use arrow::datatypes::{Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use arrow::row::{RowConverter, SortField};
use hashbrown::HashMap;

use crate::group::acc::Group;
use crate::retracting;
use crate::ttl::{Incoming, StateTtl};

use super::changes::{self, RowKey, Table};
use super::entry;
use super::frame::Step;
use super::running::{emitted, evaluate, internal};
use super::OverSetup;

/// The sub-key of a partition's entry.
const ROWS: &[u8] = b"u";

/// A running OVER window over an updating stream.
pub(crate) struct UpdatingOver {
    setup: OverSetup,
    /// The output: the results' columns, then the change kind.
    output: SchemaRef,
    /// A row's values (the input's columns but the change kind) to row-format bytes and back.
    values: RowConverter,
    /// A row's aggregate arguments to row-format bytes and back.
    args: RowConverter,
    /// A result row (values and aggregates), to compare results before and after.
    results: RowConverter,
    partitions: HashMap<Box<[u8]>, Table, RandomState>,
    dirty: HashSet<Box<[u8]>, RandomState>,
    table: KeyedTable,
    /// When each partition was last written, if its state expires (`state_ttl`).
    ttl: StateTtl,
    /// Retractions of rows no partition held.
    unmatched_retractions: u64,
    errors: anduin_operator_api::RowErrors,
    dead_letter: Arc<anduin_operator_api::DeadLetter>,
}

/// The changes of one partition in a batch, in order: (row, arguments, adds).
type Changes = Vec<(RowKey, Box<[u8]>, bool)>;

/// The changes of a batch, by partition (its key's bytes) in the order the partitions come.
type ByPartition = Vec<(Box<[u8]>, Changes)>;

impl UpdatingOver {
    pub(crate) fn new(setup: OverSetup, ctx: &BuildContext) -> Result<Self, OperatorError> {
        let dir = ctx.backend_dir(&setup.name);
        let table = KeyedTable::new(&setup.name, setup.backend, dir);
        let converter = |fields: &[Arc<arrow::datatypes::Field>]| {
            RowConverter::new(
                fields
                    .iter()
                    .map(|f| SortField::new(f.data_type().clone()))
                    .collect(),
            )
            .map_err(|e| internal(&setup.name, e))
        };
        let inputs = setup.schema.fields().len() - setup.aggs.len();
        let values = converter(&setup.schema.fields()[..inputs])?;
        let results = converter(setup.schema.fields())?;
        let args = RowConverter::new(
            setup
                .arg_types
                .iter()
                .map(|t| SortField::new(t.clone()))
                .collect(),
        )
        .map_err(|e| internal(&setup.name, e))?;
        let mut fields: Vec<_> = setup.schema.fields().iter().cloned().collect();
        fields.push(Arc::new(change_column()));
        let output = Arc::new(Schema::new(fields));
        let errors = anduin_operator_api::RowErrors::new(
            &setup.name,
            setup.sites.clone(),
            setup.on_error,
            ctx,
        );
        Ok(Self {
            errors,
            dead_letter: Arc::clone(&ctx.dead_letter),
            ttl: StateTtl::new(setup.ttl_ms, 1, Arc::clone(&ctx.clock)),
            setup,
            output,
            values,
            args,
            results,
            partitions: HashMap::with_hasher(RandomState::with_seeds(1, 2, 3, 4)),
            dirty: HashSet::with_hasher(RandomState::with_seeds(1, 2, 3, 4)),
            table,
            unmatched_retractions: 0,
        })
    }

    /// The changes of `batch`, by partition in the order the partitions first come.
    fn changes(
        &mut self,
        batch: RecordBatch,
        origins: Option<RowOrigins>,
    ) -> Result<ByPartition, OperatorError> {
        let name = &self.setup.name;
        let batch = reject_null_times(batch, self.setup.time, name, &self.dead_letter)?;
        let origins = origins.filter(|o| o.len() == batch.num_rows());
        let (batch, args) = evaluate(&self.setup, &self.errors, batch, origins.as_ref())?;
        let n = batch.num_rows();
        if n == 0 {
            return Ok(Vec::new());
        }
        let change_in = batch.num_columns() - 1;
        let adds = retracting::adds(name, &batch, Some(change_in))?;
        let keys: Vec<ArrayRef> = (self.setup.key_columns.iter())
            .map(|i| Arc::clone(batch.column(*i)))
            .collect();
        let keys = self.setup.codec.rows(&keys, n, name)?;
        let values = self
            .values
            .convert_columns(batch.columns().get(..change_in).unwrap_or_default())
            .map_err(|e| internal(name, e))?;
        let args = self
            .args
            .convert_columns(&args)
            .map_err(|e| internal(name, e))?;
        let times = anduin_operator_api::event_time::event_times(&batch, self.setup.time);
        let mut order: ByPartition = Vec::new();
        let mut index: HashMap<Box<[u8]>, usize, RandomState> =
            HashMap::with_hasher(RandomState::with_seeds(1, 2, 3, 4));
        for (i, (t, add)) in times.into_iter().zip(adds).enumerate() {
            let Some(t) = t else { continue };
            let key = self.setup.codec.stored(keys.row(i));
            let at = *index.entry_ref(key).or_insert_with(|| {
                order.push((key.into(), Vec::new()));
                order.len() - 1
            });
            if let Some((_, c)) = order.get_mut(at) {
                c.push((
                    (t, values.row(i).as_ref().into()),
                    args.row(i).as_ref().into(),
                    add,
                ));
            }
        }
        Ok(order)
    }

    /// The results, as rows of the output but the change kind, that `steps` emit in runs
    /// `spans` (each from empty aggregates).
    fn results(
        &self,
        steps: &[Step],
        spans: Vec<std::ops::Range<usize>>,
    ) -> Result<RecordBatch, OperatorError> {
        let mut groups: Vec<Group> = spans
            .iter()
            .map(|_| Group::new(&self.setup.plans))
            .collect();
        let columns = emitted(
            &self.setup,
            &self.values,
            &self.args,
            steps,
            groups.iter_mut().zip(spans),
        )?;
        RecordBatch::try_new(Arc::clone(&self.setup.schema), columns)
            .map_err(|e| internal(&self.setup.name, e))
    }

    /// `before` taken back and `after` added, but the rows in both: `-U`/`+U` pairs, then
    /// `-D` or `+I` for the rest.
    fn difference(
        &self,
        before: &RecordBatch,
        after: &RecordBatch,
    ) -> Result<Option<RecordBatch>, OperatorError> {
        let name = &self.setup.name;
        let rows = |b: &RecordBatch| {
            self.results
                .convert_columns(b.columns())
                .map_err(|e| internal(name, e))
        };
        let (old, new) = (rows(before)?, rows(after)?);
        let mut left: HashMap<&[u8], Vec<usize>, RandomState> =
            HashMap::with_hasher(RandomState::with_seeds(1, 2, 3, 4));
        for i in 0..old.num_rows() {
            left.entry(old.row(i).data()).or_default().push(i);
        }
        let mut added = Vec::new();
        for j in 0..new.num_rows() {
            match left.get_mut(new.row(j).data()).and_then(Vec::pop) {
                Some(_) => {}
                None => added.push(j),
            }
        }
        let mut taken: Vec<usize> = left.into_values().flatten().collect();
        taken.sort_unstable();
        if taken.is_empty() && added.is_empty() {
            return Ok(None);
        }
        // (batch, row, kind): 0 before, 1 after.
        let mut picks: Vec<(usize, usize, ChangeKind)> = Vec::new();
        let pairs = taken.len().min(added.len());
        for (t, a) in taken.iter().zip(&added) {
            picks.push((0, *t, ChangeKind::UpdateBefore));
            picks.push((1, *a, ChangeKind::UpdateAfter));
        }
        picks.extend(taken[pairs..].iter().map(|t| (0, *t, ChangeKind::Delete)));
        picks.extend(added[pairs..].iter().map(|a| (1, *a, ChangeKind::Insert)));
        let index: Vec<(usize, usize)> = picks.iter().map(|(b, r, _)| (*b, *r)).collect();
        let mut columns = Vec::with_capacity(self.output.fields().len());
        for c in 0..before.num_columns() {
            let sources: [&dyn Array; 2] = [before.column(c).as_ref(), after.column(c).as_ref()];
            columns
                .push(arrow::compute::interleave(&sources, &index).map_err(|e| internal(name, e))?);
        }
        let kinds: Int8Array = picks.iter().map(|(_, _, k)| Some(k.code())).collect();
        columns.push(Arc::new(kinds));
        RecordBatch::try_new(Arc::clone(&self.output), columns)
            .map(Some)
            .map_err(|e| internal(name, e))
    }

    fn flush(&mut self) -> Result<(), OperatorError> {
        for key in self.dirty.drain() {
            let present = match self.partitions.get(&key) {
                Some(p) => {
                    self.table.put(&key, ROWS, &entry::encode_table(p))?;
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

    /// Forgets the partitions not written for the time-to-live (as of now): a partition seen again starts empty, its
    /// results emitted before not retracted.
    fn expire(&mut self) {
        let (partitions, dirty) = (&mut self.partitions, &mut self.dirty);
        self.ttl.tick();
        self.ttl.sweep(|key, _| {
            partitions.remove(key);
            dirty.insert(key.into());
        });
    }
}

/// The partition a checkpointed entry holds.
fn decode(setup: &OverSetup, e: &TableEntry<'_>) -> Result<Table, OperatorError> {
    (e.sub_key == ROWS)
        .then(|| entry::decode_table(e.value))
        .flatten()
        .ok_or_else(|| OperatorError::Execution {
            operator: setup.name.clone(),
            message: format!(
                "the checkpoint's OVER window state holds an entry in {} that is not a partition of this OVER window over an updating stream: the state is corrupt, or the query changed its input or aggregates; restore from an earlier checkpoint",
                e.kg
            ),
        })
}

impl Operator for UpdatingOver {
    fn name(&self) -> &str {
        &self.setup.name
    }

    fn process_batch(
        &mut self,
        input: usize,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        self.process_batch_from(input, batch, None, out)
    }

    fn wants_origins(&self) -> bool {
        true
    }

    fn process_batch_from(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        origins: Option<RowOrigins>,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.expire();
        let frame = self.setup.frame;
        let (mut before, mut after) = (Vec::new(), Vec::new());
        let (mut spans_before, mut spans_after) = (Vec::new(), Vec::new());
        for (key, changes) in self.changes(batch, origins)? {
            let (Some(first), Some(last)) = (
                changes.iter().map(|c| &c.0).min().cloned(),
                changes.iter().map(|c| &c.0).max().cloned(),
            ) else {
                continue;
            };
            let table = self.partitions.entry_ref(&key[..]).or_default();
            let region = changes::region(table, frame, &first, &last);
            let from = before.len();
            changes::steps(table, frame, &region, &mut before);
            spans_before.push(from..before.len());
            for (row, args, add) in changes {
                if !changes::apply(table, row, args, add) {
                    self.unmatched_retractions += 1;
                }
            }
            let from = after.len();
            changes::steps(table, frame, &region, &mut after);
            spans_after.push(from..after.len());
            if table.is_empty() {
                self.partitions.remove(&key[..]);
            }
            self.ttl.wrote(&key, 0);
            self.dirty.insert(key);
        }
        let before = self.results(&before, spans_before)?;
        let after = self.results(&after, spans_after)?;
        match self.difference(&before, &after)? {
            Some(batch) => out.collect(0, batch),
            None => Ok(()),
        }
    }

    /// Each batch's changes go out with it (nothing waits for the watermark): once the input
    /// is exhausted, so is the output.
    fn on_input_exhausted(
        &mut self,
        _input: usize,
        _out: &mut dyn Collector,
    ) -> Result<bool, OperatorError> {
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
        let setup = &self.setup;
        let partitions = &mut self.partitions;
        partitions.clear();
        self.dirty.clear();
        self.unmatched_retractions = retracting::restore(
            &setup.name,
            "OVER window",
            &mut self.table,
            &mut self.ttl,
            state,
            |e: TableEntry<'_>| {
                partitions.insert(e.group_key.into(), decode(setup, &e)?);
                Ok(())
            },
        )?;
        Ok(())
    }

    fn moves_key_groups(&self) -> bool {
        true
    }

    fn give_key_groups(
        &mut self,
        ranges: &[KeyGroupRange],
    ) -> Result<KeyGroupsGiven, OperatorError> {
        self.flush()?;
        let pieces = self.table.export_each(ranges)?;
        let table = &self.table;
        self.partitions
            .retain(|key, _| !retracting::given_away(table, ranges, key));
        self.ttl
            .retain(|key| !retracting::given_away(table, ranges, key));
        retracting::given(&self.setup.name, pieces, self.unmatched_retractions)
    }

    fn take_key_groups(
        &mut self,
        pieces: Vec<(KeyGroupRange, Vec<u8>)>,
        inline: Vec<Option<serde_json::Value>>,
    ) -> Result<(), OperatorError> {
        self.unmatched_retractions =
            retracting::taken(&self.setup.name, self.unmatched_retractions, inline)?;
        let mut incoming = Incoming::for_ttl(&self.ttl);
        for (range, bytes) in pieces {
            let mut taken = Vec::new();
            let setup = &self.setup;
            self.table
                .import_scanned(range, &bytes, |e: TableEntry<'_>| {
                    if incoming.take(&setup.name, &e)? {
                        return Ok(());
                    }
                    taken.push((Box::<[u8]>::from(e.group_key), decode(setup, &e)?));
                    Ok::<(), OperatorError>(())
                })?;
            for (key, p) in taken {
                if self.partitions.insert(key, p).is_some() {
                    return Err(OperatorError::internal(
                        &self.setup.name,
                        format!("a partition of {range:?} handed over at a rescale is held here already"),
                    ));
                }
            }
        }
        self.ttl.taken(incoming, &mut self.table)?;
        Ok(())
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        let rows: u64 = (self.partitions.values())
            .map(|p| p.values().map(|k| k.count).sum::<u64>())
            .sum();
        let mut metrics = vec![
            ("partitions", self.partitions.len() as u64),
            ("rows_held", rows),
            ("unmatched_retractions", self.unmatched_retractions),
        ];
        metrics.extend(self.table.size_bytes().map(|b| ("state_backend_bytes", b)));
        metrics.extend(self.ttl.metrics());
        metrics
    }

    fn is_stateless(&self) -> bool {
        false
    }
}
