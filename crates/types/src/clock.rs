//! Where the engine reads the time for its decisions (when a checkpoint is due, when a
//! source's lingering rows go out, when an input counts as idle, how old the last checkpoint
//! is): a [`Clock`], so that tests can run the engine on a clock they move by hand. Waiting on
//! I/O (a file that grows, a socket) stays on the real time.

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A source of the current time.
pub trait Clock: Send + Sync + Debug {
    /// Now.
    fn now(&self) -> Instant;
}

/// A clock shared by the parts of a run.
pub type SharedClock = Arc<dyn Clock>;

/// The real time.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that stands still until it is moved ([`ManualClock::advance`]).
#[derive(Debug)]
pub struct ManualClock {
    base: Instant,
    offset_ms: AtomicU64,
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl ManualClock {
    /// A clock standing at the time it is made.
    pub fn new() -> Self {
        Self {
            base: Instant::now(),
            offset_ms: AtomicU64::new(0),
        }
    }

    /// Moves the clock forward by `by` (whole milliseconds).
    pub fn advance(&self, by: Duration) {
        let ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        self.offset_ms.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.base + Duration::from_millis(self.offset_ms.load(Ordering::SeqCst))
    }
}

/// Milliseconds from `since` to `clock`'s now (0 if now is before it).
pub fn elapsed_ms(clock: &dyn Clock, since: Instant) -> u64 {
    u64::try_from(clock.now().saturating_duration_since(since).as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_moved() {
        let c = ManualClock::new();
        let t0 = c.now();
        assert_eq!(c.now(), t0);
        c.advance(Duration::from_millis(1500));
        assert_eq!(elapsed_ms(&c, t0), 1500);
        assert_eq!(elapsed_ms(&c, t0 + Duration::from_secs(9)), 0);
    }
}
