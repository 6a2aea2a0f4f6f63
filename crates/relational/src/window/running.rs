//! The running window operator: late rows split off, rows assigned to windows, windows fired
//! by the watermark, state checkpointed through a keyed table and restored from it.
//!
//! **Allowed lateness.** The window works to a *cutoff* rather than to the watermark itself:
//! at each watermark `w` later than those before it, the cutoff becomes `max(cutoff, w -
//! allowed_lateness)` (`+∞` at the end of input). A row before the cutoff is late; a tumbling
//! or sliding window fires when the cutoff reaches its end, a session when the cutoff is past
//! its end; the watermark forwarded is the cutoff, so that the results are not late for the
//! operators after the window. With no lateness the cutoff is the watermark. The cutoff never
//! goes back: a larger lateness set while running applies to the windows still open, and
//! rows before the cutoff already reached stay late (their windows may have fired, and the
//! output is append-only).
//!
//! **Processing time** (`proctime.rs`): the cutoff is the window's wall clock, moved on at
//! every batch and timer; the watermark of the input is forwarded unchanged and fires
//! nothing, but +∞ (a finished input) fires every open window. A checkpoint keeps the open
//! windows and the cutoff; after a restore, the windows whose end the clock passed while the
//! query was down fire at once, with the rows they held at the checkpoint (rows read again
//! after it go to the windows of the instants they are processed again), as Flink's
//! processing-time timers that passed during a recovery fire as it restores.
//!
//! A change of `allowed_lateness` ([`Operator::set_param`]) only sets the value: the cutoff
//! moves with the next watermark later than the last, so rows that arrive before it are
//! judged, and windows fired, as before the change. That keeps the change a pure function of
//! the value, as a restore needs: it applies every change the checkpoint recorded, oldest
//! first, to the state restored from before them, which holds the cutoff and the watermark.

use std::sync::Arc;

use anduin_operator_api::rescale::{agreed, combine_moved, Combine, RescaleError, RescaleMeta};
use anduin_state::{KeyGroupRange, KeyedTable, TableEntry};
use anduin_types::{SnapshotKind, Watermark};
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

use super::accs::Inputs;
use super::assign::fits;
use super::count::Counting;
use super::entries::{split_sub_key, Restored, StateRows, COUNT, PANE, SESSION, SUB_KEY_LEN};
use super::input::{aggregate_inputs, prepare, split_late, times_of};
use super::output::Results;
use super::panes::Panes;
use super::proctime::{stamped, SystemWallClock, WallClock};
use super::reject::keep_fitting;
use super::session::Sessions;
use super::{lateness_ms, WindowKind, WindowSetup};
use anduin_operator_api::null_time::reject_null_times;
use anduin_operator_api::{
    BuildContext, Collector, ControlError, DeadLetter, KeyGroupsGiven, Operator, OperatorError,
    RestoreIn, SnapshotOut,
};

/// The cutoff a watermark `watermark` gives with `lateness` (milliseconds): the watermark
/// less the lateness, down to `i64::MIN`; the end of input (`+∞`) closes every window.
pub(crate) fn cutoff(watermark: i64, lateness: i64) -> i64 {
    if watermark == Watermark::MAX.0 {
        watermark
    } else {
        watermark.saturating_sub(lateness)
    }
}

/// The open windows, by kind.
#[derive(Debug)]
enum Open {
    Panes(Panes),
    Sessions(Sessions),
    Count(Counting),
}

/// What a window keeps in a checkpoint's manifest.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    /// The watermark of the input.
    watermark: i64,
    /// The cutoff (see the module's documentation); absent in checkpoints from before
    /// `allowed_lateness`, where it was the watermark.
    #[serde(default)]
    cutoff: Option<i64>,
    /// Tumbling and sliding windows: every window ending at or before this has fired.
    fired_up_to: Option<i64>,
    /// Late rows dropped so far.
    late: u64,
}

impl RescaleMeta for Meta {
    fn combine(parts: Vec<Self>, how: Combine) -> Result<Self, RescaleError> {
        Ok(Meta {
            watermark: agreed("watermarks", parts.iter().map(|p| p.watermark))?,
            cutoff: agreed("lateness cutoffs", parts.iter().map(|p| p.cutoff))?,
            // Windows end by the cutoff are fired wherever they had panes (an instance
            // without panes leaves its mark behind): the latest mark holds for every key.
            fired_up_to: parts.iter().map(|p| p.fired_up_to).max().flatten(),
            late: how.counter(parts.iter().map(|p| p.late)),
        })
    }
}

/// A running window operator.
#[derive(Debug)]
pub(crate) struct Window {
    setup: WindowSetup,
    open: Open,
    /// The checkpointed copy of the open windows (layout in `entries.rs`).
    table: KeyedTable,
    /// The encoding of the aggregates' states.
    states: StateRows,
    /// The watermark of the input.
    watermark: i64,
    /// How far behind the watermark a row may be and still count, in milliseconds.
    lateness: i64,
    /// The largest `watermark - lateness` so far: rows before it are late, the windows that
    /// end by it have fired (see the module's documentation).
    cutoff: i64,
    /// Late rows dropped so far.
    late: u64,
    /// Where rejected rows go: rows without an event time, and rows whose window would not
    /// fit in a timestamp.
    dead_letter: Arc<DeadLetter>,
    /// What a row whose aggregate arguments fail does.
    errors: anduin_operator_api::RowErrors,
    /// The wall clock of a processing-time window (`None`: over event time).
    clock: Option<Arc<dyn WallClock>>,
}

impl Window {
    /// A window of `setup`, built with `ctx`: rejected rows go to its dead letters; with the LSM
    /// backend, its working files go in its backend directory (a temporary one if none).
    pub(crate) fn new(setup: WindowSetup, ctx: &BuildContext) -> Result<Self, OperatorError> {
        let dir = ctx.backend_dir(&setup.name);
        let dead_letter = Arc::clone(&ctx.dead_letter);
        let (setup_name, sites, on_error) =
            (setup.name.clone(), setup.sites.clone(), setup.on_error);
        let lateness = setup.allowed_lateness;
        let processing = setup.processing;
        let open = match setup.kind {
            WindowKind::Sliding { size, slide } => Open::Panes(Panes::new(size, slide)),
            WindowKind::Cumulate { size, step } => Open::Panes(Panes::cumulate(size, step)),
            WindowKind::Session { gap } => Open::Sessions(Sessions::new(gap)),
            WindowKind::Count { size } => Open::Count(Counting::new(size)),
        };
        let table = KeyedTable::new(&setup.name, setup.backend, dir);
        let states = StateRows::new(&setup.aggs, &setup.name)?;
        Ok(Self {
            setup,
            open,
            table,
            states,
            watermark: i64::MIN,
            lateness,
            cutoff: i64::MIN,
            late: 0,
            dead_letter,
            errors: anduin_operator_api::RowErrors::new(&setup_name, sites, on_error, ctx),
            clock: processing.then(|| Arc::new(SystemWallClock) as Arc<dyn WallClock>),
        })
    }

    /// The window reading `clock` for its processing time (tests; a window over event time
    /// ignores it).
    #[cfg(test)]
    pub(crate) fn with_clock(mut self, clock: Arc<dyn WallClock>) -> Self {
        if self.clock.is_some() {
            self.clock = Some(clock);
        }
        self
    }

    /// A processing-time window: the clock moved on to `now`; fires the windows that end by
    /// it. Returns `now`.
    fn advance_clock(
        &mut self,
        clock: &dyn WallClock,
        out: &mut dyn Collector,
    ) -> Result<i64, OperatorError> {
        let now = clock.now_ms();
        if now > self.cutoff {
            self.cutoff = now;
            self.fire(out)?;
        }
        Ok(now)
    }

    /// The aggregates' inputs on `batch`, after the rows they fail on went to the dead letters
    /// (or stopped the query): the rows kept and their inputs.
    fn evaluate(
        &self,
        batch: RecordBatch,
        origins: Option<&anduin_operator_api::RowOrigins>,
    ) -> Result<(RecordBatch, Inputs), OperatorError> {
        let evaluated = anduin_operator_api::evaluate_rows(&batch, &mut |b: &RecordBatch| {
            aggregate_inputs(b, &self.setup)
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
        let kept = arrow::compute::filter_record_batch(&batch, &keep).map_err(|e| {
            OperatorError::Execution {
                operator: self.setup.name.clone(),
                message: format!("dropping the rows an aggregate failed on: {e}"),
            }
        })?;
        let inputs = aggregate_inputs(&kept, &self.setup).map_err(|(agg, message)| {
            OperatorError::internal(
                &self.setup.name,
                format!("aggregate {agg} failed on rows it evaluated before: {message}"),
            )
        })?;
        Ok((kept, inputs))
    }

    fn emit(&self, results: Results, out: &mut dyn Collector) -> Result<(), OperatorError> {
        if results.is_empty() {
            return Ok(());
        }
        if let Some(batch) = results.finish(&self.setup)? {
            out.collect(0, batch)?;
        }
        Ok(())
    }

    /// Fires the windows that close by the cutoff.
    fn fire(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
        let results = match &mut self.open {
            Open::Panes(p) => p.fire(self.cutoff, &self.setup)?,
            Open::Sessions(s) => s.fire(self.cutoff, &self.setup)?,
            Open::Count(_) => Results::default(),
        };
        self.emit(results, out)
    }

    /// What it keeps inline in a checkpoint.
    fn meta(&self) -> Meta {
        Meta {
            watermark: self.watermark,
            cutoff: Some(self.cutoff),
            fired_up_to: match &self.open {
                Open::Panes(p) => Some(p.fired_up_to),
                Open::Sessions(_) | Open::Count(_) => None,
            },
            late: self.late,
        }
    }

    /// The tag of its checkpointed entries.
    fn tag(&self) -> u8 {
        match self.setup.kind {
            WindowKind::Sliding { .. } | WindowKind::Cumulate { .. } => PANE,
            WindowKind::Session { .. } => SESSION,
            WindowKind::Count { .. } => COUNT,
        }
    }

    fn error(&self, message: impl Into<String>) -> OperatorError {
        OperatorError::Execution {
            operator: self.setup.name.clone(),
            message: message.into(),
        }
    }
}

impl Operator for Window {
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
        origins: Option<anduin_operator_api::RowOrigins>,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let rows_in = batch.num_rows();
        let batch = match self.clock.clone() {
            Some(clock) => {
                let now = self.advance_clock(clock.as_ref(), out)?;
                stamped(batch, self.setup.time_column, now, &self.setup.name)?
            }
            None => batch,
        };
        let batch = reject_null_times(
            batch,
            self.setup.time_column,
            &self.setup.name,
            &self.dead_letter,
        )?;
        let (batch, late) = split_late(batch, &self.setup, self.cutoff)?;
        if let Some(late) = late {
            match self.setup.late_port {
                Some(port) => out.collect(port, late)?,
                None => self.late += late.num_rows() as u64,
            }
        }
        let kind = self.setup.kind;
        let times = times_of(&batch, self.setup.time_column);
        let batch = keep_fitting(batch, &times, &self.setup.name, &self.dead_letter, |t| {
            fits(kind, t)
        })?;
        if batch.num_rows() == 0 {
            return Ok(());
        }
        // The origins still name the rows if none went before.
        let origins = origins.filter(|_| batch.num_rows() == rows_in);
        let (batch, inputs) = self.evaluate(batch, origins.as_ref())?;
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let prepared = prepare(&batch, &self.setup, inputs)?;
        let results = match &mut self.open {
            Open::Panes(p) => {
                p.add(&prepared, &self.setup)?;
                Results::default()
            }
            Open::Sessions(s) => {
                s.add(&prepared, &self.setup)?;
                Results::default()
            }
            Open::Count(c) => c.add(&prepared, &self.setup)?,
        };
        self.emit(results, out)
    }

    fn handle_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector,
    ) -> Result<Option<Watermark>, OperatorError> {
        if self.clock.is_some() {
            // Processing time: event time passes through; only its end closes the windows.
            if watermark.0 <= self.watermark {
                return Ok(None);
            }
            self.watermark = watermark.0;
            if watermark == Watermark::MAX {
                self.cutoff = Watermark::MAX.0;
                self.fire(out)?;
            }
            return Ok(Some(watermark));
        }
        // Only a watermark that moves event time on moves the cutoff: one sent again (as after
        // a restore, where the sources start from no watermark) must not apply a changed
        // lateness earlier than the run before the restore did.
        if watermark.0 <= self.watermark {
            return Ok(None);
        }
        self.watermark = watermark.0;
        let before = self.cutoff;
        self.cutoff = self.cutoff.max(cutoff(watermark.0, self.lateness));
        if self.cutoff == before {
            return Ok(None);
        }
        self.fire(out)?;
        // The results fired are at or after the cutoff: forwarding it keeps them on time.
        Ok(Some(Watermark(self.cutoff)))
    }

    /// No row will come: every open window fires now, as at the end of event time (after an
    /// exhausted input the next watermark is that +∞: its other producers are idle or done),
    /// so the output is exhausted too. The cutoff and the watermark stay where they are:
    /// event time is not over (a checkpoint, or an instance rescaled beside this one, must
    /// agree on them), and the watermarks still to come are forwarded as before, firing
    /// nothing. A count window's incomplete windows never fire, as at the end of input.
    fn on_input_exhausted(
        &mut self,
        _input: usize,
        out: &mut dyn Collector,
    ) -> Result<bool, OperatorError> {
        let results = match &mut self.open {
            Open::Panes(p) => p.fire(Watermark::MAX.0, &self.setup)?,
            Open::Sessions(s) => s.fire(Watermark::MAX.0, &self.setup)?,
            Open::Count(_) => Results::default(),
        };
        self.emit(results, out)?;
        Ok(true)
    }

    fn timer_due_in(&self) -> Option<std::time::Duration> {
        let clock = self.clock.as_ref()?;
        let Open::Panes(p) = &self.open else {
            return None;
        };
        let end = p.next_end()?;
        let wait = end.saturating_sub(clock.now_ms()).max(0);
        Some(std::time::Duration::from_millis(
            u64::try_from(wait).unwrap_or(u64::MAX),
        ))
    }

    fn on_timer(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
        if let Some(clock) = self.clock.clone() {
            self.advance_clock(clock.as_ref(), out)?;
        }
        Ok(())
    }

    fn adjustable_params(&self) -> &'static [&'static str] {
        super::ADJUSTABLE
    }

    fn set_param(&mut self, param: &str, value: &str) -> Result<(), ControlError> {
        if param != "allowed_lateness" {
            return Err(ControlError::NotAdjustable {
                operator: self.setup.name.clone(),
                param: param.to_string(),
                adjustable: super::ADJUSTABLE.join(", "),
            });
        }
        self.lateness = lateness_ms(value).map_err(|message| ControlError::Invalid {
            operator: self.setup.name.clone(),
            param: param.to_string(),
            message,
        })?;
        tracing::debug!(operator = %self.setup.name, lateness_ms = self.lateness, "allowed lateness changed: applies from the next watermark");
        Ok(())
    }

    fn on_end_of_input(&mut self, _out: &mut dyn Collector) -> Result<(), OperatorError> {
        // The windows fired with the watermark of +∞ that precedes the end of a finished
        // input; a stopped query (with checkpoints) keeps them open in its last checkpoint.
        if self.late > 0 {
            tracing::info!(operator = %self.setup.name, late_rows = self.late, "late rows dropped");
        }
        Ok(())
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        let kind = if out.full_due() {
            SnapshotKind::Full
        } else {
            SnapshotKind::Changes
        };
        let setup = &self.setup;
        match &mut self.open {
            Open::Panes(p) => p.save(&mut self.table, &self.states, setup)?,
            Open::Sessions(s) => s.save(&mut self.table, &self.states, setup)?,
            Open::Count(c) => c.save(&mut self.table, &self.states, setup)?,
        }
        let meta = self.meta();
        out.inline_typed(&self.setup.name, &meta)?;
        let stream = out.stream(kind)?;
        let _stats = self.table.snapshot(kind, stream)?;
        Ok(())
    }

    fn rescale_inline(
        &self,
        parts: &[Option<serde_json::Value>],
        how: Combine,
    ) -> Result<Option<serde_json::Value>, anduin_operator_api::RescaleError> {
        // The instances of a processing-time window each have their own clock's cutoff.
        if self.clock.is_some() {
            return Err(RescaleError::NotRescalable);
        }
        anduin_operator_api::rescale::rescale_inline_as::<Meta>(parts, how)
    }

    fn moves_key_groups(&self) -> bool {
        self.clock.is_none()
    }

    fn give_key_groups(
        &mut self,
        ranges: &[KeyGroupRange],
    ) -> Result<KeyGroupsGiven, OperatorError> {
        let meta = self.meta();
        let (setup, states, table) = (&self.setup, &self.states, &mut self.table);
        let given = |table: &KeyedTable, row: &arrow::row::OwnedRow| {
            let kg = table.key_group(setup.codec.stored(row.row()));
            ranges.iter().any(|r| r.contains(kg))
        };
        let pieces = match &mut self.open {
            // Cut out of its panes, column by column (`moves.rs`).
            Open::Panes(p) => p.give(ranges, table, states, setup)?,
            // Written to the table as they are in memory, then exported from it.
            Open::Sessions(s) => {
                s.save(table, states, setup)?;
                let pieces = table.export_each(ranges)?;
                s.by_key.retain(|_, (row, _)| !given(table, row));
                pieces
            }
            Open::Count(c) => {
                c.save(table, states, setup)?;
                let pieces = table.export_each(ranges)?;
                c.by_key.retain(|_, (row, _)| !given(table, row));
                pieces
            }
        };
        KeyGroupsGiven::new(&self.setup.name, pieces, &meta)
    }

    fn take_key_groups(
        &mut self,
        pieces: Vec<(KeyGroupRange, Vec<u8>)>,
        inline: Vec<Option<serde_json::Value>>,
    ) -> Result<(), OperatorError> {
        let meta = combine_moved(&self.setup.name, self.meta(), inline)?;
        self.watermark = meta.watermark;
        self.cutoff = meta.cutoff.unwrap_or(meta.watermark);
        self.late = meta.late;
        let (setup, states, table) = (&self.setup, &self.states, &mut self.table);
        match &mut self.open {
            Open::Panes(p) => {
                p.fired_up_to = meta.fired_up_to.unwrap_or(p.fired_up_to);
                let pieces: Vec<Vec<u8>> = pieces.into_iter().map(|(_, bytes)| bytes).collect();
                p.take(&pieces, states, setup, self.cutoff)
            }
            Open::Sessions(s) => {
                for (range, bytes) in pieces {
                    s.restore(import(table, setup, range, &bytes, SESSION)?, states, setup)?;
                }
                Ok(())
            }
            Open::Count(c) => {
                for (range, bytes) in pieces {
                    c.restore(import(table, setup, range, &bytes, COUNT)?, states, setup)?;
                }
                Ok(())
            }
        }
    }

    fn restore(&mut self, mut state: RestoreIn) -> Result<(), OperatorError> {
        let meta: Meta = state.inline_as(&self.setup.name)?;
        self.watermark = meta.watermark;
        self.cutoff = meta.cutoff.unwrap_or(meta.watermark);
        self.late = meta.late;
        let Some((full, changes)) = state.files.split_first_mut() else {
            return Err(self.error("the checkpoint has no state file for this window"));
        };
        let mut changes: Vec<&mut dyn std::io::Read> = changes
            .iter_mut()
            .map(|f| f as &mut dyn std::io::Read)
            .collect();
        let name = &self.setup.name;
        let mut entries = Vec::new();
        self.table
            .restore(full, &mut changes, |e: TableEntry<'_>| {
                entries.push(restored(name, &e)?);
                Ok::<(), OperatorError>(())
            })?;
        let tag = self.tag();
        if entries.iter().any(|e| e.tag != tag) {
            return Err(self.error("the checkpoint holds state of another kind of window"));
        }
        let (setup, states) = (&self.setup, &self.states);
        match &mut self.open {
            Open::Panes(p) => {
                p.fired_up_to = meta.fired_up_to.ok_or_else(|| OperatorError::Execution {
                    operator: setup.name.clone(),
                    message: format!(
                        "the manifest of checkpoint {} holds no `fired_up_to` for this tumbling \
                         or sliding window: the checkpoint is corrupt; restore from an earlier \
                         checkpoint",
                        state.epoch.0
                    ),
                })?;
                p.restore(entries, states, setup, self.cutoff)
            }
            Open::Sessions(s) => s.restore(entries, states, setup),
            Open::Count(c) => c.restore(entries, states, setup),
        }
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        let mut metrics = vec![("late_rows", self.late)];
        // Open panes only (none at the end of the input: the summary does not show it then).
        if let Open::Panes(p) = &self.open {
            let bytes = p.size_bytes() as u64;
            if bytes > 0 {
                metrics.push(("state_bytes", bytes));
            }
        }
        metrics.extend(self.table.size_bytes().map(|b| ("state_backend_bytes", b)));
        metrics
    }

    fn is_stateless(&self) -> bool {
        false
    }
}

/// A checkpointed entry of a window, split into its key, its tag and its start.
fn restored(name: &str, e: &TableEntry<'_>) -> Result<Restored, OperatorError> {
    let (tag, start) = split_sub_key(e.sub_key).ok_or_else(|| OperatorError::Execution {
        operator: name.to_string(),
        message: format!(
            "the checkpoint's window state holds an entry in {} whose sub-key is {} bytes, not \
             {SUB_KEY_LEN} (a tag and a start): the state is corrupt; restore from an earlier \
             checkpoint",
            e.kg,
            e.sub_key.len()
        ),
    })?;
    Ok(Restored {
        key: e.group_key.into(),
        tag,
        start,
        value: e.value.to_vec(),
    })
}

/// The entries another instance exported for `range` (`bytes`), added to `table` and read
/// back, each of the kind `tag`.
fn import(
    table: &mut KeyedTable,
    setup: &WindowSetup,
    range: KeyGroupRange,
    bytes: &[u8],
    tag: u8,
) -> Result<Vec<Restored>, OperatorError> {
    let name = &setup.name;
    let mut entries = Vec::new();
    table.import_scanned(range, bytes, |e: TableEntry<'_>| {
        entries.push(restored(name, &e)?);
        Ok::<(), OperatorError>(())
    })?;
    if entries.iter().any(|e| e.tag != tag) {
        return Err(OperatorError::internal(
            name,
            "another instance handed over state of another kind of window",
        ));
    }
    Ok(entries)
}
