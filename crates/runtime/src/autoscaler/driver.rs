//! The loop that runs the autoscaler beside a query: every interval it takes the query's live
//! figures, makes an observation of what happened since the last ([`super::observation`]),
//! decides a round ([`anduin_coordinator::autoscale::DecisionLog::record`]), carries out its
//! changes as rescales through the control plane (`parallelism`, as `anduin ctl scale` does,
//! from `autoscaler`), and keeps the log where `anduin ctl autoscale` reads it.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anduin_coordinator::autoscale::{AutoscaleState, DecisionLog, RescaleFact};

use super::settings::{fit, pin, AutoscaleSettings, Rescalable};
use super::{AutoscaleFailure, AutoscaleReport, FAILURES_KEPT};
use crate::control::{ChangeRequest, Control, OperatorInfo, QueryMetrics, QueryState};

/// Who the autoscaler's changes are from, in the history.
pub const FROM: &str = "autoscaler";

/// The running autoscaler of one query; dropping it stops it (after the round under way).
#[must_use = "dropping the autoscaler stops it"]
pub struct Autoscaler {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Autoscaler {
    fn drop(&mut self) {
        let (stopped, wake) = &*self.stop;
        *stopped
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts the autoscaler of the query `control` runs: its first round comes one interval
/// after the query is running; it ends when the query ends, or when dropped.
pub fn start(control: Arc<Control>, settings: AutoscaleSettings) -> std::io::Result<Autoscaler> {
    control.enable_autoscale(AutoscaleReport::new(&settings));
    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    let stopped = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name(format!("autoscaler-{}", control.name()))
        .spawn(move || run(&control, &settings, &stopped))?;
    Ok(Autoscaler {
        stop,
        thread: Some(thread),
    })
}

/// Waits `d`; whether the autoscaler was stopped meanwhile.
fn stopped_within(stop: &(Mutex<bool>, Condvar), d: std::time::Duration) -> bool {
    let (stopped, wake) = stop;
    let guard = stopped
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (guard, _) = wake
        .wait_timeout_while(guard, d, |s| !*s)
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *guard
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The operators as the settings are fitted to them.
fn rescalables(operators: &[OperatorInfo]) -> Vec<Rescalable> {
    operators
        .iter()
        .map(|o| Rescalable {
            name: o.name.clone(),
            source: o.inputs.is_empty(),
            instances: o.max_parallelism.and_then(|m| u32::try_from(m).ok()),
        })
        .collect()
}

fn as_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn run(control: &Control, settings: &AutoscaleSettings, stop: &(Mutex<bool>, Condvar)) {
    // Until the query runs (its operators are known), then the settings fitted to them.
    let operators = loop {
        if stopped_within(
            stop,
            settings.interval.min(std::time::Duration::from_millis(50)),
        ) {
            return;
        }
        let info = control.info();
        match info.state {
            QueryState::Starting => {}
            QueryState::Running => break info.operators,
            _ => return,
        }
    };
    let ops = rescalables(&operators);
    let config = match fit(&settings.config, &ops) {
        Ok(fitted) => pin(&fitted, &ops, |name| {
            operators
                .iter()
                .find(|o| o.name == name)
                .map_or(1, |o| as_u32(o.parallelism))
        }),
        Err(e) => {
            tracing::error!(query = control.name(), error = %e, "the autoscaler does not run");
            control.record_autoscale(|r| {
                r.failures.push(AutoscaleFailure {
                    at_ms: now_ms(),
                    operator: None,
                    message: format!("the autoscaler does not run: {e}"),
                });
            });
            return;
        }
    };
    control
        .record_autoscale(|r| r.log = DecisionLog::new(config.clone(), AutoscaleState::default()));
    let interval_ms = u64::try_from(settings.interval.as_millis()).unwrap_or(u64::MAX);
    tracing::info!(query = control.name(), interval_ms, "the autoscaler runs");
    let mut log = DecisionLog::new(config, AutoscaleState::default());
    let mut rescales: Vec<RescaleFact> = Vec::new();
    let mut before: (QueryMetrics, Instant) = (control.metrics(), Instant::now());
    let mut last_ms = 0;
    loop {
        if stopped_within(stop, settings.interval) {
            return;
        }
        if control.info().state != QueryState::Running {
            return;
        }
        let now = control.metrics();
        let window_ms = u64::try_from(before.1.elapsed().as_millis()).unwrap_or(u64::MAX);
        let at_ms = now_ms().max(last_ms);
        last_ms = at_ms;
        let parallelism = |op: &OperatorInfo| current_parallelism(control, op);
        let observation = super::observation(
            &operators,
            parallelism,
            &before.0,
            &now,
            window_ms,
            at_ms,
            &rescales,
        );
        before = (now, Instant::now());
        let changes: Vec<(String, u32)> = match log.record(observation) {
            Ok(round) => round
                .changes()
                .into_iter()
                .map(|(op, to)| (op.to_string(), to))
                .collect(),
            Err(e) => {
                tracing::warn!(query = control.name(), error = %e, "an autoscaler round was refused");
                failed(control, at_ms, None, format!("round refused: {e}"));
                continue;
            }
        };
        log.keep_last(settings.keep_rounds);
        control.record_autoscale(|r| r.log = log.clone());
        for (operator, to) in &changes {
            let started_at_ms = now_ms().max(last_ms);
            let request = ChangeRequest {
                operator: operator.clone(),
                param: crate::rescale::PARALLELISM.to_string(),
                value: to.to_string(),
                from: FROM.to_string(),
            };
            match control.set(request) {
                Ok(record) => {
                    let finished_at_ms = now_ms().max(started_at_ms);
                    last_ms = finished_at_ms;
                    tracing::info!(
                        query = control.name(),
                        operator = %operator,
                        to,
                        epoch = ?record.epoch,
                        took_ms = finished_at_ms - started_at_ms,
                        "the autoscaler rescaled an operator"
                    );
                    rescales.push(RescaleFact {
                        operator: operator.clone(),
                        started_at_ms,
                        finished_at_ms,
                    });
                    let keep = usize::try_from(log.config.rescale_history).unwrap_or(usize::MAX);
                    let drop = rescales.len().saturating_sub(keep);
                    rescales.drain(..drop);
                }
                Err(e) => {
                    tracing::warn!(query = control.name(), operator = %operator, to, error = %e, "the autoscaler's rescale failed");
                    failed(
                        control,
                        now_ms(),
                        Some(operator),
                        format!("rescale to {to} failed: {e}"),
                    );
                }
            }
        }
        if !changes.is_empty() {
            let (observed, rescaled) = (rescales.clone(), control.metrics());
            control.record_autoscale(|r| r.rescales = observed);
            // The next window begins after the rescales.
            before = (rescaled, Instant::now());
        }
    }
}

/// How many instances of `op` own its key groups now (its `parallelism` param), or, for an
/// operator that cannot be rescaled, its instances.
fn current_parallelism(control: &Control, op: &OperatorInfo) -> u32 {
    if op.max_parallelism.is_none() {
        return as_u32(op.parallelism);
    }
    control
        .params(&op.name)
        .ok()
        .and_then(|params| {
            params
                .into_iter()
                .find(|p| p.name == crate::rescale::PARALLELISM)
                .and_then(|p| p.value.parse().ok())
        })
        .or_else(|| op.owners.map(as_u32))
        .unwrap_or_else(|| as_u32(op.parallelism))
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
