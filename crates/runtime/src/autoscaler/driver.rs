//! The autoscaler as a round beside the query ([`super::beside`]): each window's observation
//! is decided ([`anduin_coordinator::autoscale::DecisionLog::record`]), its changes carried out
//! as rescales through the control plane (`parallelism`, as `anduin ctl scale` does, from
//! `autoscaler`), and the log kept where `anduin ctl autoscale` reads it.

use std::sync::Arc;

use anduin_coordinator::autoscale::{AutoscaleState, DecisionLog, Observation, RescaleFact};

use super::beside::{as_u32, beside, now_ms, Beside, Round};
use super::settings::{fit, pin, AutoscaleSettings, Rescalable};
use super::{AutoscaleFailure, AutoscaleReport, FAILURES_KEPT};
use crate::control::{ChangeRecord, ChangeRequest, Control, OperatorInfo};

/// Who the autoscaler's changes are from, in the history.
pub const FROM: &str = "autoscaler";

/// The running autoscaler of one query; dropping it stops it (after the round under way).
pub type Autoscaler = Beside;

/// Starts the autoscaler of the query `control` runs: its first round comes one interval
/// after the query is running; it ends when the query ends, or when dropped.
pub fn start(control: Arc<Control>, settings: AutoscaleSettings) -> std::io::Result<Autoscaler> {
    control.enable_autoscale(AutoscaleReport::new(&settings));
    let interval = settings.interval;
    let round = Autoscale {
        settings,
        warned: std::collections::BTreeSet::new(),
        log: None,
        rescales: Vec::new(),
    };
    beside(control, interval, "autoscaler", round)
}

/// The operators as the settings are fitted to them (`control` says which can get more
/// instances than run them).
fn rescalables(control: &Control, operators: &[OperatorInfo]) -> Vec<Rescalable> {
    operators
        .iter()
        .map(|o| Rescalable {
            name: o.name.clone(),
            source: o.inputs.is_empty(),
            instances: o.max_parallelism.and_then(|m| u32::try_from(m).ok()),
            grows: o
                .max_parallelism
                .is_some_and(|m| control.can_grow(&o.name, m + 1)),
        })
        .collect()
}

/// What the autoscaler's guards remember of `history` (the changes applied, those a resumed
/// run restored included): when each operator's parallelism last changed, by whomever. A
/// scale-down waiting for its delay is not in the history: it waits again.
fn remembered(history: &[ChangeRecord]) -> AutoscaleState {
    let mut state = AutoscaleState::default();
    for r in history
        .iter()
        .filter(|r| r.param == crate::rescale::PARALLELISM)
    {
        let at = u64::try_from(r.time_ms).unwrap_or(0);
        let last = &mut state
            .operators
            .entry(r.operator.clone())
            .or_default()
            .last_change_ms;
        *last = Some(last.map_or(at, |l| l.max(at)));
    }
    state
}

struct Autoscale {
    settings: AutoscaleSettings,
    /// The failures logged as warnings so far (each once; again at debug level).
    warned: std::collections::BTreeSet<String>,
    /// Set when the query runs, with the settings fitted to it.
    log: Option<DecisionLog>,
    /// The rescales carried out, latest last (as many as `rescale_history`).
    rescales: Vec<RescaleFact>,
}

impl Round for Autoscale {
    fn begin(&mut self, control: &Control, operators: &[OperatorInfo]) -> Result<(), String> {
        let ops = rescalables(control, operators);
        let config = match fit(&self.settings.config, &ops) {
            Ok(fitted) => pin(&fitted, &ops, |name| {
                operators
                    .iter()
                    .find(|o| o.name == name)
                    .map_or(1, |o| as_u32(o.parallelism))
            }),
            Err(e) => {
                let message = format!("the autoscaler does not run: {e}");
                failed(control, now_ms(), None, message.clone());
                return Err(message);
            }
        };
        // What a resumed run remembers: each operator's last rescale (its checkpoint's
        // history), so that the stabilisation window holds across the restart.
        let log = DecisionLog::new(config, remembered(&control.history()));
        control.record_autoscale(|r| r.log = log.clone());
        tracing::info!(query = control.name(), interval_ms = ?self.settings.interval, "the autoscaler runs");
        self.log = Some(log);
        Ok(())
    }

    fn round(&mut self, control: &Control, mut observation: Observation) -> bool {
        let Some(log) = self.log.as_mut() else {
            return false;
        };
        observation.rescales = self.rescales.clone();
        let at_ms = observation.at_ms;
        let changes: Vec<(String, u32)> = match log.record(observation) {
            Ok(round) => round
                .changes()
                .into_iter()
                .map(|(op, to)| (op.to_string(), to))
                .collect(),
            Err(e) => {
                tracing::warn!(query = control.name(), error = %e, "an autoscaler round was refused");
                failed(control, at_ms, None, format!("round refused: {e}"));
                return false;
            }
        };
        log.keep_last(self.settings.keep_rounds);
        control.record_autoscale(|r| r.log = log.clone());
        let history = usize::try_from(log.config.rescale_history).unwrap_or(usize::MAX);
        for (operator, to) in &changes {
            self.rescale(control, operator, *to, at_ms, history);
        }
        if !changes.is_empty() {
            let observed = self.rescales.clone();
            control.record_autoscale(|r| r.rescales = observed);
        }
        !changes.is_empty()
    }
}

impl Autoscale {
    /// Rescales `operator` to `to` instances (the control plane waits until every instance
    /// has handed over or taken its key groups) and records how long it took.
    fn rescale(&mut self, control: &Control, operator: &str, to: u32, at_ms: u64, history: usize) {
        let started_at_ms = now_ms().max(at_ms);
        let request = ChangeRequest {
            operator: operator.to_string(),
            param: crate::rescale::PARALLELISM.to_string(),
            value: to.to_string(),
            from: FROM.to_string(),
        };
        match control.set(request) {
            Ok(record) => {
                let finished_at_ms = now_ms().max(started_at_ms);
                tracing::info!(
                    query = control.name(),
                    operator,
                    to,
                    epoch = record.epoch,
                    took_ms = finished_at_ms - started_at_ms,
                    "the autoscaler rescaled an operator"
                );
                self.rescales.push(RescaleFact {
                    operator: operator.to_string(),
                    started_at_ms,
                    finished_at_ms,
                });
                let drop = self.rescales.len().saturating_sub(history);
                self.rescales.drain(..drop);
            }
            Err(e) => {
                if self.warned.insert(format!("{operator} {e}")) {
                    tracing::warn!(query = control.name(), operator, to, error = %e, "the autoscaler's rescale failed");
                } else {
                    tracing::debug!(query = control.name(), operator, to, error = %e, "the autoscaler's rescale failed again");
                }
                failed(
                    control,
                    now_ms(),
                    Some(operator),
                    format!("rescale to {to} failed: {e}"),
                );
            }
        }
    }
}

fn failed(control: &Control, at_ms: u64, operator: Option<&str>, message: String) {
    control.record_autoscale(|r| {
        r.failures.push(AutoscaleFailure {
            at_ms,
            operator: operator.map(str::to_string),
            message,
        });
        let drop = r.failures.len().saturating_sub(FAILURES_KEPT);
        r.failures.drain(..drop);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(operator: &str, param: &str, time_ms: i64) -> ChangeRecord {
        ChangeRecord {
            seq: 1,
            time_ms,
            epoch: 1,
            operator: operator.into(),
            param: param.into(),
            old: "1".into(),
            new: "2".into(),
            from: FROM.into(),
        }
    }

    #[test]
    fn a_resumed_run_remembers_each_operators_last_rescale_and_nothing_else() {
        let history = [
            change("w", "parallelism", 1_000),
            change("w", "parallelism", 5_000),
            change("w", "allowed_lateness", 9_000),
            change("j", "parallelism", 3_000),
            change("f", "condition", 7_000),
            change("x", "parallelism", -5),
        ];
        let state = remembered(&history);
        let last = |op: &str| state.operators.get(op).and_then(|m| m.last_change_ms);
        assert_eq!(last("w"), Some(5_000));
        assert_eq!(last("j"), Some(3_000));
        assert_eq!(last("x"), Some(0));
        assert_eq!(last("f"), None);
        assert!(state.operators.values().all(|m| m.pending_down.is_none()));
        assert_eq!(state.last_round_ms, None);
        assert_eq!(remembered(&[]), AutoscaleState::default());
    }
}
