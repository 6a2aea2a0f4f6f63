//! Which workers are alive: heartbeat bookkeeping, with the time passed in (never read here),
//! so that tests move it by hand.
//!
//! A worker heartbeats every [`HeartbeatSettings::interval`] (default 1 s); one silent for
//! [`HeartbeatSettings::timeout`] (default 5 s) is declared dead, once. A dead worker's tasks
//! are placed elsewhere, so a heartbeat from it afterwards is answered [`Heartbeat::Dead`]: it
//! must drop what it runs and register anew.
//!
//! # Example
//!
//! ```
//! use std::time::{Duration, Instant};
//! use anduin_coordinator::{FailureDetector, Heartbeat, HeartbeatSettings, WorkerId};
//!
//! let t0 = Instant::now();
//! let mut detector = FailureDetector::new(HeartbeatSettings::default());
//! detector.register(WorkerId(1), t0);
//! detector.register(WorkerId(2), t0);
//! assert_eq!(detector.on_heartbeat(WorkerId(1), t0 + Duration::from_secs(4)), Heartbeat::Alive);
//! assert_eq!(detector.dead_workers(t0 + Duration::from_secs(5)), vec![WorkerId(2)]);
//! assert_eq!(detector.dead_workers(t0 + Duration::from_secs(6)), vec![], "declared once");
//! assert_eq!(detector.on_heartbeat(WorkerId(2), t0 + Duration::from_secs(6)), Heartbeat::Dead);
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::ids::WorkerId;

/// How often workers heartbeat and how long a silence makes one dead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeartbeatSettings {
    interval: Duration,
    timeout: Duration,
}

impl Default for HeartbeatSettings {
    fn default() -> Self {
        HeartbeatSettings {
            interval: Duration::from_secs(1),
            timeout: Duration::from_secs(5),
        }
    }
}

/// Settings that cannot work.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeartbeatSettingsError {
    /// The interval is zero.
    #[error("the heartbeat interval must be more than 0")]
    ZeroInterval,
    /// A worker would be dead before its next heartbeat is due.
    #[error("the heartbeat timeout ({timeout:?}) must be longer than the interval ({interval:?}), or every worker is declared dead between two heartbeats")]
    TimeoutNotAfterInterval {
        /// The interval.
        interval: Duration,
        /// The timeout.
        timeout: Duration,
    },
}

impl HeartbeatSettings {
    /// Heartbeats every `interval`, dead after `timeout` of silence (longer than `interval`).
    pub fn new(interval: Duration, timeout: Duration) -> Result<Self, HeartbeatSettingsError> {
        if interval.is_zero() {
            return Err(HeartbeatSettingsError::ZeroInterval);
        }
        if timeout <= interval {
            return Err(HeartbeatSettingsError::TimeoutNotAfterInterval { interval, timeout });
        }
        Ok(HeartbeatSettings { interval, timeout })
    }

    /// How often a worker heartbeats (told to workers when they register).
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// How long a silence makes a worker dead.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// What a heartbeat means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Heartbeat {
    /// A live worker: noted.
    Alive,
    /// A worker never registered (or forgotten): it must register first.
    Unknown,
    /// A worker already declared dead, whose tasks went elsewhere: it must drop them and
    /// register anew.
    Dead,
}

/// The coordinator's view of which workers are alive.
#[derive(Clone, Debug)]
pub struct FailureDetector {
    settings: HeartbeatSettings,
    last_seen: BTreeMap<WorkerId, Instant>,
    dead: BTreeSet<WorkerId>,
}

impl FailureDetector {
    /// No worker known yet.
    pub fn new(settings: HeartbeatSettings) -> Self {
        FailureDetector {
            settings,
            last_seen: BTreeMap::new(),
            dead: BTreeSet::new(),
        }
    }

    /// The settings.
    pub fn settings(&self) -> HeartbeatSettings {
        self.settings
    }

    /// `worker` registered at `now` (or, for a restarted coordinator, is expected to
    /// re-attach: it has a whole timeout from `now` to heartbeat).
    pub fn register(&mut self, worker: WorkerId, now: Instant) {
        self.dead.remove(&worker);
        self.last_seen.insert(worker, now);
    }

    /// A heartbeat of `worker` arrived at `now`.
    pub fn on_heartbeat(&mut self, worker: WorkerId, now: Instant) -> Heartbeat {
        if self.dead.contains(&worker) {
            return Heartbeat::Dead;
        }
        match self.last_seen.get_mut(&worker) {
            Some(last) => {
                // A heartbeat read late never moves the time back.
                *last = (*last).max(now);
                Heartbeat::Alive
            }
            None => Heartbeat::Unknown,
        }
    }

    /// The workers silent for the timeout at `now`, each declared dead once (the first call
    /// that finds it silent).
    pub fn dead_workers(&mut self, now: Instant) -> Vec<WorkerId> {
        let timeout = self.settings.timeout;
        let newly: Vec<WorkerId> = self
            .last_seen
            .iter()
            .filter(|(_, last)| now.saturating_duration_since(**last) >= timeout)
            .map(|(w, _)| *w)
            .collect();
        for w in &newly {
            self.last_seen.remove(w);
            self.dead.insert(*w);
        }
        newly
    }

    /// When the next worker would be dead if it stays silent: when to call
    /// [`dead_workers`](Self::dead_workers) next (`None` when no worker is alive).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.last_seen
            .values()
            .min()
            .map(|last| *last + self.settings.timeout)
    }

    /// `worker` left cleanly: neither alive nor dead.
    pub fn forget(&mut self, worker: WorkerId) {
        self.last_seen.remove(&worker);
        self.dead.remove(&worker);
    }

    /// The live workers.
    pub fn alive(&self) -> impl Iterator<Item = WorkerId> + '_ {
        self.last_seen.keys().copied()
    }

    /// Whether `worker` is live.
    pub fn is_alive(&self, worker: WorkerId) -> bool {
        self.last_seen.contains_key(&worker)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn the_defaults_are_one_second_and_five() {
        let d = HeartbeatSettings::default();
        assert_eq!((d.interval(), d.timeout()), (s(1), s(5)));
    }

    #[test]
    fn settings_where_workers_die_between_heartbeats_are_refused() {
        assert_eq!(
            HeartbeatSettings::new(s(0), s(5)),
            Err(HeartbeatSettingsError::ZeroInterval)
        );
        let err = HeartbeatSettings::new(s(2), s(2)).expect_err("equal");
        assert!(
            err.to_string().contains("longer than the interval"),
            "{err}"
        );
        assert!(
            HeartbeatSettings::new(Duration::from_millis(100), Duration::from_millis(300)).is_ok()
        );
    }

    #[test]
    fn a_worker_is_dead_after_exactly_the_timeout_of_silence_and_not_before() {
        let t0 = Instant::now();
        let mut d = FailureDetector::new(HeartbeatSettings::new(s(1), s(3)).expect("valid"));
        d.register(WorkerId(1), t0);
        assert_eq!(d.next_deadline(), Some(t0 + s(3)));
        assert_eq!(d.dead_workers(t0 + s(3) - Duration::from_millis(1)), vec![]);
        assert_eq!(d.on_heartbeat(WorkerId(1), t0 + s(2)), Heartbeat::Alive);
        assert_eq!(d.next_deadline(), Some(t0 + s(5)));
        assert_eq!(d.dead_workers(t0 + s(4)), vec![]);
        assert_eq!(d.dead_workers(t0 + s(5)), vec![WorkerId(1)]);
        assert!(!d.is_alive(WorkerId(1)));
        assert_eq!(d.next_deadline(), None);
    }

    #[test]
    fn a_late_heartbeat_does_not_move_the_time_back() {
        let t0 = Instant::now();
        let mut d = FailureDetector::new(HeartbeatSettings::default());
        d.register(WorkerId(1), t0 + s(4));
        assert_eq!(d.on_heartbeat(WorkerId(1), t0), Heartbeat::Alive);
        assert_eq!(
            d.dead_workers(t0 + s(8)),
            vec![],
            "last seen at 4 s, not 0 s"
        );
    }

    #[test]
    fn unknown_dead_and_reregistered_workers_are_told_apart() {
        let t0 = Instant::now();
        let mut d = FailureDetector::new(HeartbeatSettings::default());
        assert_eq!(d.on_heartbeat(WorkerId(7), t0), Heartbeat::Unknown);
        d.register(WorkerId(7), t0);
        d.register(WorkerId(8), t0);
        assert_eq!(d.dead_workers(t0 + s(9)), vec![WorkerId(7), WorkerId(8)]);
        assert_eq!(d.on_heartbeat(WorkerId(7), t0 + s(9)), Heartbeat::Dead);
        d.register(WorkerId(7), t0 + s(10));
        assert_eq!(d.on_heartbeat(WorkerId(7), t0 + s(11)), Heartbeat::Alive);
        d.forget(WorkerId(8));
        assert_eq!(d.on_heartbeat(WorkerId(8), t0 + s(11)), Heartbeat::Unknown);
        assert_eq!(d.alive().collect::<Vec<_>>(), vec![WorkerId(7)]);
    }
}
