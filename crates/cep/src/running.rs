//! The running pattern operator: rows wait until the watermark passes them, then go in
//! event-time order to their partition's matcher; matches become output rows.
//!
//! A change of `pattern`, `define` or `within` ([`Operator::set_param`], checked in
//! `change.rs`) is a switch between two definitions at one input position (the barrier that
//! carried it): every row that arrived before the switch is matched under the old
//! definition, also those the watermark has not released yet, as if the input ended there —
//! partial matches still open are dropped (not reported as timed out: the time bound did not
//! end them), and the matches they held back are emitted. From the switch on, every
//! partition starts afresh under the new definition: `PREV` does not reach rows before the
//! switch, `MATCH_NUMBER()` counts from 1 again. The output is that of the old definition
//! over the input before the switch followed by that of the new one over the input after it.
//! `set_param` only checks and records the new definition; the switch, which emits rows and
//! can fail as a row can, happens at the next point with an output
//! ([`Operator::handle_param_changes`], which the runtime calls right after the barrier, or
//! the next batch, watermark or end of input).

#[cfg(test)]
mod cells_of_tests;
#[cfg(test)]
mod deadline_tests;
#[cfg(test)]
mod exhaustion_tests;
#[cfg(test)]
mod grown_measures_tests;
mod handoff;
#[cfg(test)]
mod memory_tests;
#[cfg(test)]
mod shed_tests;
#[cfg(test)]
mod stop_tests;
mod sweep;
#[cfg(test)]
mod sweep_tests;
#[cfg(test)]
mod test_op;
mod waiting;

use std::sync::Arc;

use anduin_operator_api::rescale::{agreed, combine_moved, Combine, RescaleError, RescaleMeta};
use anduin_state::KeyGroupRange;
use anduin_types::{ColumnType, SnapshotKind, Watermark};
use arrow::array::{ArrayRef, RecordBatch};
use serde::{Deserialize, Serialize};

use super::cells::{out_column, BatchCells};
use super::key::Key;
use super::matcher::{Outcome, Refused, Row, Scratch, Starts, TooManyThreads};
use super::order::tie_order;
use super::output::{render, Figures};
use super::store::{Loaded, Store, StoreError};
use super::value::Value;
use super::Setup;
use anduin_operator_api::keys::KeyEncoder;
use anduin_operator_api::null_time::reject_null_times;
use anduin_operator_api::{
    BuildContext, Collector, ControlError, DeadLetter, Handed, KeyGroupsGiven, Operator,
    OperatorError, RestoreIn, RowErrors, SnapshotOut, SpreadRole, StopDeadline,
};
use sweep::Sweep;
use waiting::{Pending, Waiting};

/// Output rows are sent in batches of at most this many.
const OUT_BATCH: usize = 8192;

/// What a pattern operator keeps in a checkpoint's manifest.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    /// The watermark of the input.
    watermark: i64,
    /// Late rows dropped so far.
    late: u64,
    /// The sequence number of the last row accepted.
    seq: u64,
    /// The last watermark forwarded (absent in checkpoints written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    forwarded: Option<i64>,
    /// The instance only extends the partial matches handed to it (see `handoff.rs`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    extend_only: bool,
    /// The input columns a stored row holds (`Setup::cells_of`); absent in checkpoints
    /// written before rows kept only the columns read: every column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cells: Option<Vec<usize>>,
}

impl RescaleMeta for Meta {
    /// Waiting rows keep their numbers (stored under their partition key, which one old
    /// instance held); rows to come are numbered after the last of every instance.
    fn combine(parts: Vec<Self>, how: Combine) -> Result<Self, RescaleError> {
        Ok(Meta {
            watermark: agreed("watermarks", parts.iter().map(|p| p.watermark))?,
            late: how.counter(parts.iter().map(|p| p.late)),
            seq: parts.iter().map(|p| p.seq).max().unwrap_or(0),
            forwarded: agreed("forwarded watermarks", parts.iter().map(|p| p.forwarded))?,
            extend_only: agreed("spread roles", parts.iter().map(|p| p.extend_only))?,
            // Every instance of one run keeps the same columns.
            cells: parts.first().and_then(|p| p.cells.clone()),
        })
    }
}

/// Whether the rows of a checkpoint, which hold the input columns `written` (absent: every
/// one of the `columns`, as before rows kept only those read), are rows of a pattern that
/// keeps `cells_of`: `Err` says why not (a row read with other columns would be misread).
fn rows_fit(written: Option<&[usize]>, cells_of: &[usize], columns: usize) -> Result<(), String> {
    let every: Vec<usize> = (0..columns).collect();
    let written = written.unwrap_or(&every);
    if written == cells_of {
        return Ok(());
    }
    Err(format!(
        "the checkpoint's rows hold the input columns {written:?}, and this pattern keeps {cells_of:?} of a row: the checkpoint was written by another version of anduin (rows held every column before 2026-12-05, in the input's order before 2026-12-06) or for another query; resume it with the anduin that wrote it, or start without it"
    ))
}

/// Whether [`PatternOp::release`] fed every row it was to feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fed {
    /// Every row before the watermark (every row, at the end).
    All,
    /// It gave up after a stop (see [`PatternOp::deadline`]): the rows not fed still wait,
    /// each partition is whole (as if the input had ended at the last row fed).
    GaveUp,
}

/// Whether [`PatternOp::release`] may give up after a stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnStop {
    GiveUp,
    Finish,
}

/// A running `pattern` operator.
pub(crate) struct PatternOp {
    setup: Arc<Setup>,
    /// The definition a change asked for, which the operator switches to at its next point
    /// with an output (see the module's documentation).
    next: Option<Arc<Setup>>,
    /// The last watermark forwarded: a change of `within` moves the hold-back, never the
    /// watermark back.
    forwarded: i64,
    /// Partition keys as bytes, as the exchange routes by (`None`: one partition).
    keys: Option<KeyEncoder>,
    store: Store,
    /// Rows waiting for the watermark, the next to release first: a watermark costs the
    /// rows it releases, not the rows that wait (4 s of events in a Nexmark run).
    pending: Waiting,
    seq: u64,
    /// The pending rows numbered up to this have an entry in the store (a snapshot wrote
    /// them); the others do not.
    stored_up_to: u64,
    watermark: i64,
    late: u64,
    /// Where rows without an event time go.
    dead_letter: Arc<DeadLetter>,
    /// What rows a condition fails on, and output rows a measure fails on, do.
    errors: RowErrors,
    outcomes: Vec<Outcome>,
    /// The matcher's working space, shared by the partitions.
    scratch: Scratch,
    main: Vec<Vec<Value>>,
    timeouts: Vec<Vec<Value>>,
    figures: Figures,
    /// Its role among the copies that spread partial matches (`None`: it never took part).
    role: Option<SpreadRole>,
    /// When it gives up feeding rows after the run was asked to stop: a pattern whose
    /// partial matches pile up can take minutes over the rows read (issue 18, M3: an hour
    /// after a SIGTERM), and a row fed costs every partial match of its partition. It checks
    /// between rows, where each partition is whole.
    deadline: StopDeadline,
    /// Whether the run takes checkpoints: rows it gives up matching at the end of its input
    /// after a stop are then matched by a run resumed from the last checkpoint (see
    /// [`PatternOp::finish_input`]).
    checkpointing: bool,
    /// Rows read that it gave up matching at the end of a stopped run (the `given_up_rows`
    /// metric, there only when not 0: the run's last words say so).
    given_up: u64,
    /// With checkpoints, it gave up the end of its input after a stop: the rows not fed
    /// still wait and the partial matches are not ended, and no checkpoint may take it for
    /// done (see [`Operator::gave_up`]).
    stopped_short: bool,
    /// Tests: how many partitions watermarks visited, and whether a watermark visits every
    /// partition with a partial match (as before the queue of deadlines) instead of the
    /// queued ones: what the queue must agree with.
    #[cfg(test)]
    visits: u64,
    #[cfg(test)]
    visit_all: bool,
    /// Tests: the end of the input feeds every row before it ends any partial match, as
    /// before [`PatternOp::sweep`]: what the sweep must agree with.
    #[cfg(test)]
    no_sweep: bool,
}

fn err(operator: &str, e: impl std::fmt::Display) -> OperatorError {
    OperatorError::Execution {
        operator: operator.to_string(),
        message: e.to_string(),
    }
}

fn store_error(operator: &str, e: StoreError) -> OperatorError {
    match e {
        StoreError::Table(e) => e.into(),
        StoreError::Corrupt(what, kg) => err(
            operator,
            format!(
                "the checkpoint's state holds a corrupt {what} in {kg}: restore from an earlier checkpoint"
            ),
        ),
        StoreError::UnknownEntry(kg, sub_key) => err(
            operator,
            format!(
                "the checkpoint's state holds an entry in {kg} with sub-key {sub_key:02x?}, neither \
                 a partition's (`p`) nor a waiting row's (`w` and a sequence number): the state \
                 is corrupt; restore from an earlier checkpoint"
            ),
        ),
        StoreError::AlreadyHeld(kg) => OperatorError::internal(
            operator,
            format!("a partition of {kg} handed over at a rescale is held here already; this is a bug in anduin's rescale"),
        ),
        StoreError::Replay(Refused::TooManyThreads(e)) => too_many(operator, e),
        StoreError::Replay(Refused::Condition { var, error, .. }) => err(
            operator,
            format!(
                "replaying a partition of the checkpoint, the condition of variable {var} failed on a row it had taken before: {}; restore from an earlier checkpoint",
                error.message()
            ),
        ),
    }
}

fn too_many(operator: &str, e: TooManyThreads) -> OperatorError {
    let limit = super::MAX_THREADS;
    let what = if e.attempts > 1 {
        format!(
            "the {} matches starting at row {} of its partition and after have {} partial matches in flight between them, more than {limit} beyond one each",
            e.attempts, e.start, e.threads
        )
    } else {
        format!(
            "a match starting at row {} of its partition has {} partial matches in flight, more than {limit}",
            e.start, e.threads
        )
    };
    err(
        operator,
        format!(
            "the pattern is too ambiguous: {what}; make the variables' conditions exclude each other or add `within`"
        ),
    )
}

impl PatternOp {
    /// A pattern operator of `setup`, built with `ctx`: rejected rows go to its dead letters;
    /// with the LSM backend, its working files go in its backend directory (a temporary one if
    /// none).
    pub(crate) fn new(setup: Arc<Setup>, ctx: &BuildContext) -> Result<Self, OperatorError> {
        let dir = ctx.backend_dir(&setup.name);
        let dead_letter = Arc::clone(&ctx.dead_letter);
        let errors = RowErrors::new(&setup.name, setup.sites.clone(), setup.on_error, ctx);
        let keys = if setup.partition.is_empty() {
            None
        } else {
            let types = setup
                .partition
                .iter()
                .map(|c| setup.input.field(*c).data_type().clone());
            Some(KeyEncoder::new(types).map_err(|e| err(&setup.name, e))?)
        };
        let store = Store::new(&setup.name, setup.backend, dir, setup.cache);
        Ok(Self {
            setup,
            next: None,
            forwarded: i64::MIN,
            keys,
            store,
            pending: Waiting::default(),
            seq: 0,
            stored_up_to: 0,
            watermark: i64::MIN,
            late: 0,
            dead_letter,
            errors,
            outcomes: Vec::new(),
            scratch: Scratch::default(),
            main: Vec::new(),
            timeouts: Vec::new(),
            figures: Figures::default(),
            role: None,
            deadline: StopDeadline::new(ctx.stop.clone(), Arc::clone(&ctx.clock)),
            checkpointing: ctx.checkpointing,
            given_up: 0,
            stopped_short: false,
            #[cfg(test)]
            visits: 0,
            #[cfg(test)]
            visit_all: false,
            #[cfg(test)]
            no_sweep: false,
        })
    }

    /// Takes the rows of `batch` to wait for the watermark (those behind it are late, when
    /// `check_late`): each a reference to the batch's columns kept (see [`BatchCells`]) with
    /// its partition key and event time. A row without an event time is counted late (none
    /// is left: such rows go to the dead letters first).
    fn accept(&mut self, batch: &RecordBatch, check_late: bool) -> Result<(), OperatorError> {
        let name = &self.setup.name;
        let n = batch.num_rows();
        let from = Arc::new(
            BatchCells::new(batch, &self.setup.cells_of, &self.setup.types)
                .map_err(|e| err(name, e))?,
        );
        let keys = match &self.keys {
            None => None,
            Some(conv) => {
                let cols: Vec<ArrayRef> = self
                    .setup
                    .partition
                    .iter()
                    .map(|c| Arc::clone(batch.column(*c)))
                    .collect();
                Some(conv.encode(&cols).map_err(|e| err(name, e))?)
            }
        };
        let index = |i: usize| {
            u32::try_from(i).map_err(|_| {
                err(
                    name,
                    format!("a batch of {n} rows: a pattern takes batches of fewer than 2^32"),
                )
            })
        };
        for i in 0..n {
            let ts = match from.cell(self.setup.order_cell, i) {
                Value::Int(ts) if !check_late || ts >= self.watermark => ts,
                _ => {
                    self.late += 1;
                    continue;
                }
            };
            let key = match &keys {
                None => Key::from(&[][..]),
                Some(k) => Key::from(k.row(i).as_ref()),
            };
            self.seq += 1;
            self.pending.push(Pending {
                seq: self.seq,
                key,
                ts,
                from: Arc::clone(&from),
                index: index(i)?,
            });
        }
        self.figures.peak_pending = self.figures.peak_pending.max(self.pending.len());
        Ok(())
    }

    /// Feeds the rows before `watermark` (all rows: `None`) to their partitions in order: by
    /// event time, then by the tie-breakers of `order_by`, then in arrival order. At the
    /// `end` of the input, as it feeds them it forgets the partitions whose partial matches
    /// have ended with nothing to report and which no row to come reaches (see `sweep.rs`).
    /// Where `on_stop` lets it, it gives up between two rows once the run has been asked to
    /// stop for [`anduin_operator_api::GRACE`] (see [`PatternOp::deadline`]).
    fn release(
        &mut self,
        watermark: Option<i64>,
        end: bool,
        on_stop: OnStop,
    ) -> Result<Fed, OperatorError> {
        let setup = Arc::clone(&self.setup);
        let width = self.row_width();
        let sweeps = end
            && watermark.is_none()
            && setup.pattern.within.is_some()
            && setup.timeout_port.is_none()
            && self.role.is_none();
        #[cfg(test)]
        let sweeps = sweeps && !self.no_sweep;
        let mut sweep =
            sweeps.then(|| Sweep::new(self.pending.len(), self.pending.iter().map(|p| &p.key)));
        let mut fed = Fed::All;
        while let Some(p) = self.pending.peek() {
            if watermark.is_some_and(|w| p.ts >= w) {
                break;
            }
            if on_stop == OnStop::GiveUp && self.deadline.passed() {
                fed = Fed::GaveUp;
                break;
            }
            if let Some(sweep) = &mut sweep {
                let ts = p.ts;
                self.sweep(sweep, ts)?;
            }
            let p = self.pending.pop().expect("peeked");
            if let Some(sweep) = &mut sweep {
                sweep.fed(&p.key);
            }
            if setup.ties.is_empty() {
                let row = p.row(width);
                self.feed(p, row)?;
                continue;
            }
            // The rows of one event time leave the heap together (a watermark passes all of
            // them or none) in arrival order: a stable sort by the tie-breakers (which a row
            // keeps: they are read).
            let mut run = vec![p];
            while let Some(q) = self.pending.peek() {
                if q.ts != run[0].ts {
                    break;
                }
                let q = self.pending.pop().expect("peeked");
                if let Some(sweep) = &mut sweep {
                    sweep.fed(&q.key);
                }
                run.push(q);
            }
            let mut run: Vec<(Pending, Row)> = run
                .into_iter()
                .map(|p| {
                    let row = p.row(width);
                    (p, row)
                })
                .collect();
            run.sort_by(|a, b| tie_order(&setup.ties, &a.1.cells, &b.1.cells));
            for (p, row) in run {
                self.feed(p, row)?;
            }
        }
        if let Some(sweep) = sweep {
            self.store.requeue(sweep.aside);
        }
        Ok(fed)
    }

    /// How many cells a row fed to a partition gets: those something reads when the others
    /// are only for a dead letter that can show the row only while it is taken (see
    /// `Setup::shed`; they are added if it ends a match), else all.
    fn row_width(&self) -> usize {
        if self.role.is_none() {
            self.setup.kept()
        } else {
            self.setup.cells_of.len()
        }
    }

    /// Feeds one released row (`p`, whose cells `row` holds, all or those read) to its
    /// partition.
    fn feed(&mut self, p: Pending, row: Row) -> Result<(), OperatorError> {
        let setup = Arc::clone(&self.setup);
        if p.seq <= self.stored_up_to {
            self.store
                .forget_waiting(&p.key, p.seq)
                .map_err(|e| store_error(&setup.name, e))?;
        }
        let extend = self.extend_only();
        let mut slot = if extend {
            // Only partitions with partial matches handed to it matter.
            match self.store.live_mut(&p.key) {
                Some(slot) => slot,
                None => return Ok(()),
            }
        } else {
            self.store
                .get_mut(&setup.pattern, &p.key)
                .map_err(|e| store_error(&setup.name, e))?
        };
        let part = &mut *slot.part;
        let starts = if extend { Starts::Never } else { Starts::Every };
        let before = part.attempts_kept();
        let width = row.cells.len();
        let lean = width < p.from.width();
        match part.push_starting(
            &setup.pattern,
            &mut self.scratch,
            row,
            &mut self.outcomes,
            starts,
        ) {
            // A row that ends a match may be shown whole by a dead letter of a measure of
            // it, when the match is reported (now or later): it gets every cell.
            Ok(()) if lean && self.scratch.ended_match() => {
                part.complete_last(p.from.cells_from(p.index as usize, width));
            }
            Ok(()) => {}
            Err(Refused::TooManyThreads(e)) => return Err(too_many(&setup.name, e)),
            // The partition is as if the row had never arrived.
            Err(Refused::Condition { var, error, .. }) => {
                if part.is_blank(&setup.pattern) || (extend && part.is_idle()) {
                    self.figures.kept(part, 0, part.rows_kept());
                    self.store
                        .forget(&setup.pattern, &p.key)
                        .map_err(|e| store_error(&setup.name, e))?;
                }
                let site = setup.define_site.get(var).copied().flatten();
                if error.is_exhausted() {
                    return Err(self.errors.exhausted_row(
                        site.unwrap_or(usize::MAX),
                        error.message(),
                        None,
                    ));
                }
                self.errors.reject_row(
                    || setup.row_json(&p.cells()),
                    site.unwrap_or(usize::MAX),
                    error.message(),
                    None,
                )?;
                return Ok(());
            }
        }
        if !self.outcomes.is_empty() {
            self.figures.outcomes(&self.outcomes);
            render(
                &setup,
                part,
                &mut self.outcomes,
                &mut self.main,
                &mut self.timeouts,
                &self.errors,
            )?;
        }
        let dropped = part.trim(&setup.pattern);
        self.figures.kept(part, 1, dropped);
        self.figures.partial(before, part);
        if part.is_blank(&setup.pattern) || (extend && part.is_idle()) {
            self.figures.kept(part, 0, part.rows_kept());
            self.store
                .forget(&setup.pattern, &p.key)
                .map_err(|e| store_error(&setup.name, e))?;
        } else {
            slot.queue(&setup.pattern, &p.key);
        }
        Ok(())
    }

    /// The time up to which every row has been fed to its partition: the watermark, or the
    /// earliest row a stop gave up feeding behind it (it and the rows after it are still to
    /// come: a partial match whose time bound has not passed it may take them).
    fn fed_to(&self) -> i64 {
        self.pending
            .peek()
            .map_or(self.watermark, |p| p.ts.min(self.watermark))
    }

    /// Ends the attempts whose time bound has passed: those of the partitions queued by
    /// then (see `store/deadlines.rs`), each queued again at its next bound.
    fn advance(&mut self, watermark: i64) -> Result<(), OperatorError> {
        if self.setup.pattern.within.is_none() {
            return Ok(());
        }
        #[cfg(test)]
        if self.visit_all {
            let mut busy = Vec::new();
            self.store.each_live(|key, part| {
                if !part.is_idle() {
                    busy.push(Key::from(key));
                }
                false
            });
            for key in busy {
                self.visit(&key, watermark)?;
            }
            return Ok(());
        }
        while let Some(key) = self.store.next_due(watermark) {
            self.visit(&key, watermark)?;
        }
        Ok(())
    }

    /// At the end of the input, ends the attempts of every partition with a time bound still
    /// to pass, in the order of their keys: the order of the times they are queued at
    /// depends on the partitions' history (a restored one is queued at its next bound, one
    /// that ran on at an earlier one it outlived), and the end must report in one order on
    /// every run.
    fn end_time_bounds(&mut self) -> Result<(), OperatorError> {
        if self.setup.pattern.within.is_none() {
            return Ok(());
        }
        let mut due = Vec::new();
        while let Some(key) = self.store.next_due(i64::MAX) {
            due.push(key);
        }
        due.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        for key in due {
            self.visit(&key, i64::MAX)?;
        }
        Ok(())
    }

    /// Ends the attempts of partition `key` whose time bound passed by `watermark`; forgets
    /// the partition if that leaves it blank, or else queues it at its next bound.
    fn visit(&mut self, key: &[u8], watermark: i64) -> Result<(), OperatorError> {
        #[cfg(test)]
        {
            self.visits += 1;
        }
        let setup = Arc::clone(&self.setup);
        let extend = self.extend_only();
        let Some(mut slot) = self.store.live_mut(key) else {
            return Ok(());
        };
        let part = &mut *slot.part;
        let before = part.attempts_kept();
        part.advance(&setup.pattern, watermark, &mut self.outcomes);
        self.figures.partial(before, part);
        if !self.outcomes.is_empty() {
            self.figures.outcomes(&self.outcomes);
            render(
                &setup,
                part,
                &mut self.outcomes,
                &mut self.main,
                &mut self.timeouts,
                &self.errors,
            )?;
            let dropped = part.trim(&setup.pattern);
            self.figures.kept(part, 0, dropped);
        }
        if part.is_blank(&setup.pattern) || (extend && part.is_idle()) {
            self.figures.kept(part, 0, part.rows_kept());
            self.store
                .forget(&setup.pattern, key)
                .map_err(|e| store_error(&setup.name, e))?;
        } else {
            let due = part.next_deadline(&setup.pattern, watermark);
            slot.queue_at(key, due);
        }
        Ok(())
    }

    /// The input is over (read to its end, or ended): every row waiting for the watermark is
    /// matched, the attempts end (those waiting at `$` complete, the others fail), and what
    /// they found goes out. Finds nothing to do when called again. Returns whether it did
    /// all that ([`Fed::All`]) or gave up after a stop.
    ///
    /// A run asked to stop gives up feeding the rows still waiting a
    /// [`anduin_operator_api::GRACE`] later (matching what was read can take hours: issue 18).
    /// Without checkpoints, the partial matches then end as if the input had ended at the
    /// last row fed, and the rows not fed are dropped, said in a warning. With checkpoints,
    /// neither happens (nothing truncated goes out): the operator stays as it was, and no
    /// checkpoint takes the end of its input for done (see [`Operator::gave_up`]), so a run
    /// resumed from the last checkpoint matches those rows; a warning says so.
    fn finish_input(&mut self, out: &mut dyn Collector) -> Result<Fed, OperatorError> {
        self.take_effect(out)?;
        if self.release(None, true, OnStop::GiveUp)? == Fed::GaveUp {
            let rows = self.pending.len();
            if self.checkpointing {
                if !self.stopped_short {
                    tracing::warn!(
                        operator = %self.setup.name,
                        rows,
                        "the run was asked to stop: the pattern gave up matching the rows still waiting {}s later; run again with the same checkpoints, the query matches them",
                        anduin_operator_api::GRACE.as_secs()
                    );
                }
                self.stopped_short = true;
                self.given_up = rows as u64;
                self.flush(out)?;
                return Ok(Fed::GaveUp);
            }
            tracing::warn!(
                operator = %self.setup.name,
                rows,
                "the run was asked to stop: the pattern gave up matching the rows still waiting {}s later; its output lacks their matches",
                anduin_operator_api::GRACE.as_secs()
            );
            self.given_up += rows as u64;
            self.pending.clear();
        }
        self.end_time_bounds()?;
        let setup = Arc::clone(&self.setup);
        for part in self.store.all_live() {
            let before = part.attempts_kept();
            part.finish(&setup.pattern, &mut self.outcomes);
            self.figures.partial(before, part);
            self.figures.outcomes(&self.outcomes);
            render(
                &setup,
                part,
                &mut self.outcomes,
                &mut self.main,
                &mut self.timeouts,
                &self.errors,
            )?;
            let dropped = part.trim(&setup.pattern);
            self.figures.kept(part, 0, dropped);
        }
        self.flush(out)?;
        Ok(Fed::All)
    }

    /// Whether a change is still to take effect.
    #[cfg(test)]
    pub(crate) fn switching(&self) -> bool {
        self.next.is_some()
    }

    /// Switches to the definition a change asked for, if one did (see the module's
    /// documentation), and emits what the old one still had.
    fn take_effect(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
        if self.next.is_some() {
            self.switch()?;
            self.flush(out)?;
        }
        Ok(())
    }

    /// Ends the current definition as the end of the input would, without reporting time
    /// outs (the partial matches are dropped), forgets every partition and waiting row, and
    /// starts [`PatternOp::next`]. The old definition's output is left in `main` and
    /// `timeouts`, for the caller to flush.
    fn switch(&mut self) -> Result<(), OperatorError> {
        let Some(next) = self.next.take() else {
            return Ok(());
        };
        // The rows before the switch are the old definition's: all of them are fed.
        self.release(None, false, OnStop::Finish)?;
        let old = Arc::clone(&self.setup);
        for part in self.store.all_live() {
            part.finish(&old.pattern, &mut self.outcomes);
            self.figures.outcomes(&self.outcomes);
            render(
                &old,
                part,
                &mut self.outcomes,
                &mut self.main,
                &mut self.timeouts,
                &self.errors,
            )?;
        }
        self.store.clear().map_err(|e| store_error(&old.name, e))?;
        self.figures.kept = 0;
        self.figures.partial_matches = 0;
        self.stored_up_to = self.seq;
        self.errors.set_exprs(next.sites.clone());
        tracing::info!(operator = %old.name, "the pattern switched to its new definition");
        self.setup = next;
        Ok(())
    }

    /// What it keeps inline in a checkpoint.
    fn meta(&self) -> Meta {
        Meta {
            watermark: self.watermark,
            late: self.late,
            seq: self.seq,
            forwarded: Some(self.forwarded),
            extend_only: self.extend_only(),
            cells: Some(self.setup.cells_of.clone()),
        }
    }

    /// Writes the partitions changed and the rows that started waiting since the last
    /// snapshot to the table: then every waiting row has an entry there.
    fn save(&mut self) -> Result<(), OperatorError> {
        let stored_up_to = self.stored_up_to;
        let new_waiting = self
            .pending
            .iter()
            .filter(|p| p.seq > stored_up_to)
            .map(|p| (p.seq, &p.key[..], p.row(usize::MAX)));
        self.store
            .save(new_waiting)
            .map_err(|e| store_error(&self.setup.name, e))?;
        self.stored_up_to = self.seq;
        Ok(())
    }

    /// What a restore or a take read back goes on: the partitions rebuilt catch up with the
    /// watermark (reporting nothing: they were at it), and the waiting rows wait again,
    /// keeping their numbers (their entries are stored under them); rows to come are numbered
    /// after the last.
    fn settle(&mut self, loaded: Loaded) -> Result<(), OperatorError> {
        let pattern = &self.setup.pattern;
        // Rows a stop gave up wait behind the watermark (in the checkpoint too): the
        // partitions were fed up to the earliest of them (see [`PatternOp::fed_to`]).
        let earliest = (loaded.waiting.iter().map(|(_, _, row)| row.ts))
            .chain(self.pending.peek().map(|p| p.ts))
            .min();
        let watermark = earliest.map_or(self.watermark, |t| t.min(self.watermark));
        let (outcomes, figures) = (&mut self.outcomes, &mut self.figures);
        self.store.each_of(&loaded.partitions, |part| {
            part.advance(pattern, watermark, outcomes);
            debug_assert!(outcomes.is_empty(), "a restore reports nothing again");
            outcomes.clear();
            figures.kept(part, part.rows_kept(), 0);
            figures.partial(0, part);
        });
        let types: Vec<ColumnType> = (self.setup.cells_of.iter())
            .map(|c| self.setup.types[*c])
            .collect();
        let name = &self.setup.name;
        let from = Arc::new(
            BatchCells::of_rows(
                loaded.waiting.iter().map(|(_, _, row)| &row.cells[..]),
                &types,
            )
            .map_err(|e| err(name, e))?,
        );
        for (i, (seq, key, row)) in loaded.waiting.into_iter().enumerate() {
            self.seq = self.seq.max(seq);
            self.pending.push(Pending {
                seq,
                key,
                ts: row.ts,
                from: Arc::clone(&from),
                index: u32::try_from(i).map_err(|_| {
                    err(
                        name,
                        "a checkpoint with 2^32 rows or more waiting for the watermark",
                    )
                })?,
            });
        }
        self.stored_up_to = self.seq;
        self.store
            .queue_all(|part| part.next_deadline(pattern, watermark));
        Ok(())
    }

    /// Refuses a live rescale's move where it cannot be done directly: a change still to
    /// take effect (the runtime lets changes take effect at the barrier first), or an
    /// instance among copies that spread partial matches (those go the runtime's snapshot
    /// way: see [`Operator::moves_key_groups`]).
    fn check_movable(&self) -> Result<(), OperatorError> {
        let why = if self.next.is_some() {
            "key groups were to move while a change of the pattern was still to take effect (the runtime lets changes take effect at the barrier first)"
        } else if self.role.is_some() {
            "key groups were to move directly out of or into a copy that spreads partial matches (those move by snapshot)"
        } else {
            return Ok(());
        };
        Err(OperatorError::internal(&self.setup.name, why))
    }

    fn flush(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
        let rows = std::mem::take(&mut self.main);
        self.emit(0, rows, out)?;
        let rows = std::mem::take(&mut self.timeouts);
        if let Some(port) = self.setup.timeout_port {
            self.emit(port, rows, out)?;
        }
        Ok(())
    }

    fn emit(
        &self,
        port: usize,
        rows: Vec<Vec<Value>>,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        for chunk in rows.chunks(OUT_BATCH) {
            let columns: Vec<ArrayRef> = self
                .setup
                .out_types
                .iter()
                .enumerate()
                .map(|(c, t)| out_column(chunk.iter().map(|r| &r[c]), *t))
                .collect::<Result<_, _>>()
                .map_err(|e| err(&self.setup.name, e))?;
            let batch = RecordBatch::try_new(Arc::clone(&self.setup.schema), columns)
                .map_err(|e| err(&self.setup.name, e))?;
            out.collect(port, batch)?;
        }
        Ok(())
    }
}

impl Operator for PatternOp {
    fn name(&self) -> &str {
        &self.setup.name
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        self.take_effect(out)?;
        let batch =
            reject_null_times(batch, self.setup.order, &self.setup.name, &self.dead_letter)?;
        self.accept(&batch, true)
    }

    fn handle_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector,
    ) -> Result<Option<Watermark>, OperatorError> {
        self.take_effect(out)?;
        if watermark.0 > self.watermark {
            self.watermark = watermark.0;
            if watermark == Watermark::MAX {
                // The end of event time: no row can come in time any more, so the partial
                // matches end now, as at the end of input, and what they find goes out
                // before the +∞ does (after it, an event-time operator downstream would take
                // it for late, and a lookup join whose side this is for a row after the end).
                self.finish_input(out)?;
            } else {
                // Given up after a stop, the rows not fed wait on (a last checkpoint keeps
                // them), and the time bounds they could still meet do not end.
                self.release(Some(watermark.0), false, OnStop::GiveUp)?;
                self.advance(self.fed_to())?;
                self.flush(out)?;
            }
            self.store
                .spill()
                .map_err(|e| store_error(&self.setup.name, e))?;
        }
        // Rows behind the watermark wait only when a stop gave up feeding them (also in the
        // checkpoint this run resumed from): their matches are still to come, and the
        // watermark does not go on past them.
        if self.pending.peek().is_some_and(|p| p.ts < self.watermark) {
            return Ok(Some(Watermark(self.forwarded)));
        }
        // A match is emitted up to `within` after its first row: hold the watermark back by
        // that much so that downstream event-time operators do not see its times as late.
        // (After a change of `within` to a longer one, the watermark waits where it is: the
        // matches of the new definition start at rows after the switch, none of them behind
        // the watermark the operator had then.)
        let held = match self.setup.pattern.within {
            Some(w) if watermark != Watermark::MAX => watermark.0.saturating_sub(w),
            _ => watermark.0,
        };
        self.forwarded = self.forwarded.max(held);
        Ok(Some(Watermark(self.forwarded)))
    }

    fn on_end_of_input(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
        self.finish_input(out)?;
        if self.late > 0 {
            tracing::info!(operator = %self.setup.name, late_rows = self.late, "late rows dropped (behind the watermark)");
        }
        Ok(())
    }

    /// No row will come: every row waiting for the watermark is matched, and every partial
    /// match ends, as at the end of input (after an exhausted input the next watermark is
    /// +∞, and then the end), so the output is exhausted too. What the end does after this
    /// finds nothing left. The watermark stays where it is (event time is not over: a
    /// checkpoint, or an instance rescaled beside this one, must agree on it).
    fn on_input_exhausted(
        &mut self,
        _input: usize,
        out: &mut dyn Collector,
    ) -> Result<bool, OperatorError> {
        Ok(self.finish_input(out)? == Fed::All)
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        if self.next.is_some() {
            return Err(OperatorError::internal(
                &self.setup.name,
                "a snapshot was asked for while a change of the pattern was still to take effect (the runtime lets changes take effect before every snapshot)",
            ));
        }
        out.inline_typed(&self.setup.name, &self.meta())?;
        let kind = if out.full_due() {
            SnapshotKind::Full
        } else {
            SnapshotKind::Changes
        };
        self.save()?;
        let stream = out.stream(kind)?;
        self.store
            .snapshot(kind, stream)
            .map_err(|e| store_error(&self.setup.name, e))
    }

    fn rescale_inline(
        &self,
        parts: &[Option<serde_json::Value>],
        how: Combine,
    ) -> Result<Option<serde_json::Value>, anduin_operator_api::RescaleError> {
        anduin_operator_api::rescale::rescale_inline_as::<Meta>(parts, how)
    }

    /// Changes applied before the checkpoint's snapshot was taken come before the restore
    /// (the runtime applies them first): the state is then that of the new definition, and
    /// its partitions replay under it.
    fn restore(&mut self, mut state: RestoreIn) -> Result<(), OperatorError> {
        let name = self.setup.name.clone();
        // On a new instance, with nothing to end or emit.
        self.switch()?;
        debug_assert!(self.main.is_empty() && self.timeouts.is_empty());
        let meta: Meta = state.inline_as(&name)?;
        rows_fit(
            meta.cells.as_deref(),
            &self.setup.cells_of,
            self.setup.types.len(),
        )
        .map_err(|why| err(&name, why))?;
        self.watermark = meta.watermark;
        self.late = meta.late;
        self.forwarded = meta.forwarded.unwrap_or(i64::MIN);
        if meta.extend_only {
            self.set_role(SpreadRole::Extend)?;
        }
        let Some((full, changes)) = state.files.split_first_mut() else {
            return Err(err(
                &name,
                "the checkpoint has no state file for this pattern",
            ));
        };
        let mut changes: Vec<&mut dyn std::io::Read> = changes
            .iter_mut()
            .map(|f| f as &mut dyn std::io::Read)
            .collect();
        let loaded = self
            .store
            .restore(&self.setup.pattern, full, &mut changes)
            .map_err(|e| store_error(&name, e))?;
        self.seq = meta.seq;
        self.pending.clear();
        self.settle(loaded)
    }

    /// Partitions move with their key groups, and so do their rows waiting for the
    /// watermark (stored under the partition key); what is not split by key stays or is
    /// agreed (see [`Meta`]'s combine): MATCH_NUMBER() counts per partition, in its entry.
    /// Copies that spread partial matches move by snapshot.
    fn moves_key_groups(&self) -> bool {
        self.role.is_none()
    }

    /// Writes what changed to the table, exports the ranges' entries and drops their
    /// partitions and waiting rows from memory.
    fn give_key_groups(
        &mut self,
        ranges: &[KeyGroupRange],
    ) -> Result<KeyGroupsGiven, OperatorError> {
        self.check_movable()?;
        self.save()?;
        let figures = &mut self.figures;
        let pieces = self
            .store
            .give(ranges, |part| figures.gone(part))
            .map_err(|e| store_error(&self.setup.name, e))?;
        let store = &self.store;
        self.pending.retain(|p| {
            let kg = store.key_group(&p.key);
            !ranges.iter().any(|r| r.contains(kg))
        });
        KeyGroupsGiven::new(&self.setup.name, pieces, &self.meta())
    }

    /// Writes its own waiting rows to the table (so that every waiting row has an entry, as
    /// the taken ones do), imports the pieces and rebuilds only their partitions and
    /// waiting rows; rows to come are numbered after the last of every instance.
    fn take_key_groups(
        &mut self,
        pieces: Vec<(KeyGroupRange, Vec<u8>)>,
        inline: Vec<Option<serde_json::Value>>,
    ) -> Result<(), OperatorError> {
        self.check_movable()?;
        let meta = combine_moved(&self.setup.name, self.meta(), inline)?;
        self.save()?;
        let loaded = self
            .store
            .take(&self.setup.pattern, &pieces)
            .map_err(|e| store_error(&self.setup.name, e))?;
        self.watermark = meta.watermark;
        self.late = meta.late;
        self.forwarded = meta.forwarded.unwrap_or(self.forwarded);
        self.seq = meta.seq;
        self.settle(loaded)
    }

    fn adjustable_params(&self) -> &'static [&'static str] {
        super::ADJUSTABLE
    }

    /// Checks the new value (see `change.rs`) and records the new definition; the operator
    /// switches to it at [`Operator::handle_param_changes`] (or its next batch, watermark or
    /// end of input). A refused value changes nothing.
    fn set_param(&mut self, param: &str, value: &str) -> Result<(), ControlError> {
        self.set_params(&[(param, value)])
    }

    /// Checks the new values together (a define may name a variable only the new pattern
    /// has) and records the new definition, as [`Operator::set_param`] does.
    fn set_params(&mut self, changes: &[(&str, &str)]) -> Result<(), ControlError> {
        let current = self.next.as_ref().unwrap_or(&self.setup);
        let new = super::change::changed(current, changes)?;
        if self.role.is_some() {
            let measures = new.measures.iter().map(|(_, e)| e);
            if let Err(why) = super::spread::spreadable(&new.pattern, measures, new.on_error) {
                return Err(ControlError::Invalid {
                    operator: new.name.clone(),
                    param: changes
                        .iter()
                        .map(|(p, _)| *p)
                        .collect::<Vec<_>>()
                        .join(", "),
                    message: format!("this pattern spreads its partial matches: {why}"),
                });
            }
        }
        self.next = Some(Arc::new(new));
        Ok(())
    }

    fn handle_param_changes(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
        self.take_effect(out)
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        let f = &self.figures;
        let row_bytes =
            std::mem::size_of::<Row>() + self.setup.types.len() * std::mem::size_of::<Value>();
        debug_assert_eq!(
            f.partial_matches,
            self.store.live().map(|p| p.attempts_kept()).sum::<usize>(),
            "the partial matches counted as they change are those kept"
        );
        let mut figures = vec![
            ("matches", f.matches),
            ("partial_matches", f.partial_matches as u64),
            ("peak_partial_matches", f.peak_partial_matches as u64),
            ("timed_out", f.timed_out),
            ("late_rows", self.late),
            ("partitions", self.store.partitions() as u64),
            ("state_backend_bytes", self.store.backend_bytes()),
            ("peak_rows_kept", f.peak_kept as u64),
            ("peak_partition_rows", f.peak_partition as u64),
            (
                "peak_state_bytes",
                ((f.peak_kept + f.peak_pending) * row_bytes) as u64,
            ),
            ("peak_waiting_rows", f.peak_pending as u64),
        ];
        if self.given_up > 0 {
            figures.push(("given_up_rows", self.given_up));
        }
        // What spreading asks for, beside what it is measured against.
        if let Some(o) = &self.setup.overflow {
            match o.stage_age_ms {
                Some(age) => figures.push(("stage_age_ms", age)),
                None => figures.push(("max_partial_matches", o.max_partial_matches)),
            }
            figures.push(("overflow_instances", o.instances));
        }
        figures
    }

    fn is_stateless(&self) -> bool {
        false
    }

    /// With checkpoints, it gave up matching the rows waiting at the end of its input after
    /// a stop (see [`PatternOp::finish_input`]).
    fn gave_up(&self) -> Option<String> {
        self.stopped_short.then(|| {
            format!(
                "the pattern gave up matching {} rows waiting at the end of its input",
                self.given_up
            )
        })
    }

    fn set_spread_role(&mut self, role: SpreadRole) -> Result<(), OperatorError> {
        self.set_role(role)
    }

    fn spread(&mut self, keep: u64) -> Result<Handed, OperatorError> {
        self.hand(keep)
    }

    fn spread_older(&mut self, age_ms: u64) -> Result<Handed, OperatorError> {
        self.hand_older(age_ms)
    }

    fn take_spread(
        &mut self,
        handed: Handed,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        self.adopt(handed, out)
    }
}
