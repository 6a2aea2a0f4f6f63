//! SIGINT (Ctrl-C) and SIGTERM: the first stops the run cleanly, a second one exits at once,
//! and every message names the signal that came.
//!
//! A signal handler may do almost nothing safely: it writes the signal's number to a pipe,
//! and a thread reading the pipe does the rest.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

/// The end of the pipe the handler writes to (-1 until installed).
static PIPE: AtomicI32 = AtomicI32::new(-1);

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
        if signal == libc::SIGTERM {
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
    /// The signal that stopped the run (Ctrl-C if none was seen, which a stopped run
    /// cannot be).
    pub fn received(&self) -> Stop {
        Stop::of(self.first.load(Ordering::SeqCst))
    }
}

extern "C" fn on_signal(signal: libc::c_int) {
    let fd = PIPE.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = u8::try_from(signal).unwrap_or(0);
        // SAFETY: write(2) is async-signal-safe; the buffer is one byte on this stack.
        unsafe {
            libc::write(fd, std::ptr::from_ref(&byte).cast(), 1);
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
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills the two descriptors of the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        tracing::warn!(error = %std::io::Error::last_os_error(), "cannot watch for Ctrl-C and SIGTERM");
        return signals;
    }
    let [read_end, write_end] = fds;
    PIPE.store(write_end, Ordering::SeqCst);
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is valid; the handler only calls write(2).
        let installed = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut()) == 0
        };
        if !installed {
            tracing::warn!(signal, error = %std::io::Error::last_os_error(), "cannot handle the signal");
        }
    }
    let watcher = std::thread::Builder::new()
        .name("anduin-signals".into())
        .spawn(move || loop {
            let mut byte = 0u8;
            // SAFETY: reads at most one byte into `byte`.
            let n = unsafe { libc::read(read_end, std::ptr::from_mut(&mut byte).cast(), 1) };
            if n == 1 {
                received(Stop::of(i32::from(byte)), i32::from(byte), &stop, &first);
            } else if n < 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
                continue;
            } else {
                return;
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
