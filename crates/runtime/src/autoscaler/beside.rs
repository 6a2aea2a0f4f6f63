//! A loop beside a running query: once the query runs, every interval it takes the query's
//! live figures and hands a [`Round`] the observation of the window since the last (what every
//! operator did, [`super::observation`]). The autoscaler is one such round; the rules applied
//! at run time (`anduin run --rules`) are another. It ends when the query ends or its
//! [`Beside`] handle is dropped.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anduin_coordinator::autoscale::Observation;

use crate::control::{Control, OperatorInfo, QueryMetrics, QueryState};

/// What a loop beside a query does with each window.
pub trait Round: Send + 'static {
    /// Called once, when the query runs, with its operators (topological order). An error
    /// (in words) stops the loop before its first round.
    fn begin(&mut self, control: &Control, operators: &[OperatorInfo]) -> Result<(), String>;

    /// One window's observation (its `rescales` empty: the round adds what it knows).
    /// Returns whether it changed the query: the next window then begins after the change.
    fn round(&mut self, control: &Control, observation: Observation) -> bool;
}

/// A running loop beside a query; dropping it stops it (after the round under way).
#[must_use = "dropping the loop stops it"]
pub struct Beside {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Beside {
    fn drop(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        let (stopped, wake) = &*self.stop;
        *stopped
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        wake.notify_all();
        let _ = thread.join();
    }
}

impl Beside {
    /// Lets the loop run on its own: it ends when the query leaves the running state (a
    /// cluster's attempt ends when its control plane is detached), not when this is dropped.
    pub fn detach(mut self) {
        drop(self.thread.take());
    }
}

/// Starts `round` beside the query `control` runs, a round every `interval` (the first one
/// interval after the query runs), on a thread named `name`.
pub fn beside(
    control: Arc<Control>,
    interval: Duration,
    name: &str,
    round: impl Round,
) -> std::io::Result<Beside> {
    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    let stopped = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name(format!("{name}-{}", control.name()))
        .spawn(move || run(&control, interval, round, &stopped))?;
    Ok(Beside {
        stop,
        thread: Some(thread),
    })
}

/// Waits `d`; whether the loop was stopped meanwhile.
fn stopped_within(stop: &(Mutex<bool>, Condvar), d: Duration) -> bool {
    let (stopped, wake) = stop;
    let guard = stopped
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (guard, _) = wake
        .wait_timeout_while(guard, d, |s| !*s)
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *guard
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

pub(crate) fn as_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn run(
    control: &Control,
    interval: Duration,
    mut round: impl Round,
    stop: &(Mutex<bool>, Condvar),
) {
    // Until the query runs (its operators are known).
    let operators = loop {
        if stopped_within(stop, interval.min(Duration::from_millis(50))) {
            return;
        }
        let info = control.info();
        match info.state {
            QueryState::Starting => {}
            QueryState::Running => break info.operators,
            _ => return,
        }
    };
    if let Err(why) = round.begin(control, &operators) {
        tracing::error!(
            query = control.name(),
            why,
            "a loop beside the query does not run"
        );
        return;
    }
    let mut before: (QueryMetrics, Instant) = (control.metrics(), Instant::now());
    let mut last_ms = 0;
    loop {
        if stopped_within(stop, interval) || control.info().state != QueryState::Running {
            return;
        }
        let now = control.metrics();
        let window_ms = u64::try_from(before.1.elapsed().as_millis()).unwrap_or(u64::MAX);
        // The rounds' time never goes back, whatever the wall clock does.
        let at_ms = now_ms().max(last_ms);
        last_ms = at_ms;
        let observation = super::observation(
            &operators,
            |op| current_parallelism(control, op),
            &before.0,
            &now,
            window_ms,
            at_ms,
            &[],
        );
        before = (now, Instant::now());
        if round.round(control, observation) {
            before = (control.metrics(), Instant::now());
        }
    }
}

/// How many instances of `op` own its key groups now (its `parallelism` param), or, for an
/// operator that cannot be rescaled, its instances.
pub fn current_parallelism(control: &Control, op: &OperatorInfo) -> u32 {
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
