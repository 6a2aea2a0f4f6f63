//! The running aggregate: a batch's rows added to (or taken out of) their groups, the changes
//! of the groups' results emitted after it, the groups checkpointed through a keyed table and
//! restored from it.
//!
//! A checkpoint writes one table entry per group changed since the previous one (its key's
//! bytes as group key, `g` as sub-key, [`Group::encode`] as value), or deletes the entry of a
//! group that emptied; the manifest keeps how many retractions found no row to take out.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ahash::RandomState;
use anduin_operator_api::rescale::Combine;
use anduin_operator_api::{
    BuildContext, Collector, KeyGroupsGiven, Operator, OperatorError, RestoreIn, RowOrigins,
    SnapshotOut,
};
use anduin_state::{KeyedTable, TableEntry};
use anduin_types::ChangeKind;
use arrow::array::{Array, ArrayRef, BooleanArray, Int8Array};
use arrow::record_batch::RecordBatch;
use arrow::row::{RowConverter, SortField};

use crate::retracting;
use crate::ttl::{Incoming, StateTtl};

use super::acc::{Acc, Column, Evaluation, Group};
use super::GroupSetup;

/// The sub-key of a group's entry.
const GROUP: &[u8] = b"g";

/// A running aggregate.
pub(crate) struct Aggregate {
    setup: GroupSetup,
    /// The groups holding rows, by their key's bytes (the bytes the hash exchange routes by;
    /// empty for one group of every row).
    groups: HashMap<Box<[u8]>, Group, RandomState>,
    /// Groups changed since the last checkpoint.
    dirty: HashSet<Box<[u8]>, RandomState>,
    /// The checkpointed copy of the groups.
    table: KeyedTable,
    /// When each group was last written, if its state expires (`state_ttl`).
    ttl: StateTtl,
    /// Compares results, to leave out a change that changes nothing.
    results: RowConverter,
    /// Retractions of rows no group held.
    unmatched_retractions: u64,
    /// What a row whose aggregate argument or filter fails does.
    errors: anduin_operator_api::RowErrors,
    /// The query file's name as the user gave it, for the place of an aggregate in an error.
    query_file: Option<Arc<str>>,
}

impl Aggregate {
    pub(crate) fn new(setup: GroupSetup, ctx: &BuildContext) -> Result<Self, OperatorError> {
        let dir = ctx.backend_dir(&setup.name);
        let table = KeyedTable::new(&setup.name, setup.backend, dir);
        let results = RowConverter::new(
            setup
                .rows
                .fields()
                .iter()
                .map(|f| SortField::new(f.data_type().clone()))
                .collect(),
        )
        .map_err(|e| internal(&setup.name, e))?;
        let errors = anduin_operator_api::RowErrors::new(
            &setup.name,
            setup.sites.clone(),
            setup.on_error,
            ctx,
        );
        let ttl = StateTtl::new(setup.ttl_ms, 1, Arc::clone(&ctx.clock));
        Ok(Self {
            errors,
            query_file: ctx.query_file.clone(),
            ttl,
            setup,
            groups: HashMap::with_hasher(RandomState::with_seeds(1, 2, 3, 4)),
            dirty: HashSet::with_hasher(RandomState::with_seeds(1, 2, 3, 4)),
            table,
            results,
            unmatched_retractions: 0,
        })
    }

    /// Each aggregate's argument and filter on `batch`, after the rows they fail on went to
    /// the dead letters (or stopped the query): the rows kept and their inputs.
    fn evaluate(
        &self,
        batch: RecordBatch,
        origins: Option<&RowOrigins>,
    ) -> Result<(RecordBatch, Inputs), OperatorError> {
        let evaluated = anduin_operator_api::evaluate_rows(&batch, &mut |b: &RecordBatch| {
            inputs(b, &self.setup)
        });
        let pieces = match evaluated {
            anduin_operator_api::Evaluated::Whole(inputs) => return Ok((batch, inputs)),
            anduin_operator_api::Evaluated::Split(pieces) => pieces,
            anduin_operator_api::Evaluated::Exhausted(f) => {
                return Err(self.errors.exhausted(&f, origins))
            }
        };
        let failed = anduin_operator_api::failures(&pieces);
        self.errors.reject(&batch, &failed, origins)?;
        let keep = anduin_operator_api::kept_rows(batch.num_rows(), &failed);
        let kept = arrow::compute::filter_record_batch(&batch, &keep)
            .map_err(|e| internal(&self.setup.name, e))?;
        let inputs = inputs(&kept, &self.setup).map_err(|(agg, message)| {
            internal(
                &self.setup.name,
                format!("aggregate {agg} failed on rows it evaluated before: {message}"),
            )
        })?;
        Ok((kept, inputs))
    }

    /// Writes the groups changed since the last checkpoint to the table (deleting those gone).
    fn flush(&mut self) -> Result<(), OperatorError> {
        for key in self.dirty.drain() {
            let present = match self.groups.get(&key) {
                Some(g) => {
                    self.table.put(&key, GROUP, &g.encode())?;
                    true
                }
                None => {
                    self.table.delete(&key, GROUP)?;
                    false
                }
            };
            self.ttl.store(&mut self.table, &key, |_| present)?;
        }
        Ok(())
    }

    /// Forgets the groups not written for the time-to-live (as of now): a group seen again
    /// starts afresh, its earlier result not retracted.
    fn expire(&mut self) {
        let (groups, dirty) = (&mut self.groups, &mut self.dirty);
        self.ttl.tick();
        self.ttl.sweep(|key, _| {
            groups.remove(key);
            dirty.insert(key.into());
        });
    }

    fn error(&self, message: impl Into<String>) -> OperatorError {
        OperatorError::Execution {
            operator: self.setup.name.clone(),
            message: message.into(),
        }
    }

    /// The error of aggregate `a`, a user's, whose function failed with `message`.
    fn user_failed(&self, a: usize, message: &str) -> OperatorError {
        let site = self.setup.sites.get(a);
        let at = site
            .and_then(|s| s.at(self.query_file.as_deref()))
            .map(|at| format!(" at {at}"))
            .unwrap_or_default();
        self.error(format!(
            "aggregate `{}`{at} failed: {message}. The query stops: an aggregate's state holds many rows, so there is no single row to send to the dead letters",
            self.setup.aggs.get(a).map_or("?", |a| a.site.text.as_str()),
        ))
    }

    /// Steps the user's aggregates of `work` (the groups touched) over the rows of a batch:
    /// row `i` of `columns` belongs to group `ids[i]`, and is added (`adds[i]`) or taken out
    /// where `applied[i]` (a retraction that found no row is not). Runs of rows of one kind
    /// go to the aggregate's `accumulate` at once, in their order.
    fn step_users(
        &self,
        work: &mut [Group],
        ids: &[usize],
        columns: &[Column],
        filters: &[Option<BooleanArray>],
        adds: &[bool],
        applied: &[bool],
    ) -> Result<(), OperatorError> {
        for (k, plan) in self.setup.plans.iter().enumerate() {
            let (Some(user), Column::Args(args)) = (&plan.user, &columns[k]) else {
                continue;
            };
            let mut states: Vec<Option<Vec<u8>>> = work
                .iter_mut()
                .map(|g| match &mut g.accs[k] {
                    Acc::User(s) => s.take(),
                    _ => None,
                })
                .collect();
            let mut start = 0;
            while start < ids.len() {
                let add = adds[start];
                let end = (start..ids.len())
                    .find(|i| adds[*i] != add)
                    .unwrap_or(ids.len());
                let len = end - start;
                let keep = BooleanArray::from_iter((start..end).map(|i| {
                    Some(
                        applied[i]
                            && filters[k]
                                .as_ref()
                                .is_none_or(|f| f.is_valid(i) && f.value(i)),
                    )
                }));
                let run: Vec<ArrayRef> = args.iter().map(|a| a.slice(start, len)).collect();
                user.accumulate(&mut states, &ids[start..end], &run, Some(&keep), !add)
                    .map_err(|m| self.user_failed(k, &m))?;
                start = end;
            }
            for (g, state) in work.iter_mut().zip(states) {
                g.accs[k] = Acc::User(state);
            }
        }
        Ok(())
    }

    /// Every aggregate's value in `groups` (rows: keys then aggregates), keyed by `keys`.
    fn results(&self, keys: &[ArrayRef], groups: &[Group]) -> Result<RecordBatch, OperatorError> {
        let mut columns = keys.to_vec();
        for (a, plan) in self.setup.plans.iter().enumerate() {
            let accs = groups.iter().map(|g| &g.accs[a]);
            let values = plan.evaluate(accs).map_err(|e| match e {
                Evaluation::Overflow { group, sum } => self.error(format!(
                    "aggregate `{}` overflowed BIGINT {}: the sum is {sum}. The query stops: the total is no single row's fault. Add up a wider type instead, e.g. `SUM(CAST(… AS DOUBLE))` (approximate)",
                    self.setup.aggs[a].site.text,
                    key_text(&self.setup, keys, group),
                )),
                Evaluation::Failed(m) => self.user_failed(a, &m),
                Evaluation::Other(m) => internal(&self.setup.name, m),
            })?;
            columns.push(values);
        }
        let options =
            arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(groups.len()));
        RecordBatch::try_new_with_options(Arc::clone(&self.setup.rows), columns, &options)
            .map_err(|e| internal(&self.setup.name, e))
    }

    /// Whether each result is in the output: its group holds rows (`present`) and it passes
    /// `having`, which is evaluated on those results only (an empty group's result, all
    /// nulls and zeros, could make a condition fail that no real result does).
    fn visible(&self, results: &RecordBatch, present: &[bool]) -> Result<Vec<bool>, OperatorError> {
        let Some(h) = &self.setup.having else {
            return Ok(present.to_vec());
        };
        let rows =
            arrow::compute::filter_record_batch(results, &BooleanArray::from(present.to_vec()))
                .map_err(|e| internal(&self.setup.name, e))?;
        let pass = match h.evaluate_bool(&rows) {
            Ok(pass) => pass,
            Err(e) => {
                // Named by the first group it fails on (found again one result at a time).
                let keys = &rows.columns()[..self.setup.key_columns.len()];
                let (group, message) = (0..rows.num_rows())
                    .find_map(|i| {
                        h.evaluate_bool(&rows.slice(i, 1))
                            .err()
                            .map(|e| (key_text(&self.setup, keys, i), e.message))
                    })
                    .unwrap_or((String::new(), e.message));
                return Err(self.error(format!(
                    "the HAVING condition `{}` failed on the result {group}: {message}. The query stops: the result of a group is no single row's fault, so it cannot go to the dead letters. Guard the condition (e.g. `CASE WHEN n = 0 THEN … END`, `NULLIF(n, 0)`)",
                    having_as_written(&h.site.text, &self.setup.aggs)
                )));
            }
        };
        let mut passes = (0..pass.len()).map(|i| pass.is_valid(i) && pass.value(i));
        Ok(present
            .iter()
            .map(|p| *p && passes.next().unwrap_or(false))
            .collect())
    }
}

/// `for key k = 1, name = x` for group `g` of `keys`; nothing for one group of every row.
fn key_text(setup: &GroupSetup, keys: &[ArrayRef], g: usize) -> String {
    let parts: Vec<String> = setup
        .codec
        .schema
        .fields()
        .iter()
        .zip(keys)
        .map(|(f, c)| {
            let v =
                arrow::util::display::array_value_to_string(c, g).unwrap_or_else(|_| "?".into());
            format!("{} = {v}", f.name())
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("for key {}", parts.join(", "))
    }
}

/// Per aggregate, its arguments and its filter's rows on `batch`.
type Inputs = Vec<(Vec<ArrayRef>, Option<BooleanArray>)>;

/// The aggregates' inputs on `batch`, or the first aggregate whose argument or filter fails
/// and its error.
fn inputs(
    batch: &RecordBatch,
    setup: &GroupSetup,
) -> Result<Inputs, (usize, anduin_expr::ExprError)> {
    let mut out = Vec::with_capacity(setup.aggs.len());
    for (i, a) in setup.aggs.iter().enumerate() {
        let arg = a.arguments(batch).map_err(|e| (i, e))?;
        let filter = a.filter(batch).map_err(|e| (i, e))?;
        out.push((arg, filter));
    }
    Ok(out)
}

fn internal(operator: &str, e: impl std::fmt::Display) -> OperatorError {
    OperatorError::internal(operator, e.to_string())
}

impl Operator for Aggregate {
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
        let (batch, inputs) = self.evaluate(batch, origins.as_ref())?;
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        self.expire();
        let setup = &self.setup;
        let adds = retracting::adds(&self.setup.name, &batch, self.setup.change_in)?;
        let key_columns: Vec<ArrayRef> = setup
            .key_columns
            .iter()
            .map(|i| Arc::clone(batch.column(*i)))
            .collect();
        let key_rows = setup.codec.rows(&key_columns, n, &setup.name)?;
        let mut columns: Vec<Column> = Vec::with_capacity(setup.aggs.len());
        let mut filters: Vec<Option<BooleanArray>> = Vec::with_capacity(setup.aggs.len());
        for (plan, (args, filter)) in setup.plans.iter().zip(inputs) {
            columns.push(plan.columns(args).map_err(|m| internal(&setup.name, m))?);
            filters.push(filter);
        }

        // The groups this batch touches, in order of first touch, taken out of the map.
        let mut index: HashMap<&[u8], usize, RandomState> =
            HashMap::with_hasher(RandomState::with_seeds(1, 2, 3, 4));
        let mut touched: Vec<Box<[u8]>> = Vec::new();
        let mut ids = Vec::with_capacity(n);
        for i in 0..n {
            let key = setup.codec.stored(key_rows.row(i));
            let id = *index.entry(key).or_insert_with(|| {
                touched.push(key.into());
                touched.len() - 1
            });
            ids.push(id);
        }
        let mut work: Vec<Group> = touched
            .iter()
            .map(|k| {
                self.groups
                    .remove(k)
                    .unwrap_or_else(|| Group::new(&setup.plans))
            })
            .collect();
        let existed: Vec<bool> = work.iter().map(|g| g.rows > 0).collect();
        let stored = setup
            .codec
            .rows_of_stored(touched.iter().map(|k| k.as_ref()), &setup.name)?;
        let keys = setup.codec.columns(stored.iter(), &setup.name)?;
        let before = self.results(&keys, &work);

        // The rows, into their groups.
        let mut applied = vec![true; n];
        for i in 0..n {
            let g = &mut work[ids[i]];
            if adds[i] {
                g.rows += 1;
            } else if g.rows > 0 {
                g.rows -= 1;
            } else {
                self.unmatched_retractions += 1;
                applied[i] = false;
                continue;
            }
            g.apply(&self.setup.plans, &columns, &filters, i, adds[i]);
        }
        let stepped = self.step_users(&mut work, &ids, &columns, &filters, &adds, &applied);
        let setup = &self.setup;
        let after = stepped.and_then(|()| self.results(&keys, &work));
        // Put the groups back (before stopping on an error, so that the state stays whole),
        // each key's bytes copied only for a group not marked changed yet.
        let rows_after: Vec<bool> = work.iter().map(|g| g.rows > 0).collect();
        let groups_touched = touched.len();
        for (key, group) in touched.into_iter().zip(work) {
            self.ttl.wrote(&key, 0);
            if !self.dirty.contains(&key) {
                self.dirty.insert(key.clone());
            }
            if group.rows > 0 {
                self.groups.insert(key, group);
            }
        }
        let (before, after) = (before?, after?);
        let (was, is) = (
            self.visible(&before, &existed)?,
            self.visible(&after, &rows_after)?,
        );
        let (rows_b, rows_a) = (
            self.results
                .convert_columns(before.columns())
                .map_err(|e| internal(&setup.name, e))?,
            self.results
                .convert_columns(after.columns())
                .map_err(|e| internal(&setup.name, e))?,
        );

        // One change per group: (batch, row) to take, and its kind.
        let mut picks: Vec<(usize, usize)> = Vec::new();
        let mut kinds: Vec<i8> = Vec::new();
        for g in 0..groups_touched {
            match (was[g], is[g]) {
                (true, true) if rows_b.row(g) == rows_a.row(g) => {}
                (true, true) => {
                    picks.push((0, g));
                    kinds.push(ChangeKind::UpdateBefore.code());
                    picks.push((1, g));
                    kinds.push(ChangeKind::UpdateAfter.code());
                }
                (true, false) => {
                    picks.push((0, g));
                    kinds.push(ChangeKind::Delete.code());
                }
                (false, true) => {
                    picks.push((1, g));
                    kinds.push(ChangeKind::Insert.code());
                }
                (false, false) => {}
            }
        }
        if picks.is_empty() {
            return Ok(());
        }
        let mut columns = Vec::with_capacity(setup.schema.fields().len());
        for c in 0..before.num_columns() {
            let sides = [before.column(c).as_ref(), after.column(c).as_ref()];
            columns.push(
                arrow::compute::interleave(&sides, &picks).map_err(|e| internal(&setup.name, e))?,
            );
        }
        columns.push(Arc::new(Int8Array::from(kinds)));
        let changes = RecordBatch::try_new(Arc::clone(&setup.schema), columns)
            .map_err(|e| internal(&setup.name, e))?;
        out.collect(0, changes)
    }

    /// Each batch's changes go out with it (and a key forgotten by its time-to-live emits
    /// nothing): once the input is exhausted, so is the output.
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
        let (name, plans) = (&self.setup.name, &self.setup.plans);
        let groups = &mut self.groups;
        groups.clear();
        self.dirty.clear();
        self.unmatched_retractions = retracting::restore(
            name,
            "aggregate",
            &mut self.table,
            &mut self.ttl,
            state,
            |e: TableEntry<'_>| {
                groups.insert(e.group_key.into(), decode(name, plans, &e)?);
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
        ranges: &[anduin_state::KeyGroupRange],
    ) -> Result<KeyGroupsGiven, OperatorError> {
        // The table first holds every group as it is in memory.
        self.flush()?;
        let pieces = self.table.export_each(ranges)?;
        let table = &self.table;
        self.groups
            .retain(|key, _| !retracting::given_away(table, ranges, key));
        self.ttl
            .retain(|key| !retracting::given_away(table, ranges, key));
        retracting::given(&self.setup.name, pieces, self.unmatched_retractions)
    }

    fn take_key_groups(
        &mut self,
        pieces: Vec<(anduin_state::KeyGroupRange, Vec<u8>)>,
        inline: Vec<Option<serde_json::Value>>,
    ) -> Result<(), OperatorError> {
        self.unmatched_retractions =
            retracting::taken(&self.setup.name, self.unmatched_retractions, inline)?;
        let (name, plans) = (&self.setup.name, &self.setup.plans);
        let mut incoming = Incoming::for_ttl(&self.ttl);
        for (range, bytes) in pieces {
            let _count = self.table.import(range, &mut bytes.as_slice())?;
            let groups = &mut self.groups;
            self.table.scan(range, |e: TableEntry<'_>| {
                if incoming.take(name, &e)? {
                    return Ok(());
                }
                let group = decode(name, plans, &e)?;
                if groups.insert(e.group_key.into(), group).is_some() {
                    return Err(OperatorError::internal(
                        name,
                        format!(
                            "a group of {} handed over at a rescale is held here already",
                            e.kg
                        ),
                    ));
                }
                Ok::<(), OperatorError>(())
            })?;
        }
        self.ttl.taken(incoming, &mut self.table)?;
        Ok(())
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        let mut metrics = vec![
            ("peak_groups", self.groups.len() as u64),
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

/// The group a checkpointed entry holds.
fn decode(
    name: &str,
    plans: &[super::acc::AggPlan],
    e: &TableEntry<'_>,
) -> Result<Group, OperatorError> {
    (e.sub_key == GROUP)
        .then(|| Group::decode(e.value, plans))
        .flatten()
        .ok_or_else(|| {
            // A group of the same aggregates over an append-only input keeps less than an
            // updating input needs (`acc.rs`): say so rather than call it corrupt.
            let append_only: Vec<super::acc::AggPlan> = plans
                .iter()
                .cloned()
                .map(super::acc::AggPlan::over_append_only)
                .collect();
            let message = if e.sub_key == GROUP && Group::decode(e.value, &append_only).is_some() {
                format!(
                    "the checkpoint was taken when this aggregate's input was append-only, and its MIN, MAX and COUNT(DISTINCT …) kept only what such an input needs (the least or greatest value; each value once, without a count). Its input is updating now (it takes rows back), which needs every value and its count: the state in {} cannot be restored into it. Run the query from scratch (--from-scratch), or resume it with its input as it was",
                    e.kg
                )
            } else {
                format!(
                    "the checkpoint's aggregate state holds an entry in {} that is not a group of this aggregate: the state is corrupt, or the query changed its aggregates; run the query from scratch (--from-scratch), or resume it as it was",
                    e.kg
                )
            };
            OperatorError::Execution {
                operator: name.to_string(),
                message,
            }
        })
}

/// `having`, the text of a HAVING condition, with each aggregate the SQL planner computed
/// for it under a hidden name (`"__having1"`) written as the call it is (`COUNT(*)`).
fn having_as_written(having: &str, aggs: &[anduin_expr::CompiledAggregate]) -> String {
    let mut text = having.to_string();
    // The longest names first: `__having10` before `__having1`.
    let mut hidden: Vec<&anduin_expr::CompiledAggregate> = aggs
        .iter()
        .filter(|a| a.name.starts_with("__having"))
        .collect();
    hidden.sort_by_key(|a| std::cmp::Reverse(a.name.len()));
    for a in hidden {
        text = text
            .replace(&format!("\"{}\"", a.name), &a.site.text)
            .replace(&a.name, &a.site.text);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::acc::{AggPlan, Fun};
    use anduin_state::KeyGroup;
    use arrow::datatypes::DataType;

    #[test]
    fn a_checkpoint_taken_over_an_append_only_input_restored_over_an_updating_one_says_so() {
        let updating = vec![
            AggPlan::new(Fun::Max, &DataType::Int64).expect("a plan"),
            AggPlan::new(Fun::CountDistinct, &DataType::Int64).expect("a plan"),
        ];
        let append_only: Vec<AggPlan> = updating
            .iter()
            .cloned()
            .map(AggPlan::over_append_only)
            .collect();
        let kept = Group::new(&append_only).encode();
        let entry = |value| TableEntry {
            kg: KeyGroup(3),
            group_key: b"k",
            sub_key: GROUP,
            value,
        };
        let message = |r: Result<Group, OperatorError>| match r {
            Ok(_) => panic!("restored"),
            Err(e) => e.to_string(),
        };
        let err = message(decode("agg", &updating, &entry(&kept)));
        assert!(
            err.contains("input was append-only")
                && err.contains("updating now")
                && err.contains("--from-scratch")
                && !err.contains("corrupt"),
            "{err}"
        );
        // Bytes of no group at all are still called corrupt.
        let err = message(decode("agg", &updating, &entry(b"nope")));
        assert!(err.contains("corrupt"), "{err}");
        // The other way, a multiset's group restores into what an append-only input keeps.
        let multisets = Group::new(&updating).encode();
        assert!(decode("agg", &append_only, &entry(&multisets)).is_ok());
    }
}
