//! SIGINT (Ctrl-C) and SIGTERM: the first stops the run cleanly, a second one exits at once,
//! and every message names the signal that came.
//!
//! A signal handler may do almost nothing safely: `signal-hook` records the signal and wakes a
//! thread of ours, which does the rest.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};

/// A signal that stops a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT, as Ctrl-C in a terminal sends.
    Interrupt,
    /// SIGTERM, as `kill` and service managers send.
    Terminate,
}

impl Stop {
    fn of(signal: i32) -> Self {
        if signal == SIGTERM {
            Stop::Terminate
        } else {
            Stop::Interrupt
        }
    }

    /// How messages name it.
    pub fn describe(self) -> &'static str {
        match self {
            Stop::Interrupt => "Ctrl-C (SIGINT)",
            Stop::Terminate => "SIGTERM",
        }
    }

    /// The exit code of a run it stopped: 128 + the signal's number, as shells report.
    pub fn exit_code(self) -> u8 {
        match self {
            Stop::Interrupt => 130,
            Stop::Terminate => 143,
        }
    }
}

/// The first stopping signal received, if any.
pub struct Signals {
    first: Arc<AtomicI32>,
}

impl Signals {
    /// The signal that stopped the run, if one did (a run stopped through the API, `anduin
    /// ctl stop`, saw none).
    pub fn received(&self) -> Option<Stop> {
        match self.first.load(Ordering::SeqCst) {
            0 => None,
            signal => Some(Stop::of(signal)),
        }
    }
}

/// Makes SIGINT and SIGTERM set `stop` (the run then stops cleanly); a second one exits at
/// once. Where the handlers cannot be installed, a warning says so and the signals keep
/// their default action (the process ends).
pub fn install(stop: Arc<AtomicBool>) -> Signals {
    let first = Arc::new(AtomicI32::new(0));
    let signals = Signals {
        first: Arc::clone(&first),
    };
    let mut incoming = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch for Ctrl-C and SIGTERM");
            return signals;
        }
    };
    let watcher = std::thread::Builder::new()
        .name("anduin-signals".into())
        .spawn(move || {
            for signal in incoming.forever() {
                received(Stop::of(signal), signal, &stop, &first);
            }
        });
    if let Err(e) = watcher {
        tracing::warn!(error = %e, "cannot watch for Ctrl-C and SIGTERM");
    }
    signals
}

fn received(by: Stop, signal: i32, stop: &AtomicBool, first: &AtomicI32) {
    if stop.swap(true, Ordering::SeqCst) {
        eprintln!(
            "anduin: stopped at once by a second signal ({}); output may be incomplete",
            by.describe()
        );
        std::process::exit(i32::from(by.exit_code()));
    }
    first.store(signal, Ordering::SeqCst);
    eprintln!(
        "anduin: stopping on {} (Ctrl-C or SIGTERM again to stop at once)…",
        by.describe()
    );
}
