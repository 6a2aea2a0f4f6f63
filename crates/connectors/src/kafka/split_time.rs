//! Event time per partition: a source reading several partitions moves its watermark to the
//! least event time over those still active, so that a partition behind the others holds it
//! back (as Flink's per-split watermarks do). A partition without a record for the idle
//! timeout stops holding it back until its next record, as a whole source goes idle; a
//! partition read to its end (bounded) no longer counts.
//!
//! Pure: the caller passes the time.

use std::time::{Duration, Instant};

/// One partition's event time.
#[derive(Debug, Clone)]
struct Split {
    /// The largest event time read from it.
    max: Option<i64>,
    /// When its last record came (or the start).
    last_record: Instant,
    /// Read to its end.
    finished: bool,
}

/// The event time of every partition a source instance reads.
#[derive(Debug, Clone)]
pub(crate) struct SplitTimes {
    splits: Vec<Split>,
    idle_after: Option<Duration>,
}

impl SplitTimes {
    /// `count` partitions, none read yet at `now`; a partition is idle after `idle_after`
    /// without a record (never, without).
    pub(crate) fn new(count: usize, now: Instant, idle_after: Option<Duration>) -> Self {
        let split = Split {
            max: None,
            last_record: now,
            finished: false,
        };
        Self {
            splits: vec![split; count],
            idle_after,
        }
    }

    /// A record of partition `split` came at `now` (with event time `time`, if it decoded).
    pub(crate) fn record(&mut self, split: usize, time: Option<i64>, now: Instant) {
        if let Some(s) = self.splits.get_mut(split) {
            s.last_record = now;
            if let Some(t) = time {
                s.max = Some(s.max.map_or(t, |m| m.max(t)));
            }
        }
    }

    /// Partition `split` was read to its end.
    pub(crate) fn finish(&mut self, split: usize) {
        if let Some(s) = self.splits.get_mut(split) {
            s.finished = true;
        }
    }

    /// The event time the watermark may follow at `now`: the least largest event time over
    /// the partitions neither finished nor idle; `None` while one of them has no event time
    /// yet, or when every partition is finished or idle (the source is then idle as a
    /// whole).
    pub(crate) fn progress(&self, now: Instant) -> Option<i64> {
        let mut least: Option<i64> = None;
        for s in &self.splits {
            let idle = self
                .idle_after
                .is_some_and(|d| now.saturating_duration_since(s.last_record) >= d);
            if s.finished || idle {
                continue;
            }
            let t = s.max?;
            least = Some(least.map_or(t, |l| l.min(t)));
        }
        least
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_behind_the_others_holds_event_time_back() {
        let t0 = Instant::now();
        let mut s = SplitTimes::new(2, t0, None);
        s.record(0, Some(100), t0);
        assert_eq!(s.progress(t0), None, "partition 1 has no event time yet");
        s.record(1, Some(40), t0);
        assert_eq!(s.progress(t0), Some(40));
        s.record(1, Some(30), t0);
        assert_eq!(s.progress(t0), Some(40), "the largest seen counts");
        s.record(1, Some(500), t0);
        assert_eq!(s.progress(t0), Some(100));
    }

    #[test]
    fn an_idle_or_finished_partition_stops_holding_event_time_back() {
        let t0 = Instant::now();
        let mut s = SplitTimes::new(3, t0, Some(Duration::from_secs(5)));
        s.record(0, Some(100), t0);
        s.record(1, Some(10), t0);
        assert_eq!(s.progress(t0), None, "partition 2 is not idle yet");
        let later = t0 + Duration::from_secs(5);
        s.record(0, Some(200), later);
        assert_eq!(s.progress(later), Some(200), "1 and 2 are idle");
        s.record(1, Some(20), later);
        assert_eq!(s.progress(later), Some(20), "1 is back");
        s.finish(1);
        assert_eq!(s.progress(later), Some(200));
        s.finish(0);
        assert_eq!(
            s.progress(later),
            None,
            "every partition is finished or idle"
        );
    }
}
