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
            // Whether it has room now or not: workers may join later, and each rescale asks
            // for what fits then (`Autoscale::fitting`).
            grows: o.max_parallelism.is_some() && control.grows_at_all(&o.name),
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
        let to = match fitting(control, operator, to) {
            Ok(to) => to,
            Err(why) => {
                self.failed_once(
                    control,
                    operator,
                    format!("rescale to {to} is not made: {why}"),
                );
                return;
            }
        };
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
                self.failed_once(control, operator, format!("rescale to {to} failed: {e}"));
            }
        }
    }

    /// Records that a rescale of `operator` failed for `message`: a warning the first time,
    /// at debug level after.
    fn failed_once(&mut self, control: &Control, operator: &str, message: String) {
        if self.warned.insert(format!("{operator} {message}")) {
            tracing::warn!(query = control.name(), operator, error = %message, "the autoscaler's rescale failed");
        } else {
            tracing::debug!(query = control.name(), operator, error = %message, "the autoscaler's rescale failed again");
        }
        failed(control, now_ms(), Some(operator), message);
    }
}

/// What a rescale beyond the `running` instances of an operator (`owning` of them own its key
/// groups) asks for, when `fits` instances at most fit: those, or all that run it when not
/// one more fits but fewer own its key groups.
fn asked(running: usize, owning: usize, fits: Result<usize, String>) -> Result<usize, String> {
    match fits {
        Err(_) if owning < running => Ok(running),
        fits => fits,
    }
}

/// What a rescale of `operator` to `to` instances asks for: beyond the instances that run it,
/// the most that fit where the query runs now (the workers that join later are used by a
/// later round), or all that run it when not one more fits but fewer own its key groups now;
/// `Err` when nothing more fits, saying why.
fn fitting(control: &Control, operator: &str, to: u32) -> Result<u32, String> {
    let info = control.info();
    let Some(o) = info.operators.iter().find(|o| o.name == operator) else {
        return Ok(to);
    };
    let Some(running) = o.max_parallelism else {
        return Ok(to);
    };
    let wanted = usize::try_from(to).unwrap_or(usize::MAX);
    if wanted <= running || !control.grows_at_all(operator) {
        return Ok(to);
    }
    let owning = control
        .params(operator)
        .ok()
        .and_then(|ps| {
            ps.into_iter()
                .find(|p| p.name == crate::rescale::PARALLELISM)
        })
        .and_then(|p| p.value.parse::<usize>().ok())
        .unwrap_or(running);
    let fits = asked(
        running,
        owning,
        control.most_that_fit(operator, running, wanted),
    )?;
    if fits < wanted {
        tracing::info!(
            query = control.name(),
            operator,
            wanted,
            fits,
            "the autoscaler asks for the instances that fit"
        );
    }
    Ok(u32::try_from(fits).unwrap_or(to))
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

    #[test]
    fn a_rescale_beyond_the_instances_that_run_an_operator_asks_for_what_fits() {
        use crate::control::window_control;
        // `w` runs 2 instances, both owning key groups.
        let fits = |room_for, to| fitting(&window_control(room_for).0, "w", to);
        assert_eq!(fits(3, 9), Ok(5));
        assert_eq!(fits(3, 4), Ok(4));
        assert_eq!(fits(3, 1), Ok(1), "a scale-down");
        assert_eq!(fits(0, 3), Err("1 do not fit, 0 do".to_string()));
        // Fewer own its key groups than run it: all that run it, when not one more fits.
        let none = || Err("no room".to_string());
        assert_eq!(asked(4, 2, none()), Ok(4));
        assert_eq!(asked(4, 4, none()), none());
        assert_eq!(asked(4, 2, Ok(6)), Ok(6));
    }

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
