//! The running window operator: late rows split off, rows assigned to windows, windows fired
//! by the watermark, state checkpointed through a keyed table and restored from it.

use std::sync::Arc;

use anduin_state::{KeyedTable, TableEntry};
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
use super::reject::keep_fitting;
use super::session::Sessions;
use super::{WindowKind, WindowSetup};
use anduin_operator_api::null_time::reject_null_times;
use anduin_operator_api::{
    BuildContext, Collector, DeadLetter, Operator, OperatorError, RestoreIn, SnapshotOut,
};

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
    /// Tumbling and sliding windows: every window ending at or before this has fired.
    fired_up_to: Option<i64>,
    /// Late rows dropped so far.
    late: u64,
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
    /// The watermark of the input: rows before it are late.
    watermark: i64,
    /// Late rows dropped so far.
    late: u64,
    /// Where rejected rows go: rows without an event time, and rows whose window would not
    /// fit in a timestamp.
    dead_letter: Arc<DeadLetter>,
    /// What a row whose aggregate arguments fail does.
    errors: anduin_operator_api::RowErrors,
}

impl Window {
    /// A window of `setup`, built with `ctx`: rejected rows go to its dead letters; with the LSM
    /// backend, its working files go in its backend directory (a temporary one if none).
    pub(crate) fn new(setup: WindowSetup, ctx: &BuildContext) -> Result<Self, OperatorError> {
        let dir = ctx.backend_dir(&setup.name);
        let dead_letter = Arc::clone(&ctx.dead_letter);
        let (setup_name, sites, on_error) =
            (setup.name.clone(), setup.sites.clone(), setup.on_error);
        let open = match setup.kind {
            WindowKind::Sliding { size, slide } => Open::Panes(Panes::new(size, slide)),
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
            late: 0,
            dead_letter,
            errors: anduin_operator_api::RowErrors::new(&setup_name, sites, on_error, ctx),
        })
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

    fn fire(&mut self, watermark: i64, out: &mut dyn Collector) -> Result<(), OperatorError> {
        let results = match &mut self.open {
            Open::Panes(p) => p.fire(watermark, &self.setup)?,
            Open::Sessions(s) => s.fire(watermark, &self.setup)?,
            Open::Count(_) => Results::default(),
        };
        self.emit(results, out)
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
        let batch = reject_null_times(
            batch,
            self.setup.time_column,
            &self.setup.name,
            &self.dead_letter,
        )?;
        let (batch, late) = split_late(batch, &self.setup, self.watermark)?;
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
        self.watermark = self.watermark.max(watermark.0);
        self.fire(watermark.0, out)?;
        Ok(Some(watermark))
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
        let mut fired_up_to = None;
        match &mut self.open {
            Open::Panes(p) => {
                fired_up_to = Some(p.fired_up_to);
                p.save(&mut self.table, &self.states, setup)?;
            }
            Open::Sessions(s) => s.save(&mut self.table, &self.states, setup)?,
            Open::Count(c) => c.save(&mut self.table, &self.states, setup)?,
        }
        let meta = Meta {
            watermark: self.watermark,
            fired_up_to,
            late: self.late,
        };
        out.inline_typed(&self.setup.name, &meta)?;
        let stream = out.stream(kind)?;
        let _stats = self.table.snapshot(kind, stream)?;
        Ok(())
    }

    fn restore(&mut self, mut state: RestoreIn) -> Result<(), OperatorError> {
        let meta: Meta = state.inline_as(&self.setup.name)?;
        self.watermark = meta.watermark;
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
                let (tag, start) =
                    split_sub_key(e.sub_key).ok_or_else(|| OperatorError::Execution {
                        operator: name.clone(),
                        message: format!(
                    "the checkpoint's window state holds an entry in {} whose sub-key is {} bytes, \
                     not {SUB_KEY_LEN} (a tag and a start): the state is corrupt; restore from \
                     an earlier checkpoint",
                    e.kg,
                    e.sub_key.len()
                ),
                    })?;
                entries.push(Restored {
                    key: e.group_key.into(),
                    tag,
                    start,
                    value: e.value.to_vec(),
                });
                Ok::<(), OperatorError>(())
            })?;
        let tag = match self.setup.kind {
            WindowKind::Sliding { .. } => PANE,
            WindowKind::Session { .. } => SESSION,
            WindowKind::Count { .. } => COUNT,
        };
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
                p.restore(entries, states, setup, self.watermark)
            }
            Open::Sessions(s) => s.restore(entries, states, setup),
            Open::Count(c) => c.restore(entries, states, setup),
        }
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        let mut metrics = vec![("late_rows", self.late)];
        metrics.extend(self.table.size_bytes().map(|b| ("state_backend_bytes", b)));
        metrics
    }

    fn is_stateless(&self) -> bool {
        false
    }
}
