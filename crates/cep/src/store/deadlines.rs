//! Which partitions a watermark must visit: those with a partial match that the time bound
//! (`within`) ends by then, found by the time at which their first one ends.
//!
//! A watermark used to visit every partition in memory with a partial match in flight. In a
//! Nexmark cep_q3 run that is every (auction, bidder) partition of the last 5 s (`A` matches
//! any row, and a partition of a row or two waits out its bound): millions, at every
//! watermark, so that the work per event grew with the run's length (10 M events took 50×
//! the time of 1 M, the scan 60 % of it). Now a partition is queued when it gets a partial
//! match, at the time its first one ends, and a watermark visits only the partitions whose
//! time has come.
//!
//! Entries are not removed when a partition changes: an entry is valid while its time is
//! the one its partition records (see [`Deadlines::push`] and `Store::next_due`); a
//! partition whose first partial match ended early is still visited at the recorded time,
//! which finds nothing to end and queues it again at its next one.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::super::key::Key;

/// The time a partition records when it is not queued.
pub(crate) const UNQUEUED: i64 = i64::MAX;

/// Partitions by the event time at which a time bound ends one of their partial matches,
/// the earliest first.
#[derive(Debug, Default)]
pub(crate) struct Deadlines {
    heap: BinaryHeap<Reverse<(i64, Key)>>,
}

impl Deadlines {
    /// Queues partition `key` at `due`, which the partition records as its own (`due` must
    /// not be [`UNQUEUED`]: the end of event time visits every partition anyway).
    pub(crate) fn push(&mut self, due: i64, key: Key) {
        debug_assert_ne!(
            due, UNQUEUED,
            "a partition queued is visited before the end"
        );
        self.heap.push(Reverse((due, key)));
    }

    /// The next entry due by `watermark` (its time and partition), removed.
    pub(crate) fn pop_due(&mut self, watermark: i64) -> Option<(i64, Key)> {
        match self.heap.peek() {
            Some(Reverse((due, _))) if *due <= watermark => {
                self.heap.pop().map(|Reverse(entry)| entry)
            }
            _ => None,
        }
    }

    /// Forgets every entry.
    pub(crate) fn clear(&mut self) {
        self.heap.clear();
    }

    /// How many entries are queued, valid or not.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_come_out_by_time_and_only_once_due() {
        let mut d = Deadlines::default();
        for (due, k) in [(30, 1u8), (10, 2), (20, 3), (10, 4)] {
            d.push(due, Key::from(&[k][..]));
        }
        assert_eq!(d.pop_due(9), None);
        let mut got = Vec::new();
        while let Some((due, k)) = d.pop_due(20) {
            got.push((due, k.as_bytes()[0]));
        }
        assert_eq!(got, vec![(10, 2), (10, 4), (20, 3)]);
        assert_eq!(d.len(), 1);
        d.clear();
        assert_eq!(d.pop_due(i64::MAX), None);
    }
}
