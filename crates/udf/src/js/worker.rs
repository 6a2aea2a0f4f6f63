//! An engine on a thread of its own, and the watchdog of the thread that waits for it.
//!
//! Why a thread: QuickJS can stop a call only where it polls its interrupt handler —
//! between bytecodes, on calls, inside its regular expression engine and a few array
//! built-ins — so a single built-in call that works on megabytes, or never returns
//! (`'a'.repeat(1 << 22).indexOf('a'.repeat(1 << 21) + 'b')`), cannot be stopped from inside.
//! The caller's thread waits for the call at most until the backstop (or the grace after
//! the run's stop) and then gives up on it: the engine is told to halt (its next interrupt
//! check stops it, its allocator refuses everything), and is abandoned. Its thread ends
//! when the call does; one that never returns spins until the process exits, which the
//! failed query is then about to do.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::ArrayRef;

use super::engine::Engine;
use super::meter::{Halt, Meter};
use crate::columns::each_row;
use crate::{Declaration, Limits, UdfError};

/// How often a waiting caller looks at the run's stop flag. A clock, not a synchronisation:
/// the result itself wakes the caller.
const POLL: Duration = Duration::from_millis(100);

/// One batch for an engine.
struct Job {
    args: Vec<ArrayRef>,
    rows: usize,
}

/// An engine on its thread. Dropping it ends the thread once its current call, if any, ends.
pub(super) struct Worker {
    jobs: mpsc::Sender<Job>,
    results: mpsc::Receiver<Result<ArrayRef, UdfError>>,
    meter: Arc<Meter>,
}

impl Worker {
    /// `engine` on a thread of its own, calling `declaration` with `limits`.
    pub(super) fn start(
        engine: Engine,
        declaration: Arc<Declaration>,
        limits: Limits,
    ) -> Result<Worker, UdfError> {
        let meter = Arc::clone(engine.meter());
        let name = declaration.name.clone();
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (outbox, results) = mpsc::channel();
        std::thread::Builder::new()
            .name("anduin-udf-js".into())
            .spawn(move || {
                let mut engine = engine;
                for job in inbox {
                    let out = each_row(&declaration, &job.args, job.rows, |row| {
                        engine.call(&declaration, limits, row)
                    });
                    // An engine whose call failed may be half-way through: not used again.
                    let failed = out.is_err();
                    if outbox.send(out).is_err() || failed {
                        break;
                    }
                }
            })
            .map_err(|e| {
                UdfError::Engine(format!(
                    "cannot start a thread for the JavaScript engine of function `{name}`: {e}"
                ))
            })?;
        Ok(Worker {
            jobs,
            results,
            meter,
        })
    }

    /// The function `name` on `rows` rows of `args`, waited for while its current call is
    /// within `limits.backstop` (and [`crate::stop::GRACE`] once the run is asked to stop).
    /// After an error the worker must be dropped.
    pub(super) fn call(
        &self,
        name: &str,
        limits: Limits,
        args: &[ArrayRef],
        rows: usize,
    ) -> Result<ArrayRef, UdfError> {
        let lost = || {
            UdfError::Engine(format!(
                "the JavaScript engine of function `{name}` stopped unexpectedly (a bug in anduin)"
            ))
        };
        let sent = Instant::now();
        self.jobs
            .send(Job {
                args: args.to_vec(),
                rows,
            })
            .map_err(|_| lost())?;
        let mut stop_seen: Option<Instant> = None;
        loop {
            let now = Instant::now();
            // The current call began then; no call of this batch began before it was sent
            // (the meter may still show the previous batch's last call).
            let began = self.meter.began().max(sent);
            let mut deadline = (began + limits.backstop, Halt::Time);
            if stop_seen.is_none() && crate::stop::asked() {
                stop_seen = Some(now);
            }
            if let Some(seen) = stop_seen {
                let grace = began.max(seen) + crate::stop::GRACE;
                if grace < deadline.0 {
                    deadline = (grace, Halt::Stopping);
                }
            }
            if now >= deadline.0 {
                if let Ok(out) = self.results.try_recv() {
                    return out;
                }
                self.meter.halt(deadline.1);
                return Err(match deadline.1 {
                    Halt::Time => UdfError::OutOfTime {
                        function: name.to_string(),
                        limit: limits.backstop,
                    },
                    Halt::Stopping => UdfError::Stopped {
                        function: name.to_string(),
                        grace: crate::stop::GRACE,
                    },
                });
            }
            match self.results.recv_timeout((deadline.0 - now).min(POLL)) {
                Ok(out) => return out,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(lost()),
            }
        }
    }
}
