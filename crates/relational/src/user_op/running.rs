//! The running user operator: a batch's rows given to the user's `process` with their keys'
//! states, the states and timers it gives back kept, the rows it emitted sent on after the
//! key's columns; the timers the watermark reaches fired; the states checkpointed through a
//! keyed table and restored from it.
//!
//! A checkpoint writes one table entry per key changed since the previous one (its key's
//! bytes as group key, `s` as sub-key, `entry.rs` as value), or deletes the entry of a key
//! that holds no state any more.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use ahash::RandomState;
use anduin_expr::{Emitted, OperatorFailure};
use anduin_operator_api::rescale::Combine;
use anduin_operator_api::{
    row_as_json, BuildContext, Collector, KeyGroupsGiven, Operator, OperatorError, RestoreIn,
    RowErrors, RowOrigins, SnapshotOut,
};
use anduin_state::{KeyGroupRange, KeyedTable, TableEntry};
use anduin_types::Watermark;
use arrow::array::ArrayRef;
use arrow::record_batch::RecordBatch;
use hashbrown::HashMap;

use crate::retracting;
use crate::ttl::{Incoming, StateTtl};

use super::entry::{self, Kept};
use super::UserSetup;

/// The sub-key of a key's entry.
const STATE: &[u8] = b"s";

/// How many keys' timers one call of the user's engine fires at most.
const TIMERS_PER_JOB: usize = 1024;

/// A running user operator.
pub(crate) struct UserOp {
    setup: UserSetup,
    /// The keys holding a state, by their key's bytes (the bytes the hash exchange routes
    /// by; empty for one key of every row).
    kept: HashMap<Box<[u8]>, Kept, RandomState>,
    /// Keys changed since the last checkpoint.
    dirty: HashSet<Box<[u8]>, RandomState>,
    /// The keys' timers, earliest first.
    timers: BTreeSet<(i64, Box<[u8]>)>,
    /// The watermark the timers were last fired at.
    fired_to: Option<i64>,
    /// The checkpointed copy of the states.
    table: KeyedTable,
    /// Never expires anything: the shared snapshot and restore take one.
    ttl: StateTtl,
    /// What a row on which `process` fails does.
    errors: RowErrors,
    /// The query file's name as the user gave it, for the operator's place in an error.
    query_file: Option<Arc<str>>,
    /// Rows that went to the dead letters.
    rejected: u64,
}

impl UserOp {
    pub(crate) fn new(setup: UserSetup, ctx: &BuildContext) -> Result<Self, OperatorError> {
        let dir = ctx.backend_dir(&setup.name);
        let table = KeyedTable::new(&setup.name, setup.backend, dir);
        let errors = RowErrors::new(&setup.name, vec![setup.site.clone()], setup.on_error, ctx);
        Ok(Self {
            ttl: StateTtl::new(0, 1, Arc::clone(&ctx.clock)),
            errors,
            query_file: ctx.query_file.clone(),
            setup,
            kept: HashMap::with_hasher(RandomState::with_seeds(1, 2, 3, 4)),
            dirty: HashSet::with_hasher(RandomState::with_seeds(1, 2, 3, 4)),
            timers: BTreeSet::new(),
            fired_to: None,
            table,
            rejected: 0,
        })
    }

    fn internal(&self, e: impl std::fmt::Display) -> OperatorError {
        OperatorError::internal(&self.setup.name, e.to_string())
    }

    /// `for key auction = 3` for the key stored as `key` (nothing for one key of every row).
    fn key_text(&self, key: &[u8]) -> String {
        let codec = &self.setup.codec;
        let columns = codec
            .rows_of_stored([key], &self.setup.name)
            .and_then(|rows| codec.columns(rows.iter(), &self.setup.name));
        let Ok(columns) = columns else {
            return String::new();
        };
        let parts: Vec<String> = codec
            .schema
            .fields()
            .iter()
            .zip(&columns)
            .map(|(f, c)| {
                let v = arrow::util::display::array_value_to_string(c, 0)
                    .unwrap_or_else(|_| "?".into());
                format!("{} = {v}", f.name())
            })
            .collect();
        if parts.is_empty() {
            String::new()
        } else {
            format!(" for key {}", parts.join(", "))
        }
    }

    /// The user operator as named in an error: `user operator `f` at q.sql:9:15`.
    fn named(&self) -> String {
        let site = &self.setup.site;
        let at = site
            .at(self.query_file.as_deref())
            .map(|at| format!(" at {at}"))
            .unwrap_or_default();
        format!("user operator `{}`{at}", site.text)
    }

    /// The user's `process` on `batch` (whose rows came from `origins`, if known); a row on
    /// which it fails goes to the dead letters (and the batch is processed again without
    /// it), or stops the query.
    fn process(
        &mut self,
        batch: &RecordBatch,
        origins: Option<&RowOrigins>,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let setup = &self.setup;
        let key_columns: Vec<ArrayRef> = setup
            .key_columns
            .iter()
            .map(|i| Arc::clone(batch.column(*i)))
            .collect();
        let keys = setup
            .codec
            .rows(&key_columns, batch.num_rows(), &setup.name)?;
        let args = setup
            .args
            .iter()
            .map(|(i, t)| arrow::compute::cast(batch.column(*i), t))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.internal(e))?;
        let mut slot_of: HashMap<&[u8], usize, RandomState> =
            HashMap::with_hasher(RandomState::with_seeds(1, 2, 3, 4));
        let mut slot_keys: Vec<&[u8]> = Vec::new();
        let mut steps: Vec<(usize, usize)> = Vec::with_capacity(batch.num_rows());
        for row in 0..batch.num_rows() {
            let key = setup.codec.stored(keys.row(row));
            let slot = *slot_of.entry(key).or_insert_with(|| {
                slot_keys.push(key);
                slot_keys.len() - 1
            });
            steps.push((row, slot));
        }
        let emitted = loop {
            let states = slot_keys
                .iter()
                .map(|k| self.kept.get(*k).map(|kept| kept.state.clone()))
                .collect();
            match self.setup.user.process(states, &args, &steps) {
                Ok(emitted) => break emitted,
                Err(failure) => {
                    let row = self.failed_row(batch, origins, &slot_keys, failure)?;
                    let before = steps.len();
                    steps.retain(|(r, _)| *r != row);
                    if steps.len() == before {
                        return Err(self.internal(format!(
                            "the user operator failed on row {row}, which it was not given"
                        )));
                    }
                }
            }
        };
        self.apply(&slot_keys, emitted, out)
    }

    /// Reports `failure` of `process` on `batch`: the row it failed on, once sent to the dead
    /// letters; an error that stops the query otherwise.
    fn failed_row(
        &mut self,
        batch: &RecordBatch,
        origins: Option<&RowOrigins>,
        slot_keys: &[&[u8]],
        failure: OperatorFailure,
    ) -> Result<usize, OperatorError> {
        let key = failure
            .slot
            .and_then(|s| slot_keys.get(s))
            .map(|k| self.key_text(k))
            .unwrap_or_default();
        let message = format!("{}{key}", failure.message);
        let Some(row) = failure.row else {
            return Err(OperatorError::Execution {
                operator: self.setup.name.clone(),
                message: format!("{} failed: {message}", self.named()),
            });
        };
        let origin = origins
            .and_then(|o| o.get(row))
            .map(|(input, line)| (input.to_string(), line));
        if failure.exhausted {
            return Err(self.errors.exhausted_row(0, &message, origin));
        }
        self.errors
            .reject_row(|| row_as_json(batch, row), 0, &message, origin)?;
        self.rejected += 1;
        Ok(row)
    }

    /// Keeps the states and timers `emitted` gives back for the keys of `slot_keys`, and
    /// sends its rows on after their keys' columns.
    fn apply(
        &mut self,
        slot_keys: &[&[u8]],
        emitted: Emitted,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let Emitted {
            states,
            timers,
            slots,
            columns,
        } = emitted;
        if states.len() != slot_keys.len() || timers.len() != slot_keys.len() {
            return Err(self.internal(format!(
                "the user operator gave back {} states and {} timers for {} keys",
                states.len(),
                timers.len(),
                slot_keys.len()
            )));
        }
        for ((key, state), timer) in slot_keys.iter().zip(states).zip(timers) {
            if let Some(old) = self.kept.get(*key).and_then(|k| k.timer) {
                self.timers.remove(&(old, Box::from(*key)));
            }
            match state {
                Some(state) => {
                    if let Some(t) = timer {
                        self.timers.insert((t, Box::from(*key)));
                    }
                    self.kept.insert(Box::from(*key), Kept { state, timer });
                }
                None => {
                    self.kept.remove(*key);
                }
            }
            if !self.dirty.contains(*key) {
                self.dirty.insert(Box::from(*key));
            }
        }
        if slots.is_empty() {
            return Ok(());
        }
        let name = &self.setup.name;
        let keys = self
            .setup
            .codec
            .rows_of_stored(slots.iter().map(|s| slot_keys[*s]), name)?;
        let mut all = self.setup.codec.columns(keys.iter(), name)?;
        all.extend(columns);
        let options =
            arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(slots.len()));
        let batch =
            RecordBatch::try_new_with_options(Arc::clone(&self.setup.schema), all, &options)
                .map_err(|e| self.internal(e))?;
        out.collect(0, batch)
    }

    /// Calls `on_timer` on every key whose timer `watermark` reached, earliest first.
    fn fire(&mut self, watermark: i64, out: &mut dyn Collector) -> Result<(), OperatorError> {
        self.fired_to = Some(watermark);
        let mut due: Vec<Box<[u8]>> = Vec::new();
        while self.timers.first().is_some_and(|(t, _)| *t <= watermark) {
            if let Some((_, key)) = self.timers.pop_first() {
                due.push(key);
            }
        }
        for chunk in due.chunks(TIMERS_PER_JOB) {
            let mut states = Vec::with_capacity(chunk.len());
            for key in chunk {
                // Fired: the key has no timer until the user's gives it one again.
                let Some(kept) = self.kept.get_mut(key) else {
                    return Err(self.internal("a timer of a key that holds no state"));
                };
                kept.timer = None;
                states.push(Some(kept.state.clone()));
            }
            let emitted = self
                .setup
                .user
                .on_timer(states, watermark)
                .map_err(|f| self.timer_failed(chunk, f))?;
            let keys: Vec<&[u8]> = chunk.iter().map(AsRef::as_ref).collect();
            self.apply(&keys, emitted, out)?;
        }
        Ok(())
    }

    fn timer_failed(&self, keys: &[Box<[u8]>], failure: OperatorFailure) -> OperatorError {
        let key = failure
            .slot
            .and_then(|s| keys.get(s))
            .map(|k| self.key_text(k))
            .unwrap_or_default();
        OperatorError::Execution {
            operator: self.setup.name.clone(),
            message: format!(
                "{} failed in on_timer{key}: {}. The query stops: a timer is no row that could go to the dead letters",
                self.named(),
                failure.message
            ),
        }
    }

    /// Writes the keys changed since the last checkpoint to the table (deleting those gone).
    fn flush(&mut self) -> Result<(), OperatorError> {
        for key in self.dirty.drain() {
            match self.kept.get(&key) {
                Some(k) => self.table.put(&key, STATE, &entry::encode(k))?,
                None => self.table.delete(&key, STATE)?,
            }
        }
        Ok(())
    }

    /// Rebuilds the index of the keys' timers.
    fn index_timers(&mut self) {
        self.timers = self
            .kept
            .iter()
            .filter_map(|(k, kept)| kept.timer.map(|t| (t, k.clone())))
            .collect();
    }
}

impl Operator for UserOp {
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
        self.process(&batch, origins.as_ref(), out)
    }

    fn wants_origins(&self) -> bool {
        true
    }

    fn handle_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector,
    ) -> Result<Option<Watermark>, OperatorError> {
        if self.setup.user.has_timers() && self.fired_to.is_none_or(|f| watermark.0 > f) {
            self.fire(watermark.0, out)?;
        }
        Ok(Some(watermark))
    }

    fn on_end_of_input(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
        if self.setup.user.has_timers() && self.fired_to != Some(Watermark::MAX.0) {
            self.fire(Watermark::MAX.0, out)?;
        }
        Ok(())
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
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
        let name = &self.setup.name;
        let kept = &mut self.kept;
        kept.clear();
        self.dirty.clear();
        retracting::restore(
            name,
            "user operator",
            &mut self.table,
            &mut self.ttl,
            state,
            |e: TableEntry<'_>| {
                kept.insert(e.group_key.into(), decode(name, &e)?);
                Ok(())
            },
        )?;
        self.index_timers();
        Ok(())
    }

    fn moves_key_groups(&self) -> bool {
        true
    }

    fn give_key_groups(
        &mut self,
        ranges: &[KeyGroupRange],
    ) -> Result<KeyGroupsGiven, OperatorError> {
        // The table first holds every key as it is in memory.
        self.flush()?;
        let pieces = self.table.export_each(ranges)?;
        let table = &self.table;
        self.kept
            .retain(|key, _| !retracting::given_away(table, ranges, key));
        self.index_timers();
        retracting::given(&self.setup.name, pieces, 0)
    }

    fn take_key_groups(
        &mut self,
        pieces: Vec<(KeyGroupRange, Vec<u8>)>,
        inline: Vec<Option<serde_json::Value>>,
    ) -> Result<(), OperatorError> {
        retracting::taken(&self.setup.name, 0, inline)?;
        let name = &self.setup.name;
        let mut incoming = Incoming::for_ttl(&self.ttl);
        for (range, bytes) in pieces {
            let kept = &mut self.kept;
            self.table
                .import_scanned(range, &bytes, |e: TableEntry<'_>| {
                    if incoming.take(name, &e)? {
                        return Ok(());
                    }
                    if kept.insert(e.group_key.into(), decode(name, &e)?).is_some() {
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
        self.index_timers();
        Ok(())
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        let mut metrics = vec![
            ("keys", self.kept.len() as u64),
            ("timers", self.timers.len() as u64),
            ("rows_rejected", self.rejected),
        ];
        metrics.extend(self.table.size_bytes().map(|b| ("state_backend_bytes", b)));
        metrics
    }

    fn is_stateless(&self) -> bool {
        false
    }
}

/// What a checkpointed entry holds for its key.
fn decode(name: &str, e: &TableEntry<'_>) -> Result<Kept, OperatorError> {
    (e.sub_key == STATE)
        .then(|| entry::decode(e.value))
        .flatten()
        .ok_or_else(|| OperatorError::Execution {
            operator: name.to_string(),
            message: format!(
                "the checkpoint's state of this user operator holds an entry in {} that is not a key's state: the state is corrupt, or the query changed its input; restore from an earlier checkpoint",
                e.kg
            ),
        })
}
