//! The run's order to stop, as the functions' calls see it: once the run is asked to stop
//! (Ctrl-C, SIGTERM, `anduin ctl stop`), a call that is still running [`GRACE`] later — one
//! stuck in a JavaScript built-in that never returns — is abandoned
//! ([`crate::UdfError::Stopped`]), so that the stop is not held up by it. Calls that end
//! within the grace are not disturbed: a stop still processes what was read.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

/// How long a call may go on after the run was asked to stop.
pub(crate) const GRACE: Duration = Duration::from_secs(1);

/// The flag of the run this process runs, if one was given.
static RUN_STOP: RwLock<Option<Arc<AtomicBool>>> = RwLock::new(None);

/// Makes `stop`, the flag that asks the process's run to stop, bound the calls of every
/// function: once it is set, a call still running [`GRACE`] (1 s) after it was seen is
/// abandoned. For a process that runs one query (`anduin run`); a later flag replaces an
/// earlier one.
///
/// # Examples
/// ```
/// use std::sync::atomic::AtomicBool;
/// use std::sync::Arc;
/// let stop = Arc::new(AtomicBool::new(false));
/// anduin_udf::stop_calls_when(Arc::clone(&stop));
/// ```
pub fn stop_calls_when(stop: Arc<AtomicBool>) {
    *RUN_STOP.write().unwrap_or_else(PoisonError::into_inner) = Some(stop);
}

/// Whether the run was asked to stop.
pub(crate) fn asked() -> bool {
    RUN_STOP
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .is_some_and(|s| s.load(Ordering::Relaxed))
}
