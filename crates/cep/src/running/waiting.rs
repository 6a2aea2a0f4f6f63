//! The rows waiting for the watermark, released in event-time order (ties in arrival order).
//!
//! Most inputs arrive in event-time order, or nearly (a Nexmark run: in order, a thousand rows
//! to a millisecond; 4 s of events, ≈ 3.7 M rows, wait at 1 M events per second). A row that
//! comes at or after the last one in that order joins a queue that is sorted already (a push
//! and a pop cost O(1), and the rows are read front to back); only a row that comes before it
//! goes to a binary heap. The next row released is the first of either. A single heap cost
//! cep_q1 a sift over ~20 levels of ~1 M scattered entries for every row pushed and popped.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use super::super::cells::BatchCells;
use super::super::key::Key;
use super::super::matcher::Row;
use super::super::value::Value;

/// A row waiting for the watermark: its cells are row `index` of the batch `from` (they
/// become a [`Row`] when it is released, see [`BatchCells`]).
pub(super) struct Pending {
    pub seq: u64,
    pub key: Key,
    pub ts: i64,
    pub from: Arc<BatchCells>,
    pub index: u32,
}

impl Pending {
    /// The order rows are released in: by event time, then by arrival.
    fn order(&self) -> (i64, u64) {
        (self.ts, self.seq)
    }

    /// Its row, with its first `n` cells (all of them if `n` is more).
    pub(super) fn row(&self, n: usize) -> Row {
        Row {
            ts: self.ts,
            cells: self.from.cells(self.index as usize, n),
        }
    }

    /// Every cell of its row.
    pub(super) fn cells(&self) -> Box<[Value]> {
        self.from.cells(self.index as usize, usize::MAX)
    }
}

/// Pending rows in a [`BinaryHeap`] (a max-heap): the row released first is the greatest.
struct Late(Pending);

impl Ord for Late {
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.order().cmp(&self.0.order())
    }
}

impl PartialOrd for Late {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Late {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Late {}

/// The rows waiting for the watermark: those that came in release order in a queue, the
/// others in a heap (see the module's documentation).
#[derive(Default)]
pub(super) struct Waiting {
    sorted: VecDeque<Pending>,
    heap: BinaryHeap<Late>,
}

impl Waiting {
    /// Adds a row (any order: sequence numbers need not grow, as after a restore).
    pub(super) fn push(&mut self, p: Pending) {
        if self.sorted.back().is_none_or(|b| b.order() <= p.order()) {
            self.sorted.push_back(p);
        } else {
            self.heap.push(Late(p));
        }
    }

    /// Whether the next row comes from the heap (`None`: no row waits).
    fn next_is_late(&self) -> Option<bool> {
        match (self.sorted.front(), self.heap.peek()) {
            (None, None) => None,
            (Some(_), None) => Some(false),
            (None, Some(_)) => Some(true),
            (Some(s), Some(h)) => Some(h.0.order() < s.order()),
        }
    }

    /// The next row to release.
    pub(super) fn peek(&self) -> Option<&Pending> {
        match self.next_is_late()? {
            true => self.heap.peek().map(|l| &l.0),
            false => self.sorted.front(),
        }
    }

    /// Takes the next row to release.
    pub(super) fn pop(&mut self) -> Option<Pending> {
        match self.next_is_late()? {
            true => self.heap.pop().map(|l| l.0),
            false => self.sorted.pop_front(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.sorted.len() + self.heap.len()
    }

    /// Every waiting row, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Pending> {
        self.sorted.iter().chain(self.heap.iter().map(|l| &l.0))
    }

    /// Keeps the rows `keep` says to.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&Pending) -> bool) {
        self.sorted.retain(|p| keep(p));
        self.heap.retain(|l| keep(&l.0));
    }

    pub(super) fn clear(&mut self) {
        self.sorted.clear();
        self.heap.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(seq: u64, ts: i64) -> Pending {
        Pending {
            seq,
            key: Key::from(&[][..]),
            ts,
            from: Arc::new(BatchCells::of_rows(std::iter::empty(), &[]).expect("no columns")),
            index: 0,
        }
    }

    #[test]
    fn rows_leave_by_event_time_then_arrival_whatever_order_they_came_in() {
        // In order, ties, out of order, and sequence numbers that do not grow (a restore).
        let came = [
            (1, 10),
            (2, 10),
            (3, 12),
            (4, 11),
            (5, 12),
            (6, 9),
            (9, 20),
            (7, 20),
            (8, 15),
            (10, 20),
        ];
        let mut w = Waiting::default();
        for (seq, ts) in came {
            w.push(pending(seq, ts));
        }
        assert_eq!(w.len(), came.len());
        let mut want: Vec<(i64, u64)> = came.iter().map(|(s, t)| (*t, *s)).collect();
        want.sort();
        let mut got = Vec::new();
        while let Some(p) = w.peek() {
            let peeked = p.order();
            let p = w.pop().expect("peeked");
            assert_eq!(p.order(), peeked);
            got.push(p.order());
        }
        assert_eq!(got, want);
        assert_eq!(w.len(), 0);
    }

    #[test]
    fn retain_keeps_the_order_of_the_rows_left() {
        let mut w = Waiting::default();
        for (seq, ts) in [(1, 5), (2, 3), (3, 7), (4, 1), (5, 9)] {
            w.push(pending(seq, ts));
        }
        w.retain(|p| p.seq % 2 == 1);
        let mut all: Vec<u64> = w.iter().map(|p| p.seq).collect();
        all.sort();
        assert_eq!(all, [1, 3, 5]);
        let order: Vec<i64> = std::iter::from_fn(|| w.pop().map(|p| p.ts)).collect();
        assert_eq!(order, [5, 7, 9]);
    }
}
