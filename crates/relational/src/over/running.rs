//! The running OVER window: a batch's rows held in their partitions until the watermark passes
//! them, then released in event-time order (`frame.rs`) with the aggregates of their frames;
//! the partitions checkpointed through a keyed table and restored from it.
//!
//! A checkpoint writes one table entry per partition changed since the previous one (its
//! key's bytes as group key, `o` as sub-key, `entry.rs` as value), or deletes the entry of a
//! partition that holds nothing any more (an unbounded frame keeps its aggregates and the
//! time of its last row for ever, as Flink's state does without a time-to-live).

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use ahash::RandomState;
use anduin_operator_api::event_time::event_times;
use anduin_operator_api::null_time::reject_null_times;
use anduin_operator_api::rescale::Combine;
use anduin_operator_api::{
    BuildContext, Collector, DeadLetter, KeyGroupsGiven, Operator, OperatorError, RestoreIn,
    RowOrigins, SnapshotOut,
};
use anduin_state::{KeyGroupRange, KeyedTable, TableEntry};
use anduin_types::Watermark;
use arrow::array::{ArrayRef, BooleanArray};
use arrow::record_batch::RecordBatch;
use arrow::row::{RowConverter, SortField};
use hashbrown::HashMap;

use crate::group::acc::{Acc, Evaluation, Group};
use crate::retracting;
use crate::ttl::{Incoming, StateTtl};

use super::entry;
use super::frame::{passed, Held, Partition, Step};
use super::OverSetup;

/// The sub-key of a partition's entry.
const ROWS: &[u8] = b"o";

/// A running OVER window.
pub(crate) struct Over {
    setup: OverSetup,
    /// A row's values (every input column) to row-format bytes and back.
    values: RowConverter,
    /// A row's aggregate arguments (one column per aggregate, null where its filter leaves
    /// the row out) to row-format bytes and back.
    args: RowConverter,
    /// The partitions, by their key's bytes (empty for one partition of every row).
    partitions: HashMap<Box<[u8]>, Partition, RandomState>,
    /// Partitions changed since the last checkpoint.
    dirty: HashSet<Box<[u8]>, RandomState>,
    /// The partitions with rows waiting, by their earliest time.
    pending: BTreeSet<(i64, Box<[u8]>)>,
    /// The checkpointed copy of the partitions.
    table: KeyedTable,
    /// When each partition was last written, if its state expires (`state_ttl`).
    ttl: StateTtl,
    /// Rows dropped because their partition had emitted a row as late or later.
    late: u64,
    /// What a row whose aggregate argument or filter fails does.
    errors: anduin_operator_api::RowErrors,
    dead_letter: Arc<DeadLetter>,
}

pub(super) fn internal(operator: &str, e: impl std::fmt::Display) -> OperatorError {
    OperatorError::internal(operator, e.to_string())
}

/// Per aggregate, its argument on `batch`, null where its filter leaves the row out; or the
/// first aggregate whose argument or filter fails and its error.
pub(super) fn arguments(
    batch: &RecordBatch,
    setup: &OverSetup,
) -> Result<Vec<ArrayRef>, (usize, anduin_expr::ExprError)> {
    let mut out = Vec::with_capacity(setup.aggs.len());
    for (i, a) in setup.aggs.iter().enumerate() {
        let arg = a
            .arguments(batch)
            .map_err(|e| (i, e))?
            .into_iter()
            .next()
            .ok_or_else(|| {
                (
                    i,
                    anduin_expr::ExprError::whole("an aggregate without an argument"),
                )
            })?;
        let arg = match a.filter(batch).map_err(|e| (i, e))? {
            None => arg,
            Some(keep) => {
                let leave_out: BooleanArray = keep.iter().map(|k| Some(k != Some(true))).collect();
                arrow::compute::nullif(&arg, &leave_out)
                    .map_err(|e| (i, anduin_expr::ExprError::whole(e.to_string())))?
            }
        };
        out.push(arg);
    }
    Ok(out)
}

/// The aggregates' arguments on `batch`, after the rows they fail on went to the dead
/// letters (or stopped the query, as `errors` says): the rows kept and their arguments.
pub(super) fn evaluate(
    setup: &OverSetup,
    errors: &anduin_operator_api::RowErrors,
    batch: RecordBatch,
    origins: Option<&RowOrigins>,
) -> Result<(RecordBatch, Vec<ArrayRef>), OperatorError> {
    let evaluated =
        anduin_operator_api::evaluate_rows(&batch, &mut |b: &RecordBatch| arguments(b, setup));
    let pieces = match evaluated {
        anduin_operator_api::Evaluated::Whole(args) => return Ok((batch, args)),
        anduin_operator_api::Evaluated::Split(pieces) => pieces,
        anduin_operator_api::Evaluated::Exhausted(f) => return Err(errors.exhausted(&f, origins)),
    };
    let failed = anduin_operator_api::failures(&pieces);
    errors.reject(&batch, &failed, origins)?;
    let keep = anduin_operator_api::kept_rows(batch.num_rows(), &failed);
    let kept =
        arrow::compute::filter_record_batch(&batch, &keep).map_err(|e| internal(&setup.name, e))?;
    let args = arguments(&kept, setup).map_err(|(agg, e)| {
        internal(
            &setup.name,
            format!(
                "aggregate {agg} failed on rows it evaluated before: {}",
                e.message
            ),
        )
    })?;
    Ok((kept, args))
}

impl Over {
    pub(crate) fn new(setup: OverSetup, ctx: &BuildContext) -> Result<Self, OperatorError> {
        let dir = ctx.backend_dir(&setup.name);
        let table = KeyedTable::new(&setup.name, setup.backend, dir);
        let inputs = setup.schema.fields().len() - setup.aggs.len();
        let values = RowConverter::new(
            setup.schema.fields()[..inputs]
                .iter()
                .map(|f| SortField::new(f.data_type().clone()))
                .collect(),
        )
        .map_err(|e| internal(&setup.name, e))?;
        let args = RowConverter::new(
            setup
                .arg_types
                .iter()
                .map(|t| SortField::new(t.clone()))
                .collect(),
        )
        .map_err(|e| internal(&setup.name, e))?;
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
            values,
            args,
            partitions: HashMap::with_hasher(RandomState::with_seeds(1, 2, 3, 4)),
            dirty: HashSet::with_hasher(RandomState::with_seeds(1, 2, 3, 4)),
            pending: BTreeSet::new(),
            table,
            late: 0,
        })
    }

    /// The aggregates' arguments on `batch`, after the rows they fail on went to the dead
    /// letters (or stopped the query): the rows kept and their arguments.
    fn evaluate(
        &self,
        batch: RecordBatch,
        origins: Option<&RowOrigins>,
    ) -> Result<(RecordBatch, Vec<ArrayRef>), OperatorError> {
        evaluate(&self.setup, &self.errors, batch, origins)
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

    /// Forgets the partitions not written for the time-to-live (as of now), with their rows
    /// waiting for the watermark: a partition seen again starts empty, its
    /// results emitted before not retracted.
    fn expire(&mut self) {
        let (partitions, dirty, pending) =
            (&mut self.partitions, &mut self.dirty, &mut self.pending);
        self.ttl.tick();
        self.ttl.sweep(|key, _| {
            if let Some(t) = partitions.remove(key).and_then(|p| p.first_pending()) {
                pending.remove(&(t, Box::from(key)));
            }
            dirty.insert(key.into());
        });
    }

    /// Releases the rows whose time the watermark `w` passed, partition by partition (those
    /// whose earliest waiting row is earliest first), and emits them with their aggregates.
    fn release(&mut self, w: Watermark, out: &mut dyn Collector) -> Result<(), OperatorError> {
        let mut keys = Vec::new();
        while self.pending.first().is_some_and(|(t, _)| passed(*t, w.0)) {
            if let Some((_, key)) = self.pending.pop_first() {
                keys.push(key);
            }
        }
        if keys.is_empty() {
            return Ok(());
        }
        // What releasing does to each partition, in order.
        let mut steps = Vec::new();
        let mut spans = Vec::with_capacity(keys.len());
        for key in &keys {
            let Some(p) = self.partitions.get_mut(key) else {
                return Err(internal(
                    &self.setup.name,
                    "a partition with rows waiting holds none",
                ));
            };
            let from = steps.len();
            p.release(self.setup.frame, w.0, &mut steps);
            spans.push(from..steps.len());
            if let Some(t) = p.first_pending() {
                self.pending.insert((t, key.clone()));
            }
            self.dirty.insert(key.clone());
        }
        // The aggregates of each partition, stepped through from where they are.
        let mut groups: Vec<Group> = Vec::with_capacity(keys.len());
        for key in &keys {
            if let Some(p) = self.partitions.get_mut(key) {
                groups.push(std::mem::replace(
                    &mut p.group,
                    Group::new(&self.setup.plans),
                ));
            }
        }
        let emitted = emitted(
            &self.setup,
            &self.values,
            &self.args,
            &steps,
            groups.iter_mut().zip(spans.iter().cloned()),
        );
        for (key, group) in keys.iter().zip(groups) {
            if let Some(p) = self.partitions.get_mut(key) {
                p.group = group;
            }
        }
        let output = emitted?;
        let name = &self.setup.name;
        let batch = RecordBatch::try_new(Arc::clone(&self.setup.schema), output)
            .map_err(|e| internal(name, e))?;
        let batch = in_time_order(&self.setup, batch, &keys, &steps, &spans)?;
        out.collect(0, batch)
    }

    /// Rebuilds the index of the partitions with rows waiting.
    fn index_pending(&mut self) {
        self.pending = self
            .partitions
            .iter()
            .filter_map(|(k, p)| p.first_pending().map(|t| (t, k.clone())))
            .collect();
    }
}

/// The rows released at once (`batch`, partition after partition: `keys[i]`'s are those of
/// the `Emit` steps in `steps[spans[i]]`) in the order of their event times, then of their
/// partitions' keys, then as they came.
///
/// Released partition by partition, a watermark's rows come out in an order that depends on
/// which watermarks came (two watermarks release two partitions' rows interleaved in time,
/// one releases them partition after partition); in time order, every run emits them in one
/// order, whatever its watermarks, which a sink that names rows by their place needs (NATS
/// exactly once: `anduin_connectors::nats::dedup`).
fn in_time_order(
    setup: &OverSetup,
    batch: RecordBatch,
    keys: &[Box<[u8]>],
    steps: &[Step],
    spans: &[std::ops::Range<usize>],
) -> Result<RecordBatch, OperatorError> {
    let times = event_times(&batch, setup.time);
    let mut partition = Vec::with_capacity(batch.num_rows());
    for (i, span) in spans.iter().enumerate() {
        let emits = steps[span.clone()]
            .iter()
            .filter(|s| matches!(s, Step::Emit(_)))
            .count();
        partition.extend(std::iter::repeat_n(i, emits));
    }
    if partition.len() != times.len() {
        return Err(internal(
            &setup.name,
            "the released rows do not match the partitions' emits",
        ));
    }
    let place = |r: usize| (times[r], &keys[partition[r]]);
    if (1..times.len()).all(|r| place(r - 1) <= place(r)) {
        return Ok(batch);
    }
    let mut order: Vec<u32> = (0..times.len() as u32).collect();
    order.sort_by(|a, b| place(*a as usize).cmp(&place(*b as usize)));
    let order = arrow::array::UInt32Array::from(order);
    arrow::compute::take_record_batch(&batch, &order).map_err(|e| internal(&setup.name, e))
}

/// The rows `steps` emit, as the output's columns (the input's, then one per aggregate): each
/// run's group steps through its span of `steps` (adding, taking out), and each `Emit` of it
/// is a row with the aggregates as they are then. `values` and `args` read the steps' bytes.
pub(super) fn emitted<'g>(
    setup: &OverSetup,
    values: &RowConverter,
    args: &RowConverter,
    steps: &[Step],
    runs: impl Iterator<Item = (&'g mut Group, std::ops::Range<usize>)>,
) -> Result<Vec<ArrayRef>, OperatorError> {
    let name = &setup.name;
    // The arguments and values the steps name, as columns.
    let (args_parser, values_parser) = (args.parser(), values.parser());
    let arg_columns = args
        .convert_rows(steps.iter().filter_map(|s| match s {
            Step::Add(a) | Step::Retract(a) => Some(args_parser.parse(a)),
            Step::Emit(_) => None,
        }))
        .map_err(|e| internal(name, e))?;
    let mut columns = Vec::with_capacity(setup.plans.len());
    for (plan, arg) in setup.plans.iter().zip(&arg_columns) {
        columns.push(plan.column(arg).map_err(|m| internal(name, m))?);
    }
    let mut output = values
        .convert_rows(steps.iter().filter_map(|s| match s {
            Step::Emit(v) => Some(values_parser.parse(v)),
            _ => None,
        }))
        .map_err(|e| internal(name, e))?;
    // The aggregates, stepped through; their state at each emitted row.
    let mut at_rows: Vec<Vec<Acc>> = Vec::new();
    let mut i = 0;
    for (group, span) in runs {
        for step in steps.get(span).unwrap_or_default() {
            match step {
                Step::Add(_) | Step::Retract(_) => {
                    let add = matches!(step, Step::Add(_));
                    group.rows += if add { 1 } else { -1 };
                    for (k, plan) in setup.plans.iter().enumerate() {
                        plan.apply(&mut group.accs[k], &columns[k], None, i, add);
                    }
                    i += 1;
                }
                Step::Emit(_) => at_rows.push(group.accs.clone()),
            }
        }
    }
    for (a, plan) in setup.plans.iter().enumerate() {
        let values = plan
            .evaluate(at_rows.iter().map(|accs| &accs[a]))
            .map_err(|e| match e {
                Evaluation::Overflow { sum, .. } => OperatorError::Execution {
                    operator: name.clone(),
                    message: format!(
                        "aggregate `{}` overflowed BIGINT over a window of rows: the sum is {sum}. The query stops: the total is no single row's fault. Add up a wider type instead, e.g. `SUM(CAST(… AS DOUBLE))` (approximate)",
                        setup.aggs[a].site.text
                    ),
                },
                // A user's aggregate, which an OVER window refuses when it is bound.
                Evaluation::Failed(m) | Evaluation::Other(m) => internal(name, m),
            })?;
        output.push(values);
    }
    Ok(output)
}

/// The partition a checkpointed entry holds.
fn decode(setup: &OverSetup, e: &TableEntry<'_>) -> Result<Partition, OperatorError> {
    (e.sub_key == ROWS)
        .then(|| entry::decode(e.value, &setup.plans))
        .flatten()
        .ok_or_else(|| OperatorError::Execution {
            operator: setup.name.clone(),
            message: format!(
                "the checkpoint's OVER window state holds an entry in {} that is not a partition of this OVER window: the state is corrupt, or the query changed its input or aggregates; restore from an earlier checkpoint",
                e.kg
            ),
        })
}

impl Operator for Over {
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
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.expire();
        let batch = reject_null_times(batch, self.setup.time, &self.setup.name, &self.dead_letter)?;
        // Row origins index the batch as it came; without null times they would not.
        let origins = origins.filter(|o| o.len() == batch.num_rows());
        let (batch, args) = self.evaluate(batch, origins.as_ref())?;
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        let setup = &self.setup;
        let name = &setup.name;
        let keys: Vec<ArrayRef> = setup
            .key_columns
            .iter()
            .map(|i| Arc::clone(batch.column(*i)))
            .collect();
        let keys = setup.codec.rows(&keys, n, name)?;
        let values = self
            .values
            .convert_columns(batch.columns())
            .map_err(|e| internal(name, e))?;
        let args = self
            .args
            .convert_columns(&args)
            .map_err(|e| internal(name, e))?;
        let times = event_times(&batch, setup.time);
        for (i, t) in times.into_iter().enumerate() {
            let Some(t) = t else {
                continue;
            };
            let key = setup.codec.stored(keys.row(i));
            let p = self
                .partitions
                .entry_ref(key)
                .or_insert_with(|| Partition::new(Group::new(&setup.plans)));
            if !p.in_time(t) {
                self.late += 1;
                continue;
            }
            let first = p.first_pending();
            p.hold(
                t,
                Held {
                    values: values.row(i).as_ref().into(),
                    args: args.row(i).as_ref().into(),
                },
            );
            if first.is_none_or(|f| t < f) {
                if let Some(f) = first {
                    self.pending.remove(&(f, Box::from(key)));
                }
                self.pending.insert((t, key.into()));
            }
            self.ttl.wrote(key, 0);
            if !self.dirty.contains(key) {
                self.dirty.insert(key.into());
            }
        }
        Ok(())
    }

    fn handle_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector,
    ) -> Result<Option<Watermark>, OperatorError> {
        self.release(watermark, out)?;
        Ok(Some(watermark))
    }

    fn on_end_of_input(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
        self.release(Watermark::MAX, out)
    }

    /// No row will come: every waiting row goes out now, as at the end of event time (after
    /// an exhausted input the next watermark is that +∞), so the output is exhausted too.
    fn on_input_exhausted(
        &mut self,
        _input: usize,
        out: &mut dyn Collector,
    ) -> Result<bool, OperatorError> {
        self.release(Watermark::MAX, out)?;
        Ok(true)
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        self.expire();
        self.flush()?;
        retracting::snapshot(&self.setup.name, &mut self.table, 0, &self.ttl, out)
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
        retracting::restore(
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
        self.index_pending();
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
        retracting::given(&self.setup.name, pieces, 0)
    }

    fn take_key_groups(
        &mut self,
        pieces: Vec<(KeyGroupRange, Vec<u8>)>,
        inline: Vec<Option<serde_json::Value>>,
    ) -> Result<(), OperatorError> {
        retracting::taken(&self.setup.name, 0, inline)?;
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
        self.index_pending();
        Ok(())
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        let waiting: usize = self.partitions.values().map(Partition::pending_rows).sum();
        let framed: usize = self.partitions.values().map(|p| p.frame.len()).sum();
        let mut metrics = vec![
            ("partitions", self.partitions.len() as u64),
            ("rows_waiting", waiting as u64),
            ("frame_rows_held", framed as u64),
            ("late_rows_dropped", self.late),
        ];
        metrics.extend(self.table.size_bytes().map(|b| ("state_backend_bytes", b)));
        metrics.extend(self.ttl.metrics());
        metrics
    }

    fn is_stateless(&self) -> bool {
        false
    }
}
