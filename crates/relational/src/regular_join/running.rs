//! The running regular join: a batch's rows applied to their keys' rows one after the other
//! (`changes.rs`), the changes emitted after the batch in that order, the keys checkpointed
//! through a keyed table and restored from it.
//!
//! A batch is joined in three steps (`pairs.rs`): the other side's rows of each input row's
//! key are gathered (they do not change while the batch is applied, only their degrees do),
//! the residual condition is evaluated on all those pairs at once, then the rows are applied
//! in order. A checkpoint writes one entry per key changed since the previous one (the key's
//! bytes as group key, `j` as sub-key, `entry.rs` as value), or deletes the entry of a key
//! that no longer holds rows.

use std::collections::HashSet;
use std::sync::Arc;

use ahash::RandomState;
use anduin_operator_api::keys::KeyEncoder;
use anduin_operator_api::rescale::Combine;
use anduin_operator_api::{
    BuildContext, Collector, KeyGroupsGiven, Operator, OperatorError, RestoreIn, SnapshotOut,
};
use anduin_state::{KeyedTable, TableEntry};
use anduin_types::{ChangeKind, Watermark};
use arrow::array::{ArrayRef, AsArray};
use arrow::datatypes::Int8Type;
use arrow::record_batch::RecordBatch;
use arrow::row::{RowConverter, SortField};
use hashbrown::HashMap;

use crate::retracting;
use crate::ttl::{Incoming, StateTtl};

use super::changes::{apply, Applied, Emitted, Held, Roles};
use super::pairs::{condition, gather, internal, null_keys, output, Out};
use super::{entry, RegularSetup};

/// The sub-key of a key's entry.
const ROWS: &[u8] = b"j";

/// Both sides' rows of one key.
type Sides = [Vec<Held>; 2];

/// A running regular join.
pub(crate) struct RegularJoin {
    setup: RegularSetup,
    /// The keys' bytes, as the exchange routes by (both sides' key columns have one type).
    keys: KeyEncoder,
    /// Each side's values to row-format bytes and back.
    values: [RowConverter; 2],
    /// The rows held, by key.
    held: HashMap<Box<[u8]>, Sides, RandomState>,
    /// Keys changed since the last checkpoint.
    dirty: HashSet<Box<[u8]>, RandomState>,
    /// The checkpointed copy of the rows.
    table: KeyedTable,
    /// When each key's rows of each side were last written, if they expire (`state_ttl`):
    /// the sides expire apart (part 0 the left, 1 the right).
    ttl: StateTtl,
    unmatched_retractions: u64,
    /// Rows held, copies counted.
    rows_held: u64,
    /// The bytes of the keys and distinct rows held (live state), and the most so far.
    state_bytes: u64,
    peak_state_bytes: u64,
}

impl RegularJoin {
    pub(crate) fn new(setup: RegularSetup, ctx: &BuildContext) -> Result<Self, OperatorError> {
        let dir = ctx.backend_dir(&setup.name);
        let table = KeyedTable::new(&setup.name, setup.backend, dir);
        let keys = KeyEncoder::new(setup.key_types.iter().cloned())
            .map_err(|e| internal(&setup.name, e))?;
        let converter = |side: usize| {
            let width = setup.sides[0].values.len();
            let range = if side == 0 {
                0..width
            } else {
                width..setup.rows.fields().len()
            };
            RowConverter::new(
                setup.rows.fields()[range]
                    .iter()
                    .map(|f| SortField::new(f.data_type().clone()))
                    .collect(),
            )
            .map_err(|e| internal(&setup.name, e))
        };
        let values = [converter(0)?, converter(1)?];
        let ttl = StateTtl::new(setup.ttl_ms, 2, Arc::clone(&ctx.clock));
        Ok(Self {
            ttl,
            setup,
            keys,
            values,
            held: HashMap::with_hasher(RandomState::with_seeds(1, 2, 3, 4)),
            dirty: HashSet::with_hasher(RandomState::with_seeds(1, 2, 3, 4)),
            table,
            unmatched_retractions: 0,
            rows_held: 0,
            state_bytes: 0,
            peak_state_bytes: 0,
        })
    }

    fn error(&self, message: impl Into<String>) -> OperatorError {
        OperatorError::Execution {
            operator: self.setup.name.clone(),
            message: message.into(),
        }
    }

    /// The kind of each row of a batch of `side`.
    fn kinds(&self, side: usize, batch: &RecordBatch) -> Result<Vec<ChangeKind>, OperatorError> {
        let Some(c) = self.setup.sides[side].change else {
            return Ok(vec![ChangeKind::Insert; batch.num_rows()]);
        };
        let codes = batch
            .column(c)
            .as_primitive_opt::<Int8Type>()
            .ok_or_else(|| self.error("the input's change kind is not a change kind column"))?;
        codes
            .iter()
            .map(|code| {
                code.and_then(ChangeKind::from_code).ok_or_else(|| {
                    self.error(format!(
                        "a row of the input has no valid change kind ({code:?}): a bug in anduin"
                    ))
                })
            })
            .collect()
    }

    /// Writes the keys changed since the last checkpoint to the table (deleting those gone).
    fn flush(&mut self) -> Result<(), OperatorError> {
        for key in self.dirty.drain() {
            let sides = self.held.get(&key);
            match sides {
                Some(sides) => self.table.put(&key, ROWS, &entry::encode(sides))?,
                None => self.table.delete(&key, ROWS)?,
            }
            let present = |part: u8| sides.is_some_and(|s| !s[usize::from(part)].is_empty());
            self.ttl.store(&mut self.table, &key, present)?;
        }
        Ok(())
    }

    /// Forgets the rows of each key and side not written for the time-to-live (as of now):
    /// they are matched no more, and the pairs they made are not retracted.
    fn expire(&mut self) {
        let (held, dirty, rows_held) = (&mut self.held, &mut self.dirty, &mut self.rows_held);
        let bytes = &mut self.state_bytes;
        self.ttl.tick();
        self.ttl.sweep(|key, part| {
            if let Some(sides) = held.get_mut(key) {
                let side = &mut sides[usize::from(part.min(1))];
                *rows_held = rows_held.saturating_sub(side.iter().map(|h| h.count).sum());
                *bytes = bytes.saturating_sub(side.iter().map(|h| h.values.len() as u64).sum());
                side.clear();
                if sides.iter().all(Vec::is_empty) {
                    held.remove(key);
                    *bytes = bytes.saturating_sub(key.len() as u64);
                }
            }
            dirty.insert(key.into());
        });
    }
}

impl Operator for RegularJoin {
    fn name(&self) -> &str {
        &self.setup.name
    }

    fn process_batch(
        &mut self,
        input: usize,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        self.expire();
        let side = input.min(1);
        let other = 1 - side;
        let setup = &self.setup;
        let kinds = self.kinds(side, &batch)?;
        let key_columns: Vec<ArrayRef> = setup.sides[side]
            .keys
            .iter()
            .map(|i| Arc::clone(batch.column(*i)))
            .collect();
        let keys = self
            .keys
            .encode(&key_columns)
            .map_err(|e| internal(&setup.name, e))?;
        let nulls = null_keys(&key_columns);
        let values: Vec<ArrayRef> = setup.sides[side]
            .values
            .iter()
            .map(|i| Arc::clone(batch.column(*i)))
            .collect();
        let rows = self.values[side]
            .convert_columns(&values)
            .map_err(|e| internal(&setup.name, e))?;

        // 1. The other side's rows of each row's key, as they are before the batch.
        let pairs = gather(
            &self.held,
            &keys,
            nulls.as_ref(),
            other,
            &self.values[other],
            &setup.name,
        )?;
        // 2. The condition on every pair at once.
        let pass = condition(setup, side, &values, &pairs)?;

        // 3. The rows in order.
        let roles = Roles {
            input_outer: setup.how.outer(side),
            other_outer: setup.how.outer(other),
            input_updating: setup.sides[side].change.is_some(),
        };
        let mut outs: Vec<Out> = Vec::new();
        let mut emitted = Vec::new();
        let mut matches = Vec::new();
        for (i, kind) in kinds.iter().copied().enumerate() {
            let row = i as u32;
            if nulls.as_ref().is_some_and(|b| b.is_null(i)) {
                // Equal to no key: never kept; an outer side emits it alone.
                if roles.input_outer {
                    let kind = if kind.adds() {
                        ChangeKind::Insert
                    } else {
                        ChangeKind::Delete
                    };
                    outs.push(Out {
                        input: Some(row),
                        other: None,
                        kind,
                    });
                }
                continue;
            }
            let (start, end) = (pairs.starts[i], pairs.starts[i + 1]);
            matches.clear();
            matches.extend(
                (start..end)
                    .filter(|p| pass[*p])
                    .map(|p| pairs.held[p] as usize),
            );
            let key = keys.row(i);
            let key: &[u8] = key.as_ref();
            if !kind.adds() && !self.held.contains_key(key) {
                self.unmatched_retractions += 1;
                continue;
            }
            // The key's bytes are copied only for a key not held yet.
            let new_key = !self.held.contains_key(key);
            let sides = self.held.entry_ref(key).or_default();
            let [l, r] = sides;
            let (own, theirs) = if side == 0 { (l, r) } else { (r, l) };
            let distinct = own.len();
            emitted.clear();
            let applied = apply(
                kind,
                roles,
                own,
                theirs,
                &matches,
                rows.row(i).as_ref(),
                &mut emitted,
            );
            // A row held for the first time, or no more, adds or takes its bytes.
            let row_bytes = rows.row(i).as_ref().len() as u64;
            match own.len().cmp(&distinct) {
                std::cmp::Ordering::Greater => self.state_bytes += row_bytes,
                std::cmp::Ordering::Less => {
                    self.state_bytes = self.state_bytes.saturating_sub(row_bytes);
                }
                std::cmp::Ordering::Equal => {}
            }
            match applied {
                Applied::Done if kind.adds() => self.rows_held += 1,
                Applied::Done => self.rows_held -= 1,
                Applied::NotHeld => {
                    self.unmatched_retractions += 1;
                    continue;
                }
            }
            let empty = sides.iter().all(Vec::is_empty);
            if new_key {
                self.state_bytes += key.len() as u64;
            }
            if empty {
                self.held.remove(key);
                self.state_bytes = self.state_bytes.saturating_sub(key.len() as u64);
            }
            self.peak_state_bytes = self.peak_state_bytes.max(self.state_bytes);
            self.ttl.wrote(key, side as u8);
            if !self.dirty.contains(key) {
                self.dirty.insert(key.into());
            }
            // The key's other rows were gathered in order: row `j` is pair `start + j`.
            for e in &emitted {
                let (input, other, kind) = match *e {
                    Emitted::Pair(j, k) => (Some(row), Some(j), k),
                    Emitted::InputAlone(k) => (Some(row), None, k),
                    Emitted::OtherAlone(j, k) => (None, Some(j), k),
                };
                let other = match other {
                    Some(j) if start + j < end => Some((start + j) as u32),
                    Some(_) => {
                        return Err(internal(&self.setup.name, "a joined row was not gathered"))
                    }
                    None => None,
                };
                outs.push(Out { input, other, kind });
            }
        }
        if outs.is_empty() {
            return Ok(());
        }
        let batch = output(setup, side, &values, &pairs, &outs)?;
        out.collect(0, batch)
    }

    fn handle_watermark(
        &mut self,
        watermark: Watermark,
        _out: &mut dyn Collector,
    ) -> Result<Option<Watermark>, OperatorError> {
        // A joined row may be older than any watermark so far: only the end of input passes.
        Ok((watermark == Watermark::MAX).then_some(watermark))
    }

    /// Each batch's changes go out with it (an outer join's padded rows too): once both
    /// inputs are exhausted, so is the output (the runtime asks only then).
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
        let name = &self.setup.name;
        let held = &mut self.held;
        held.clear();
        self.dirty.clear();
        self.unmatched_retractions = retracting::restore(
            name,
            "join",
            &mut self.table,
            &mut self.ttl,
            state,
            |e: TableEntry<'_>| {
                held.insert(e.group_key.into(), decode(name, &e)?);
                Ok(())
            },
        )?;
        (self.rows_held, self.state_bytes) = count_rows(&self.held);
        self.peak_state_bytes = self.peak_state_bytes.max(self.state_bytes);
        Ok(())
    }

    fn moves_key_groups(&self) -> bool {
        true
    }

    fn give_key_groups(
        &mut self,
        ranges: &[anduin_state::KeyGroupRange],
    ) -> Result<KeyGroupsGiven, OperatorError> {
        // The table first holds every key as it is in memory.
        self.flush()?;
        let pieces = self.table.export_each(ranges)?;
        let table = &self.table;
        self.held
            .retain(|key, _| !retracting::given_away(table, ranges, key));
        self.ttl
            .retain(|key| !retracting::given_away(table, ranges, key));
        (self.rows_held, self.state_bytes) = count_rows(&self.held);
        self.peak_state_bytes = self.peak_state_bytes.max(self.state_bytes);
        retracting::given(&self.setup.name, pieces, self.unmatched_retractions)
    }

    fn take_key_groups(
        &mut self,
        pieces: Vec<(anduin_state::KeyGroupRange, Vec<u8>)>,
        inline: Vec<Option<serde_json::Value>>,
    ) -> Result<(), OperatorError> {
        self.unmatched_retractions =
            retracting::taken(&self.setup.name, self.unmatched_retractions, inline)?;
        let name = &self.setup.name;
        let mut incoming = Incoming::for_ttl(&self.ttl);
        for (range, bytes) in pieces {
            let held = &mut self.held;
            self.table
                .import_scanned(range, &bytes, |e: TableEntry<'_>| {
                    if incoming.take(name, &e)? {
                        return Ok(());
                    }
                    let sides = decode(name, &e)?;
                    if held.insert(e.group_key.into(), sides).is_some() {
                        return Err(OperatorError::internal(
                            name,
                            format!(
                                "a key of {} handed over at a rescale is held here already",
                                e.kg
                            ),
                        ));
                    }
                    Ok::<(), OperatorError>(())
                })?;
        }
        self.ttl.taken(incoming, &mut self.table)?;
        (self.rows_held, self.state_bytes) = count_rows(&self.held);
        self.peak_state_bytes = self.peak_state_bytes.max(self.state_bytes);
        Ok(())
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        let mut metrics = vec![
            ("keys", self.held.len() as u64),
            ("rows_held", self.rows_held),
            ("state_bytes", self.state_bytes),
            ("peak_state_bytes", self.peak_state_bytes),
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

/// The rows `held` holds, copies counted, and the bytes of its keys and distinct rows.
fn count_rows(held: &HashMap<Box<[u8]>, Sides, RandomState>) -> (u64, u64) {
    let rows = held
        .values()
        .flat_map(|s| s.iter().flatten())
        .map(|h| h.count)
        .sum();
    let bytes = held
        .iter()
        .map(|(k, s)| {
            k.len() as u64
                + s.iter()
                    .flatten()
                    .map(|h| h.values.len() as u64)
                    .sum::<u64>()
        })
        .sum();
    (rows, bytes)
}

/// The rows a checkpointed entry holds.
fn decode(name: &str, e: &TableEntry<'_>) -> Result<Sides, OperatorError> {
    (e.sub_key == ROWS)
        .then(|| entry::decode(e.value))
        .flatten()
        .ok_or_else(|| OperatorError::Execution {
            operator: name.to_string(),
            message: format!(
                "the checkpoint's join state holds an entry in {} that is not a key's rows of this join: the state is corrupt, or the query changed its inputs; restore from an earlier checkpoint",
                e.kg
            ),
        })
}
