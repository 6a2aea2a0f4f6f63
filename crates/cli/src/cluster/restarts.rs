//! When a failed cluster query is attempted again, and when it is given up: a delay that
//! doubles from one failure to the next (Flink's exponential-delay restart strategy), and a
//! limit on the failures in a row that made no progress. An attempt makes progress when a
//! checkpoint newer than the one it started from completes: a query that fails now and then
//! while it moves on is recovered for ever, one that fails again before its next checkpoint
//! is given up after `attempts` failures.
//!
//! Pure: the driver tells it the checkpoints and acts on what it returns.

use std::time::Duration;

/// The longest wait there is, whatever the flags say (`--restart-backoff 1000000000d`): a
/// year, which the clock can add to now.
const LONGEST: Duration = Duration::from_secs(365 * 24 * 3600);

/// `anduin coordinator --restart-attempts`, `--restart-backoff`, `--restart-max-backoff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Failures in a row without progress after which the query fails (at least 1).
    pub attempts: u32,
    /// The wait before the attempt after the first failure; doubled after each further one.
    pub backoff: Duration,
    /// The longest wait (but never shorter than `backoff`).
    pub max_backoff: Duration,
}

/// What follows a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// Another attempt, after this wait.
    After(Duration),
    /// The query fails: this many attempts in a row failed without progress.
    GiveUp { failures: u32 },
}

/// The failures of one query since its last progress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Restarts {
    /// Failed attempts in a row, none of which completed a checkpoint (an attempt that
    /// completed one and then failed counts for nothing: 0).
    failures: u32,
    /// The last complete checkpoint when the current attempt began.
    from: Option<u64>,
}

impl Restarts {
    /// The count a coordinator before this one recorded in the catalog: `failures` in a row,
    /// the last of them when the query's last complete checkpoint was `checkpoint` (a later
    /// one is progress, even if it was completed under that coordinator).
    pub fn resumed(failures: u32, checkpoint: Option<u64>) -> Self {
        Self {
            failures,
            from: checkpoint,
        }
    }

    /// The failures in a row since the query last made progress, its last complete
    /// checkpoint being `last_checkpoint` (0 once one completed after the last failure).
    pub fn failures(&self, last_checkpoint: Option<u64>) -> u32 {
        if last_checkpoint > self.from {
            0
        } else {
            self.failures
        }
    }

    /// An attempt begins; `last_checkpoint` is the query's last complete checkpoint.
    pub fn begin(&mut self, last_checkpoint: Option<u64>) {
        self.from = last_checkpoint;
    }

    /// What follows if the current attempt fails now, its query's last complete checkpoint
    /// being `last_checkpoint` (the same answer as [`Restarts::failed`] then gives).
    pub fn if_failed(&self, policy: &RestartPolicy, last_checkpoint: Option<u64>) -> Restart {
        policy.after(self.failures_with(last_checkpoint))
    }

    /// The current attempt failed: what follows.
    pub fn failed(&mut self, policy: &RestartPolicy, last_checkpoint: Option<u64>) -> Restart {
        self.failures = self.failures_with(last_checkpoint);
        self.from = last_checkpoint;
        policy.after(self.failures)
    }

    fn failures_with(&self, last_checkpoint: Option<u64>) -> u32 {
        if last_checkpoint > self.from {
            0
        } else {
            self.failures.saturating_add(1)
        }
    }
}

impl RestartPolicy {
    /// What follows a failure a coordinator before this one recorded, its `failures` in a
    /// row and the next attempt due at `next_at_ms` (both clocks in milliseconds since the
    /// Unix epoch, `now_ms` this one's): the wait left, but never longer than this policy
    /// waits after as many failures — or the query is given up, if this policy allows fewer.
    pub fn resumed(&self, failures: u32, next_at_ms: u64, now_ms: u64) -> Restart {
        match self.after(failures) {
            Restart::After(wait) => {
                let left = Duration::from_millis(next_at_ms.saturating_sub(now_ms));
                Restart::After(wait.min(left))
            }
            given_up => given_up,
        }
    }

    /// After `failures` failures in a row without progress (0: the attempt that failed had
    /// completed a checkpoint; it waits as after a first failure).
    pub fn after(&self, failures: u32) -> Restart {
        if failures > 0 && failures >= self.attempts {
            return Restart::GiveUp { failures };
        }
        let doublings = failures.saturating_sub(1).min(31);
        Restart::After(
            self.backoff
                .saturating_mul(1u32 << doublings)
                .min(self.max_backoff.max(self.backoff))
                .min(LONGEST),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RestartPolicy {
        RestartPolicy {
            attempts: 4,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(1),
        }
    }

    const HALF: Restart = Restart::After(Duration::from_millis(500));
    const ONE: Restart = Restart::After(Duration::from_secs(1));

    #[test]
    fn the_wait_doubles_up_to_its_longest_then_the_query_is_given_up() {
        let p = policy();
        let mut r = Restarts::default();
        for expected in [HALF, ONE, ONE] {
            r.begin(None);
            assert_eq!(r.failed(&p, None), expected);
        }
        r.begin(None);
        assert_eq!(r.if_failed(&p, None), Restart::GiveUp { failures: 4 });
        assert_eq!(r.failed(&p, None), Restart::GiveUp { failures: 4 });
    }

    #[test]
    fn an_attempt_that_completed_a_checkpoint_starts_the_count_again() {
        let p = policy();
        let mut r = Restarts::default();
        for expected in [HALF, ONE] {
            r.begin(Some(3));
            assert_eq!(r.failed(&p, Some(3)), expected);
        }
        // Checkpoint 4 completed before this attempt failed: it counts for nothing, and waits
        // as after a first failure.
        r.begin(Some(3));
        assert_eq!(r.failed(&p, Some(4)), HALF);
        for expected in [HALF, ONE, ONE] {
            r.begin(Some(4));
            assert_eq!(r.failed(&p, Some(4)), expected);
        }
        r.begin(Some(4));
        assert_eq!(r.failed(&p, Some(4)), Restart::GiveUp { failures: 4 });
    }

    #[test]
    fn the_first_checkpoint_of_a_query_is_progress() {
        let p = policy();
        let mut r = Restarts::default();
        for _ in 0..3 {
            r.begin(None);
            r.failed(&p, None);
        }
        r.begin(None);
        assert_eq!(r.if_failed(&p, Some(1)), HALF);
    }

    #[test]
    fn one_attempt_allowed_still_recovers_an_attempt_that_made_progress() {
        // probe45: `--restart-attempts 1` failed a query whose attempt had completed 14
        // checkpoints.
        let once = RestartPolicy {
            attempts: 1,
            ..policy()
        };
        let mut r = Restarts::default();
        r.begin(None);
        assert_eq!(r.failed(&once, Some(14)), HALF);
        r.begin(Some(14));
        assert_eq!(r.failed(&once, Some(14)), Restart::GiveUp { failures: 1 });
    }

    #[test]
    fn no_wait_and_huge_counts_stay_in_range() {
        let p = RestartPolicy {
            attempts: u32::MAX,
            backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
        };
        assert_eq!(p.after(1), Restart::After(Duration::ZERO));
        let long = RestartPolicy {
            attempts: u32::MAX,
            backoff: Duration::from_secs(u64::MAX / 2),
            max_backoff: Duration::MAX,
        };
        assert_eq!(long.after(u32::MAX - 1), Restart::After(LONGEST));
        let once = RestartPolicy {
            attempts: 1,
            ..policy()
        };
        assert_eq!(once.after(1), Restart::GiveUp { failures: 1 });
    }

    #[test]
    fn a_failure_recorded_by_another_coordinator_waits_what_is_left_at_most_as_long_as_this_one_would(
    ) {
        let p = policy();
        // Recorded at 10 000 ms with the next attempt due at 10 500.
        assert_eq!(
            p.resumed(1, 10_500, 10_200),
            Restart::After(Duration::from_millis(300))
        );
        assert_eq!(p.resumed(1, 10_500, 99_000), Restart::After(Duration::ZERO));
        // An hour left, but this coordinator waits a second at most after two failures.
        assert_eq!(p.resumed(2, 3_600_000, 0), ONE);
        // This coordinator allows fewer attempts than the one that recorded the failure.
        assert_eq!(p.resumed(4, 10_500, 0), Restart::GiveUp { failures: 4 });
        // The count goes on from what was recorded: two more failures give up.
        let mut r = Restarts::resumed(2, Some(7));
        r.begin(Some(7));
        assert_eq!(r.failed(&p, Some(7)), ONE);
        r.begin(Some(7));
        assert_eq!(r.failed(&p, Some(7)), Restart::GiveUp { failures: 4 });
        // A checkpoint completed after the recorded failure (under the coordinator that
        // recorded it, by an attempt this one took over) is progress.
        let mut r = Restarts::resumed(3, Some(7));
        assert_eq!(r.failures(Some(7)), 3);
        assert_eq!(
            r.failures(Some(8)),
            0,
            "no failure in a row once one completed"
        );
        assert_eq!(r.failed(&p, Some(8)), HALF);
    }

    #[test]
    fn a_first_wait_longer_than_the_longest_is_kept() {
        let p = RestartPolicy {
            attempts: 10,
            backoff: Duration::from_secs(3600),
            max_backoff: Duration::from_secs(30),
        };
        assert_eq!(p.after(1), Restart::After(Duration::from_secs(3600)));
        assert_eq!(p.after(5), Restart::After(Duration::from_secs(3600)));
    }
}
