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
//!
//! The worker is generic over what it is asked (`J`) and answers (`R`): a scalar function's
//! engine is given batches of rows, an aggregate's engine steps over groups' states. The
//! engine itself is made on the worker's thread (an aggregate's engine holds values that
//! may not cross threads), its making waited for as a call is.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::meter::{Halt, Meter};
use crate::{Limits, UdfError};

/// How often a waiting caller looks at the run's stop flag. A clock, not a synchronisation:
/// the result itself wakes the caller.
const POLL: Duration = Duration::from_millis(100);

/// What the worker's thread sends back.
enum Reply<R> {
    /// The engine is made and waits for jobs.
    Ready,
    /// A job's answer.
    Done(R),
}

/// An engine on its thread, given jobs `J` and answering `R`. Dropping it ends the thread
/// once its current call, if any, ends.
pub(super) struct Worker<J, R> {
    jobs: mpsc::Sender<J>,
    results: mpsc::Receiver<Result<Reply<R>, UdfError>>,
    meter: Arc<Meter>,
    /// The function's name, for errors.
    name: String,
    limits: Limits,
}

impl<J: Send + 'static, R: Send + 'static> Worker<J, R> {
    /// An engine made by `make` on a thread of its own (waited for as a call is: a top
    /// level that runs away is stopped by its fuel, one stuck in a built-in by the
    /// backstop), then given each job through `run`. `meter` bounds what `make` and `run`
    /// do; `name` is the function's.
    pub(super) fn start<E>(
        name: &str,
        meter: Arc<Meter>,
        limits: Limits,
        make: impl FnOnce() -> Result<E, UdfError> + Send + 'static,
        mut run: impl FnMut(&mut E, J) -> Result<R, UdfError> + Send + 'static,
    ) -> Result<Worker<J, R>, UdfError> {
        let (jobs, inbox) = mpsc::channel::<J>();
        let (outbox, results) = mpsc::channel();
        std::thread::Builder::new()
            .name("anduin-udf-js".into())
            .spawn(move || {
                let mut engine = match make() {
                    Ok(e) => e,
                    Err(e) => {
                        let _ = outbox.send(Err(e));
                        return;
                    }
                };
                if outbox.send(Ok(Reply::Ready)).is_err() {
                    return;
                }
                for job in inbox {
                    let out = run(&mut engine, job);
                    // An engine whose call failed may be half-way through: not used again.
                    let failed = out.is_err();
                    if outbox.send(out.map(Reply::Done)).is_err() || failed {
                        break;
                    }
                }
            })
            .map_err(|e| {
                UdfError::Engine(format!(
                    "cannot start a thread for the JavaScript engine of function `{name}`: {e}"
                ))
            })?;
        let worker = Worker {
            jobs,
            results,
            meter,
            name: name.to_string(),
            limits,
        };
        match worker.wait(Instant::now())? {
            Reply::Ready => Ok(worker),
            Reply::Done(_) => Err(worker.lost()),
        }
    }

    /// The answer to `job`, waited for while its current call is within the backstop (and
    /// [`crate::stop::GRACE`] once the run is asked to stop). After an error the worker must
    /// be dropped.
    pub(super) fn call(&self, job: J) -> Result<R, UdfError> {
        let sent = Instant::now();
        self.jobs.send(job).map_err(|_| self.lost())?;
        match self.wait(sent)? {
            Reply::Done(out) => Ok(out),
            Reply::Ready => Err(self.lost()),
        }
    }

    fn lost(&self) -> UdfError {
        UdfError::Engine(format!(
            "the JavaScript engine of function `{}` stopped unexpectedly (a bug in anduin)",
            self.name
        ))
    }

    /// The next reply, for work sent at `sent`.
    fn wait(&self, sent: Instant) -> Result<Reply<R>, UdfError> {
        let limits = self.limits;
        let mut stop_seen: Option<Instant> = None;
        loop {
            let now = Instant::now();
            // The current call began then; no call of this work began before it was sent
            // (the meter may still show the previous job's last call).
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
                        function: self.name.clone(),
                        limit: limits.backstop,
                    },
                    Halt::Stopping => UdfError::Stopped {
                        function: self.name.clone(),
                        grace: crate::stop::GRACE,
                    },
                });
            }
            match self.results.recv_timeout((deadline.0 - now).min(POLL)) {
                Ok(out) => return out,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(self.lost()),
            }
        }
    }
}
