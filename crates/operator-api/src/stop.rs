//! The run's order to stop, as an operator that can be busy for long sees it.
//!
//! A stop (Ctrl-C, SIGTERM, `anduin ctl stop`) has the sources stop reading; every operator
//! then processes what was read and the run ends. An operator whose work on what was read
//! can take minutes (a pattern whose partial matches pile up) checks [`StopDeadline::passed`]
//! in its inner loops, between units of work after which its state is whole (a row fed), and
//! gives up the rest of that work once the stop is [`GRACE`] old: work that ends within the
//! grace is not disturbed, so a stop still processes what was read whenever it can.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anduin_types::SharedClock;

/// How long an operator's work goes on after it first sees the run asked to stop.
pub const GRACE: Duration = Duration::from_secs(1);

/// Whether the run was asked to stop: the flag of `RunConfig::stop`, which the runtime puts
/// in every [`crate::BuildContext`]; by default, never.
#[derive(Debug, Clone, Default)]
pub struct StopRequest(Option<Arc<AtomicBool>>);

impl StopRequest {
    /// A request raised when `flag` is set.
    pub fn new(flag: Arc<AtomicBool>) -> Self {
        Self(Some(flag))
    }

    /// Whether the run was asked to stop (a relaxed load: cheap enough for every row).
    ///
    /// # Examples
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use anduin_operator_api::StopRequest;
    /// let flag = Arc::new(AtomicBool::new(false));
    /// let stop = StopRequest::new(Arc::clone(&flag));
    /// assert!(!stop.asked());
    /// flag.store(true, Ordering::Relaxed);
    /// assert!(stop.asked());
    /// assert!(!StopRequest::default().asked());
    /// ```
    pub fn asked(&self) -> bool {
        self.0.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

/// When an operator gives up its work after a stop: [`GRACE`] after it first saw the run asked
/// to stop, by the run's clock.
#[derive(Debug, Clone)]
pub struct StopDeadline {
    request: StopRequest,
    clock: SharedClock,
    /// When the operator first saw the stop.
    seen: Option<Instant>,
}

impl StopDeadline {
    /// A deadline of `request` read on `clock` (both from the operator's
    /// [`crate::BuildContext`]).
    pub fn new(request: StopRequest, clock: SharedClock) -> Self {
        Self {
            request,
            clock,
            seen: None,
        }
    }

    /// Whether the operator should give up its work now: the run was asked to stop at least
    /// [`GRACE`] before (the first call that sees the stop starts the grace). Until a stop is
    /// asked it costs a relaxed load.
    ///
    /// # Examples
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use anduin_operator_api::{StopDeadline, StopRequest, GRACE};
    /// use anduin_types::ManualClock;
    /// let flag = Arc::new(AtomicBool::new(false));
    /// let clock = Arc::new(ManualClock::new());
    /// let mut deadline = StopDeadline::new(StopRequest::new(Arc::clone(&flag)), clock.clone());
    /// assert!(!deadline.passed());
    /// flag.store(true, Ordering::Relaxed);
    /// assert!(!deadline.passed(), "the grace starts");
    /// clock.advance(GRACE);
    /// assert!(deadline.passed());
    /// ```
    pub fn passed(&mut self) -> bool {
        if !self.request.asked() {
            return false;
        }
        let now = self.clock.now();
        let seen = *self.seen.get_or_insert(now);
        now.saturating_duration_since(seen) >= GRACE
    }
}
