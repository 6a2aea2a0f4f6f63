//! The running window operator: late rows split off, rows assigned to windows, windows fired
//! by the watermark, state snapshotted and restored.

use anduin_types::{SnapshotKind, Watermark};
use arrow::array::ArrayRef;
use arrow::record_batch::RecordBatch;

use super::accs::Accs;
use super::count::{Counted, Counting};
use super::input::{prepare, split_late};
use super::keys::KeyMap;
use super::output::Results;
use super::panes::{Panes, Sealed, Slice};
use super::session::{Session, Sessions};
use super::snapshot::{self, Section, COUNT, LIVE_PANE, SEALED_PANE, SESSION};
use super::{WindowKind, WindowSetup};
use crate::{Collector, Operator, OperatorError, RestoreIn, SnapshotOut};

/// The open windows, by kind.
#[derive(Debug)]
enum Open {
    Panes(Panes),
    Sessions(Sessions),
    Count(Counting),
}

/// A running window operator.
#[derive(Debug)]
pub(crate) struct Window {
    setup: WindowSetup,
    open: Open,
    /// The watermark of the input: rows before it are late.
    watermark: i64,
    /// Late rows dropped so far.
    late: u64,
}

impl Window {
    pub(crate) fn new(setup: WindowSetup) -> Result<Self, OperatorError> {
        let open = match setup.kind {
            WindowKind::Sliding { size, slide } => Open::Panes(Panes::new(size, slide)),
            WindowKind::Session { gap } => Open::Sessions(Sessions::new(gap)),
            WindowKind::Count { size } => Open::Count(Counting::new(size)),
        };
        Ok(Self {
            setup,
            open,
            watermark: i64::MIN,
            late: 0,
        })
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
        _input: usize,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let (batch, late) = split_late(batch, &self.setup, self.watermark)?;
        if let Some(late) = late {
            match self.setup.late_port {
                Some(port) => out.collect(port, late)?,
                None => self.late += late.num_rows() as u64,
            }
        }
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let prepared = prepare(&batch, &self.setup)?;
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
        let setup = &self.setup;
        let name = &setup.name;
        let mut sections = Vec::new();
        let mut fired_up_to = None;
        match &mut self.open {
            Open::Panes(p) => {
                fired_up_to = Some(p.fired_up_to);
                for (start, slice) in p.live.iter_mut() {
                    // Taking the state empties the accumulators: merge it straight back.
                    let states = slice.accs.take_state(name)?;
                    let ids: Vec<usize> = (0..slice.keys.len()).collect();
                    slice.accs.merge(&states, &ids, ids.len(), name)?;
                    let keys = setup.codec.columns(slice.keys.keys().iter(), name)?;
                    sections.push(section(
                        LIVE_PANE,
                        *start,
                        0,
                        0,
                        slice.keys.len(),
                        keys,
                        states,
                    ));
                }
                for (start, sealed) in &p.sealed {
                    let keys = setup.codec.columns(sealed.keys.iter(), name)?;
                    sections.push(section(
                        SEALED_PANE,
                        *start,
                        0,
                        0,
                        sealed.keys.num_rows(),
                        keys,
                        sealed.states.clone(),
                    ));
                }
            }
            Open::Sessions(s) => {
                for (key, sessions) in s.by_key.values_mut() {
                    for session in sessions.iter_mut() {
                        let states = session.accs.take_state(name)?;
                        session.accs.merge(&states, &[0], 1, name)?;
                        let keys = setup.codec.columns([key.row()], name)?;
                        sections.push(section(
                            SESSION,
                            session.start,
                            session.end,
                            0,
                            1,
                            keys,
                            states,
                        ));
                    }
                }
            }
            Open::Count(c) => {
                for (key, w) in c.by_key.values_mut() {
                    if w.rows == 0 {
                        continue;
                    }
                    let states = w.accs.take_state(name)?;
                    w.accs.merge(&states, &[0], 1, name)?;
                    let keys = setup.codec.columns([key.row()], name)?;
                    sections.push(section(COUNT, w.first, w.last, w.rows, 1, keys, states));
                }
            }
        }
        out.inline(serde_json::json!({
            "watermark": self.watermark,
            "fired_up_to": fired_up_to,
            "late": self.late,
        }));
        let stream = out.stream(SnapshotKind::Full)?;
        snapshot::write(setup, sections, stream)
    }

    fn restore(&mut self, mut state: RestoreIn) -> Result<(), OperatorError> {
        let inline = state.inline.take().unwrap_or_default();
        self.watermark = inline["watermark"].as_i64().unwrap_or(i64::MIN);
        self.late = inline["late"].as_u64().unwrap_or(0);
        let Some(file) = state.files.last_mut() else {
            return Err(self.error("the checkpoint has no state file for this window"));
        };
        let sections = snapshot::read(&self.setup, file.as_mut())?;
        let setup = &self.setup;
        let name = &setup.name;
        for s in sections {
            let key_rows = setup.codec.rows_from_columns(&s.keys, s.rows, name)?;
            match (&mut self.open, s.section) {
                (Open::Panes(p), LIVE_PANE | SEALED_PANE) => {
                    let start = s.t0.first().copied().unwrap_or(0);
                    if s.section == SEALED_PANE {
                        p.sealed.insert(
                            start,
                            Sealed {
                                keys: key_rows,
                                states: s.states,
                            },
                        );
                    } else {
                        let keys = KeyMap::from_keys(&setup.codec, &key_rows);
                        let mut accs = Accs::new(&setup.aggs, name)?;
                        let ids: Vec<usize> = (0..keys.len()).collect();
                        accs.merge(&s.states, &ids, ids.len(), name)?;
                        p.live.insert(start, Slice { keys, accs });
                    }
                    p.fired_up_to = inline["fired_up_to"].as_i64().unwrap_or(i64::MIN);
                }
                (Open::Sessions(sessions), SESSION) => {
                    for i in 0..s.rows {
                        let row = key_rows.row(i);
                        let mut accs = Accs::new(&setup.aggs, name)?;
                        accs.merge(&slice_states(&s.states, i), &[0], 1, name)?;
                        sessions
                            .by_key
                            .entry(row.as_ref().into())
                            .or_insert_with(|| (row.owned(), Vec::new()))
                            .1
                            .push(Session {
                                start: s.t0[i],
                                end: s.t1[i],
                                accs,
                            });
                    }
                }
                (Open::Count(c), COUNT) => {
                    for i in 0..s.rows {
                        let row = key_rows.row(i);
                        let mut accs = Accs::new(&setup.aggs, name)?;
                        accs.merge(&slice_states(&s.states, i), &[0], 1, name)?;
                        c.by_key.insert(
                            row.as_ref().into(),
                            (
                                row.owned(),
                                Counted {
                                    rows: s.n[i],
                                    first: s.t0[i],
                                    last: s.t1[i],
                                    accs,
                                },
                            ),
                        );
                    }
                }
                _ => return Err(self.error("the checkpoint holds state of another kind of window")),
            }
        }
        Ok(())
    }

    fn is_stateless(&self) -> bool {
        false
    }
}

/// One row of per-aggregate state columns.
fn slice_states(states: &[Vec<ArrayRef>], row: usize) -> Vec<Vec<ArrayRef>> {
    states
        .iter()
        .map(|cols| cols.iter().map(|c| c.slice(row, 1)).collect())
        .collect()
}

fn section(
    kind: i8,
    t0: i64,
    t1: i64,
    n: u64,
    rows: usize,
    keys: Vec<ArrayRef>,
    states: Vec<Vec<ArrayRef>>,
) -> Section {
    Section {
        section: kind,
        t0: vec![t0; rows],
        t1: vec![t1; rows],
        n: vec![n; rows],
        keys,
        states,
    }
}
