//! Paces a source to a rate of rows (or events) per second, on the run's [`Clock`]: a test on
//! a `ManualClock` gets exactly the rows its time allows.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anduin_types::{SharedClock, SystemClock};

/// When a paced source started, and where it counted from.
#[derive(Debug)]
pub(crate) struct Pace {
    clock: SharedClock,
    /// When the first row after `base` was allowed (set on the first poll).
    started: Option<Instant>,
    /// The position the rate counts from (a resumed run is not owed the rows before it).
    base: u64,
}

impl Default for Pace {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            started: None,
            base: 0,
        }
    }
}

impl Pace {
    /// Reads the time from `clock`.
    pub(crate) fn set_clock(&mut self, clock: SharedClock) {
        self.clock = clock;
    }

    /// Counts the rate from position `at`, starting at the next poll.
    pub(crate) fn restart(&mut self, at: u64) {
        self.started = None;
        self.base = at;
    }

    /// The first position not yet due at `rate` per second (the first one is due at once),
    /// or `None` when position `at` is not due yet: then it has waited for it, but not past
    /// `deadline`.
    pub(crate) fn due_before(&mut self, rate: f64, at: u64, deadline: Instant) -> Option<u64> {
        let now = self.clock.now();
        let started = *self.started.get_or_insert(now);
        let elapsed = now.saturating_duration_since(started).as_secs_f64();
        let due = self.base + (elapsed * rate).floor() as u64 + 1;
        if due > at {
            return Some(due);
        }
        let next = started + Duration::from_secs_f64(at.saturating_sub(self.base) as f64 / rate);
        let wait = next
            .saturating_duration_since(now)
            .min(deadline.saturating_duration_since(Instant::now()));
        std::thread::sleep(wait);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anduin_types::ManualClock;

    #[test]
    fn a_manual_clock_allows_exactly_the_rows_its_time_covers() {
        let clock = Arc::new(ManualClock::new());
        let mut pace = Pace::default();
        pace.set_clock(Arc::clone(&clock) as SharedClock);
        let now = Instant::now();
        assert_eq!(pace.due_before(100.0, 0, now), Some(1));
        assert_eq!(pace.due_before(100.0, 1, now), None);
        clock.advance(Duration::from_millis(500));
        assert_eq!(pace.due_before(100.0, 1, now), Some(51));
        assert_eq!(pace.due_before(100.0, 51, now), None);
        pace.restart(51);
        assert_eq!(pace.due_before(100.0, 51, now), Some(52));
        clock.advance(Duration::from_secs(1));
        assert_eq!(pace.due_before(100.0, 52, now), Some(152));
    }
}
