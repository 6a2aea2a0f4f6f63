//! An operator driven by a control stream (`control name = "…", time = "…"`): the paper's meta
//! query (§4.5) in its stream form. Rows `<query?, operator, param, value, time?>` arrive on
//! the control input; each one for this operator changes a param as `anduin ctl set` would.
//!
//! With an event-time column a change at time t applies to exactly the data rows with event
//! time ≥ t, whatever order the two streams arrive in: a data row waits until the control
//! stream's watermark has passed its time (no change that could apply to it can still come),
//! and each row is evaluated under the values in force at its time. A replay therefore gives
//! the same output. Rows without an event time, and late rows (behind the watermark), are
//! evaluated under the values in force at the watermark. While the control stream is idle
//! its watermark does not hold data back (as an idle input does not hold a watermark back).
//!
//! Without an event-time column a change applies from its arrival on (as `ctl set`, but not at
//! a consistent point: use it when order does not matter).
//!
//! Works for stateless operators with one data input (filter, map): evaluating a row under
//! another version only needs the params switched.

mod changes;
mod held;

use std::collections::BTreeMap;
use std::sync::Arc;

use anduin_graph::ControlInput;
use anduin_types::Watermark;
use arrow::array::{Array, AsArray, StringArray};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

use crate::checkpointing::{RestoreIn, SnapshotOut};
use crate::event_time::event_times;
use crate::{BuildContext, Collector, ControlError, Operator, OperatorError, OperatorFactory};
use changes::{Change, Changes, Inserted, Values};
use held::Held;

/// Wraps `inner`, a factory of a stateless operator named `name` with one data input of
/// `schema`, so that its instances follow the control input `control`; `initial` holds the
/// values of its adjustable params as the query gives them.
pub fn controlled(
    name: &str,
    inner: OperatorFactory,
    control: ControlInput,
    schema: SchemaRef,
    initial: BTreeMap<String, String>,
) -> OperatorFactory {
    let name = name.to_string();
    Arc::new(move |ctx: &BuildContext| {
        Ok(Box::new(Controlled {
            name: name.clone(),
            inner: inner(ctx)?,
            query: ctx.query.clone(),
            control: control.clone(),
            changes: Changes::new(initial.clone()),
            applied: initial.clone(),
            held: Held::new(Arc::clone(&schema)),
            control_watermark: Watermark::MIN,
            data_exhausted: false,
            control_exhausted: false,
            made: 0,
            refused: 0,
            late_changes: 0,
            late_rows: 0,
        }) as Box<dyn Operator>)
    })
}

/// A running operator that follows a control stream.
struct Controlled {
    name: String,
    inner: Box<dyn Operator>,
    /// The run's query name, if known: control rows naming another query are ignored.
    query: Option<Arc<str>>,
    control: ControlInput,
    changes: Changes,
    /// The values `inner` has now.
    applied: Values,
    /// Data rows waiting for the control stream's event time to pass them.
    held: Held,
    /// The control stream's own event time.
    control_watermark: Watermark,
    /// Whether the data input, and the control input, are exhausted (not kept: a restored
    /// run hears it again).
    data_exhausted: bool,
    control_exhausted: bool,
    /// Changes taken, and control rows refused.
    made: u64,
    refused: u64,
    /// Changes behind their own stream's watermark, and data rows behind the watermark the
    /// changes were folded through (evaluated under the values in force there).
    late_changes: u64,
    late_rows: u64,
}

/// The most memory the rows waiting for a control stream may take: past it the query stops
/// with an error that says why, rather than running out of memory.
pub const MAX_HELD_BYTES: usize = 1 << 30;

/// What a checkpoint keeps inline.
#[derive(Serialize, Deserialize)]
struct Inline {
    changes: Changes,
    held_rows: usize,
}

impl Controlled {
    fn internal(&self, message: String) -> OperatorError {
        OperatorError::internal(&self.name, message)
    }

    /// Takes the changes meant for this operator from a batch of the control stream.
    fn take_changes(&mut self, batch: &RecordBatch) -> Result<(), OperatorError> {
        let text = |i: usize| -> Result<&StringArray, OperatorError> {
            batch
                .column(i)
                .as_string_opt::<i32>()
                .ok_or_else(|| OperatorError::internal(&self.name, "control column is not text"))
        };
        let (operators, params, values) = (
            text(self.control.operator)?,
            text(self.control.param)?,
            text(self.control.value)?,
        );
        let queries = self.control.query.map(text).transpose()?;
        let times = self
            .control
            .time
            .as_ref()
            .map(|t| event_times(batch, t.control));
        for row in 0..batch.num_rows() {
            let named = |a: &StringArray| (!a.is_null(row)).then(|| a.value(row).to_string());
            if named(operators).as_deref() != Some(self.name.as_str()) {
                continue;
            }
            // A row naming no query (null or empty) is for every query.
            if let (Some(q), Some(query)) = (queries.and_then(named), &self.query) {
                if !q.is_empty() && q != **query {
                    continue;
                }
            }
            let at = times.as_ref().map(|t| t.get(row).copied().flatten());
            let (param, value) = (named(params), named(values));
            match self.check(param.as_deref(), value.as_deref(), at) {
                Ok(()) => {
                    let (param, value) = (
                        param.expect("checked: present"),
                        value.expect("checked: present"),
                    );
                    tracing::info!(operator = %self.name, %param, value = %value.escape_debug(), at = ?at.flatten(), "change from the control stream");
                    self.made += 1;
                    let Some(at) = at else {
                        self.changes.base.insert(param, value);
                        continue;
                    };
                    let at = at.expect("checked: present");
                    let inserted = self.changes.insert(Change {
                        at,
                        param: param.clone(),
                        value,
                    });
                    // Behind its own stream's watermark: rows after its time may have been
                    // evaluated already.
                    if at < self.control_watermark.0 || inserted != Inserted::InTime {
                        let superseded = inserted == (Inserted::Behind { superseded: true });
                        self.late_changes += 1;
                        tracing::warn!(
                            operator = %self.name,
                            stream = %self.control.stream,
                            %param,
                            at,
                            superseded,
                            "a change behind its control stream's watermark applies only to the rows not evaluated yet{}",
                            if superseded { " (a later change of this param applies to them: it changes nothing)" } else { "" }
                        );
                    }
                }
                Err(why) => {
                    self.refused += 1;
                    // Shown quoted and escaped, and cut: a value may be anything.
                    let short = |s: &str| s.chars().take(200).collect::<String>();
                    tracing::warn!(
                        operator = %self.name,
                        stream = %self.control.stream,
                        param = ?short(param.as_deref().unwrap_or("")),
                        value = ?short(value.as_deref().unwrap_or("")),
                        reason = ?short(&why),
                        "control row refused; the operator keeps its params"
                    );
                }
            }
        }
        Ok(())
    }

    /// Whether a change can be taken: a param the operator can change, a value it accepts
    /// (the inner operator is left with it; evaluation switches to each row's version), and a
    /// time when changes apply by event time.
    fn check(
        &mut self,
        param: Option<&str>,
        value: Option<&str>,
        at: Option<Option<i64>>,
    ) -> Result<(), String> {
        let (Some(param), Some(value)) = (param, value) else {
            return Err("the row has no param or no value".into());
        };
        if !self.control.adjustable.contains(&param) {
            return Err(format!(
                "`{param}` cannot change while running; the params that can: {}",
                self.control.adjustable.join(", ")
            ));
        }
        if at == Some(None) {
            return Err("the row has no event time".into());
        }
        self.inner
            .set_param(param, value)
            .map_err(|e| e.to_string())?;
        self.applied.insert(param.to_string(), value.to_string());
        Ok(())
    }

    /// Evaluates `batch` (data rows whose values are settled), each run of rows under its
    /// version.
    fn evaluate(
        &mut self,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let Some(time) = &self.control.time else {
            let values = self.changes.base.clone();
            self.switch_to(&values)?;
            return self.inner.process_batch(0, batch, out);
        };
        let times = event_times(&batch, time.data);
        self.late_rows += times.iter().filter(|t| self.changes.is_behind(**t)).count() as u64;
        let versions: Vec<usize> = times
            .into_iter()
            .map(|t| self.changes.version_at(t))
            .collect();
        let mut start = 0;
        while start < versions.len() {
            let v = versions[start];
            let len = versions[start..].iter().take_while(|x| **x == v).count();
            let values = self.changes.values(v).clone();
            self.switch_to(&values)?;
            let run = if start == 0 && len == batch.num_rows() {
                batch.clone()
            } else {
                batch.slice(start, len)
            };
            self.inner.process_batch(0, run, out)?;
            start += len;
        }
        Ok(())
    }

    /// Gives the inner operator `values` (only the params that differ).
    fn switch_to(&mut self, values: &Values) -> Result<(), OperatorError> {
        for (param, value) in values {
            if self.applied.get(param) == Some(value) {
                continue;
            }
            self.inner.set_param(param, value).map_err(|e| {
                self.internal(format!(
                    "a change it took from control stream \"{}\" no longer applies: {e}",
                    self.control.stream
                ))
            })?;
            self.applied.insert(param.clone(), value.clone());
        }
        Ok(())
    }

    /// Evaluates the held rows the control stream's watermark has passed.
    fn release(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
        let Some(time) = &self.control.time else {
            return Ok(());
        };
        let ready = self
            .held
            .take_before(self.control_watermark, time.data)
            .map_err(|e| self.internal(format!("splitting held rows: {e}")))?;
        for batch in ready {
            self.evaluate(batch, out)?;
        }
        Ok(())
    }
}

impl Operator for Controlled {
    fn name(&self) -> &str {
        &self.name
    }

    fn process_batch(
        &mut self,
        input: usize,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        if input == self.control.port {
            return self.take_changes(&batch);
        }
        let Some(time) = &self.control.time else {
            return self.evaluate(batch, out);
        };
        let column = time.data;
        self.held.push(batch);
        if self.held.bytes() > MAX_HELD_BYTES {
            return Err(OperatorError::Execution {
                operator: self.name.clone(),
                message: format!(
                    "{} rows ({} MiB) wait for control stream \"{}\", {}: its watermark does not advance (give its source `param event_time`, and `param idle_timeout` if it may stay silent) or lags far behind the data",
                    self.held.rows(),
                    self.held.bytes() >> 20,
                    self.control.stream,
                    if self.control_watermark == Watermark::MIN {
                        "which has no watermark yet".to_string()
                    } else {
                        format!("whose watermark is at {} ms", self.control_watermark.0)
                    }
                ),
            });
        }
        let ready = self
            .held
            .take_before(self.control_watermark, column)
            .map_err(|e| self.internal(format!("splitting held rows: {e}")))?;
        for batch in ready {
            self.evaluate(batch, out)?;
        }
        Ok(())
    }

    fn handle_input_watermark(
        &mut self,
        input: usize,
        watermark: Watermark,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        if input != self.control.port {
            return self.inner.handle_input_watermark(input, watermark, out);
        }
        self.control_watermark = watermark;
        self.release(out)
    }

    fn handle_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector,
    ) -> Result<Option<Watermark>, OperatorError> {
        if self.control.time.is_some() {
            self.changes.fold_through(watermark.0);
        }
        self.inner.handle_watermark(watermark, out)
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        self.inner.snapshot(out)?;
        let held_rows = self.held.rows();
        if held_rows > 0 {
            let stream = out.stream(anduin_types::SnapshotKind::Full)?;
            self.held
                .write(stream)
                .map_err(|e| self.internal(format!("writing held rows: {e}")))?;
        }
        let inline = Inline {
            changes: self.changes.clone(),
            held_rows,
        };
        out.inline_typed(&self.name, &inline)
    }

    fn restore(&mut self, mut state: RestoreIn) -> Result<(), OperatorError> {
        let inline: Inline = state.inline_as(&self.name)?;
        if inline.held_rows > 0 {
            let Some(file) = state.files.last_mut() else {
                return Err(OperatorError::Execution {
                    operator: self.name.clone(),
                    message: format!(
                        "checkpoint {} says {} rows were waiting for control stream \"{}\" but has no file of them: the checkpoint is damaged; restore from an earlier one or start over with --from-scratch",
                        state.epoch.0, inline.held_rows, self.control.stream
                    ),
                });
            };
            self.held.read(file, inline.held_rows).map_err(|e| OperatorError::Execution {
                operator: self.name.clone(),
                message: format!(
                    "the rows waiting for control stream \"{}\" in checkpoint {} cannot be read ({e}): restore from an earlier checkpoint or start over with --from-scratch",
                    self.control.stream, state.epoch.0
                ),
            })?;
        }
        self.changes = inline.changes;
        Ok(())
    }

    fn adjustable_params(&self) -> &'static [&'static str] {
        &[]
    }

    fn set_param(&mut self, param: &str, _value: &str) -> Result<(), ControlError> {
        Err(ControlError::Invalid {
            operator: self.name.clone(),
            param: param.to_string(),
            message: format!(
                "this operator takes its changes from control stream \"{}\"; send the change there",
                self.control.stream
            ),
        })
    }

    /// Once both the data and the control stream are exhausted, no change and no row will
    /// come: every row waiting for the control stream goes now (as at its +∞), and the inner
    /// operator hears that its input is exhausted, and answers for both.
    fn on_input_exhausted(
        &mut self,
        input: usize,
        out: &mut dyn Collector,
    ) -> Result<bool, OperatorError> {
        if input == self.control.port {
            self.control_exhausted = true;
        } else {
            self.data_exhausted = true;
        }
        if !(self.control_exhausted && self.data_exhausted) {
            return Ok(false);
        }
        self.control_watermark = Watermark::MAX;
        for batch in self.held.take_all() {
            self.evaluate(batch, out)?;
        }
        self.inner.on_input_exhausted(0, out)
    }

    fn on_end_of_input(&mut self, out: &mut dyn Collector) -> Result<(), OperatorError> {
        // Every change has come: every row waiting goes (one at +∞ too).
        self.control_watermark = Watermark::MAX;
        for batch in self.held.take_all() {
            self.evaluate(batch, out)?;
        }
        self.inner.on_end_of_input(out)
    }

    fn gave_up(&self) -> Option<String> {
        self.inner.gave_up()
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        let mut m = self.inner.metrics();
        m.push(("control_changes", self.made));
        m.push(("control_rows_refused", self.refused));
        m.push(("control_changes_late", self.late_changes));
        m.push(("late_rows", self.late_rows));
        // The rows waiting are its state (none once the input has ended).
        let held = self.held.bytes() as u64;
        if held > 0 {
            m.push(("state_bytes", held));
        }
        m
    }

    fn is_stateless(&self) -> bool {
        false
    }
}
