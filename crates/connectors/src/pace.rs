//! Paces a source to a rate of rows (or events) per second, on the run's [`Clock`]: a test on
//! a `ManualClock` gets exactly the rows its time allows.
//!
//! [`Clock`]: anduin_types::Clock

/// The rates a source may be paced to, per second (bounds of param `rate`): from one row in
/// 1000 seconds to a trillion, so that the time of any row (and an event time derived from
/// it) stays within `i64` milliseconds over any count of rows.
pub(crate) const RATES: std::ops::RangeInclusive<f64> = 1e-3..=1e12;

/// What a rate out of [`RATES`] is told.
pub(crate) const RATE_RANGE: &str = "must be a number of rows per second from 0.001 to 1e12";

/// The new rate of a paced source `operator` whose param `param` is changed to `value` while
/// running: the only param it can change is `rate` (its `adjustable` list).
pub(crate) fn changed_rate(
    operator: &str,
    param: &str,
    value: &str,
    adjustable: &[&str],
) -> Result<f64, anduin_operator_api::ControlError> {
    use anduin_operator_api::ControlError;
    if param != "rate" {
        return Err(ControlError::NotAdjustable {
            operator: operator.to_string(),
            param: param.to_string(),
            adjustable: adjustable.join(", "),
        });
    }
    match value.trim().parse::<f64>() {
        Ok(rate) if valid_rate(rate) => Ok(rate),
        _ => Err(ControlError::Invalid {
            operator: operator.to_string(),
            param: param.to_string(),
            message: format!("{RATE_RANGE}, found {value:?}"),
        }),
    }
}

/// Whether `rate` is one a source may be paced to.
pub(crate) fn valid_rate(rate: f64) -> bool {
    RATES.contains(&rate)
}

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

    /// The rate changes after position `at` (a meta query): the next row is due one interval
    /// of the new rate from now, not at once.
    pub(crate) fn change(&mut self, at: u64) {
        self.started = Some(self.clock.now());
        self.base = at.saturating_sub(1);
    }

    /// The first position not yet due at `rate` per second (the first one is due at once),
    /// or `None` when position `at` is not due yet: then it has waited for it, but not past
    /// `deadline`.
    pub(crate) fn due_before(&mut self, rate: f64, at: u64, deadline: Instant) -> Option<u64> {
        let now = self.clock.now();
        let started = *self.started.get_or_insert(now);
        let elapsed = now.saturating_duration_since(started).as_secs_f64();
        // `as` saturates: a rate far above what a source can produce allows everything.
        let due = self
            .base
            .saturating_add((elapsed * rate).floor() as u64)
            .saturating_add(1);
        if due > at {
            return Some(due);
        }
        let until_deadline = deadline.saturating_duration_since(Instant::now());
        let ahead = Duration::try_from_secs_f64(at.saturating_sub(self.base) as f64 / rate)
            .unwrap_or(Duration::MAX);
        let wait = started.checked_add(ahead).map_or(until_deadline, |next| {
            next.saturating_duration_since(now).min(until_deadline)
        });
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

    #[test]
    fn after_a_change_of_rate_the_next_row_waits_one_interval_of_the_new_rate() {
        let clock = Arc::new(ManualClock::new());
        let mut pace = Pace::default();
        pace.set_clock(Arc::clone(&clock) as SharedClock);
        let now = Instant::now();
        assert_eq!(pace.due_before(100.0, 0, now), Some(1));
        pace.change(1);
        assert_eq!(pace.due_before(10.0, 1, now), None);
        clock.advance(Duration::from_millis(99));
        assert_eq!(pace.due_before(10.0, 1, now), None);
        clock.advance(Duration::from_millis(1));
        assert_eq!(pace.due_before(10.0, 1, now), Some(2));
        clock.advance(Duration::from_secs(1));
        assert_eq!(pace.due_before(10.0, 2, now), Some(12));
    }

    #[test]
    fn the_extreme_rates_neither_panic_nor_wait_past_the_deadline() {
        let clock = Arc::new(ManualClock::new());
        for rate in [*RATES.start(), *RATES.end(), 1e-300, 1e300] {
            let mut pace = Pace::default();
            pace.set_clock(Arc::clone(&clock) as SharedClock);
            let now = Instant::now();
            assert!(pace.due_before(rate, 0, now).is_some());
            let _ = pace.due_before(rate, u64::MAX - 1, now);
            pace.restart(u64::MAX - 1);
            assert!(pace.due_before(rate, u64::MAX - 1, now).is_some());
        }
        assert!(valid_rate(1.0) && !valid_rate(1e-4) && !valid_rate(1e13));
    }
}
