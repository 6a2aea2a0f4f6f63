//! The pure core of the `extreme_filter`: the best value (the largest, or the smallest) of
//! each tumbling window among the rows counted so far, and whether a row can still equal the
//! extreme of a window it can be joined with. No I/O, no batches: times and values in, a
//! decision out.
//!
//! The decision is sound as long as every row counted here is counted by the window whose
//! extreme the join reads (the module `super` says why that holds): the window's extreme is
//! then at least (at most) the best value here, for good, so a row strictly worse than the
//! best of every window it can be joined with can never equal one of their extremes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Which extreme the window computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Extreme {
    /// `MAX`: a row below a window's best cannot equal its maximum.
    Max,
    /// `MIN`: a row above a window's best cannot equal its minimum.
    Min,
}

impl Extreme {
    /// Whether `a` is strictly better than `b` (larger for `MAX`, smaller for `MIN`).
    fn beats(self, a: i64, b: i64) -> bool {
        match self {
            Extreme::Max => a > b,
            Extreme::Min => a < b,
        }
    }
}

/// The windows a row can be joined with, and how they are told apart: tumbling windows of
/// `size` milliseconds aligned to the epoch, each known to the join by its start or its end
/// (its *anchor*); a row at `t` pairs with the windows whose anchor `a` has `a - t` in
/// `[lower, upper]` (both ends included, as the join's bounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reach {
    pub size: i64,
    /// The join reads the window's end (`true`) or its start.
    pub at_end: bool,
    pub lower: i64,
    pub upper: i64,
}

impl Reach {
    /// The starts of the windows a row at `t` can be joined with, in increasing order: those
    /// whose anchor is within the bounds and that fit in a timestamp (a window that does not
    /// holds no row: the window operator sends such rows to the dead letters).
    pub(crate) fn starts(&self, t: i64) -> impl Iterator<Item = i64> {
        let size = i128::from(self.size);
        let (from, to) = (
            i128::from(t) + i128::from(self.lower),
            i128::from(t) + i128::from(self.upper),
        );
        // The first multiple of size at or after `from`.
        let first = -((-from).div_euclid(size)) * size;
        let shift = if self.at_end { size } else { 0 };
        (0..)
            .map(move |k| first + k * size)
            .take_while(move |a| *a <= to)
            .filter_map(move |a| {
                let start = a - shift;
                let fits = start >= i128::from(i64::MIN) && start + size <= i128::from(i64::MAX);
                fits.then(|| i64::try_from(start).ok()).flatten()
            })
    }

    /// The most windows a row can be joined with.
    pub(crate) fn most_windows(&self) -> i128 {
        (i128::from(self.upper) - i128::from(self.lower)) / i128::from(self.size) + 1
    }

    /// The start of the window that holds a row at `t`, if it fits in a timestamp.
    fn window_of(&self, t: i64) -> Option<i64> {
        let size = i128::from(self.size);
        let start = i128::from(t).div_euclid(size) * size;
        (start + size <= i128::from(i64::MAX))
            .then(|| i64::try_from(start).ok())
            .flatten()
    }

    /// The latest time of a row that can be joined with the window starting at `start`.
    fn last_partner(&self, start: i64) -> i128 {
        let anchor = i128::from(start)
            + if self.at_end {
                i128::from(self.size)
            } else {
                0
            };
        anchor - i128::from(self.lower)
    }
}

/// What the filter keeps in a checkpoint: the watermark and the best value of each window
/// it holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Saved {
    pub watermark: i64,
    /// `(window start, best value)`, in increasing order of start.
    pub best: Vec<(i64, i64)>,
    /// The best is the largest (`MAX`), else the smallest.
    pub max: bool,
}

/// The best value of each window among the rows counted, and the watermark that says which
/// rows may be counted.
#[derive(Debug, Clone)]
pub(crate) struct Best {
    extreme: Extreme,
    reach: Reach,
    /// Window start → the best value of its counted rows.
    best: BTreeMap<i64, i64>,
    watermark: i64,
}

impl Best {
    pub(crate) fn new(extreme: Extreme, reach: Reach) -> Self {
        Self {
            extreme,
            reach,
            best: BTreeMap::new(),
            watermark: i64::MIN,
        }
    }

    /// Counts a row at `t` with value `v` in its window, if the row is on time (not before
    /// the watermark): a row the window may drop as late is never counted.
    pub(crate) fn count(&mut self, t: i64, v: i64) {
        if t < self.watermark {
            return;
        }
        let Some(start) = self.reach.window_of(t) else {
            return;
        };
        let extreme = self.extreme;
        self.best
            .entry(start)
            .and_modify(|b| {
                if extreme.beats(v, *b) {
                    *b = v;
                }
            })
            .or_insert(v);
    }

    /// Whether a row at `t` with value `v` may equal the extreme of a window it can be
    /// joined with: unless every such window has a counted row strictly better than it (a
    /// window none of whose rows was counted here, or whose best was let go, may).
    pub(crate) fn may_match(&self, t: i64, v: i64) -> bool {
        self.reach
            .starts(t)
            .any(|s| self.best.get(&s).is_none_or(|b| !self.extreme.beats(*b, v)))
    }

    /// Event time reached `watermark`: the windows that can neither count a row on time nor
    /// be joined with one are let go.
    pub(crate) fn advance(&mut self, watermark: i64) {
        if watermark <= self.watermark {
            return;
        }
        self.watermark = watermark;
        let (wm, size, reach) = (
            i128::from(watermark),
            i128::from(self.reach.size),
            self.reach,
        );
        self.best
            .retain(|s, _| i128::from(*s) + size > wm || reach.last_partner(*s) >= wm);
    }

    /// How many windows are held.
    pub(crate) fn windows(&self) -> usize {
        self.best.len()
    }

    pub(crate) fn save(&self) -> Saved {
        Saved {
            watermark: self.watermark,
            best: self.best.iter().map(|(s, b)| (*s, *b)).collect(),
            max: self.extreme == Extreme::Max,
        }
    }

    pub(crate) fn restore(&mut self, saved: Saved) {
        self.watermark = saved.watermark;
        self.best = saved.best.into_iter().collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q7: Reach = Reach {
        size: 10_000,
        at_end: true,
        lower: 0,
        upper: 10_000,
    };

    #[test]
    fn a_row_at_a_window_s_start_reaches_the_window_it_ends_too() {
        assert_eq!(Q7.starts(10_000).collect::<Vec<_>>(), [0, 10_000]);
        assert_eq!(Q7.starts(12_000).collect::<Vec<_>>(), [10_000]);
        assert_eq!(Q7.starts(-1).collect::<Vec<_>>(), [-10_000]);
        assert_eq!(Q7.starts(-10_000).collect::<Vec<_>>(), [-20_000, -10_000]);
        let by_start = Reach {
            at_end: false,
            ..Q7
        };
        // Starts in [t, t + 10 s].
        assert_eq!(by_start.starts(5_000).collect::<Vec<_>>(), [10_000]);
        assert_eq!(
            by_start.starts(10_000).collect::<Vec<_>>(),
            [10_000, 20_000]
        );
        let narrow = Reach {
            lower: 1_000,
            upper: 2_000,
            ..Q7
        };
        assert_eq!(
            narrow.starts(5_000).count(),
            0,
            "no window ends in [6 s, 7 s]"
        );
        assert_eq!(Q7.most_windows(), 2);
    }

    #[test]
    fn windows_at_the_ends_of_time_that_do_not_fit_are_reached_by_no_row() {
        assert_eq!(Q7.starts(i64::MAX).count(), 0);
        assert!(Q7.starts(i64::MIN).all(|s| s > i64::MIN));
    }

    #[test]
    fn a_row_below_the_best_of_every_window_it_reaches_cannot_match() {
        let mut b = Best::new(Extreme::Max, Q7);
        b.count(1_000, 300);
        b.count(12_000, 500);
        assert!(!b.may_match(2_000, 299));
        assert!(b.may_match(2_000, 300), "a tie may be the maximum");
        // At 10 s a row reaches [0, 10 s) (best 300) and [10, 20 s) (best 500).
        assert!(b.may_match(10_000, 300));
        assert!(!b.may_match(10_000, 299));
        // A window with no row counted may take anything.
        assert!(b.may_match(25_000, 1));
        let mut m = Best::new(Extreme::Min, Q7);
        m.count(1_000, 300);
        assert!(!m.may_match(2_000, 301));
        assert!(m.may_match(2_000, 300));
    }

    #[test]
    fn late_rows_are_not_counted_and_windows_go_once_nothing_can_reach_them() {
        let mut b = Best::new(Extreme::Max, Q7);
        b.count(1_000, 300);
        b.advance(5_000);
        b.count(4_000, 900);
        assert!(!b.may_match(6_000, 299));
        assert!(b.may_match(6_000, 300), "the late 900 was not counted");
        b.advance(10_000);
        assert_eq!(
            b.windows(),
            1,
            "a row at 10 s can still be joined with [0, 10 s)"
        );
        b.advance(10_001);
        assert_eq!(b.windows(), 0);
        assert!(b.may_match(9_000, 1), "a window let go may take anything");
    }
}
