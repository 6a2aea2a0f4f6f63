//! Which windows a row belongs to: pure arithmetic on epoch milliseconds. Windows are
//! half-open `[start, end)` and aligned to the Unix epoch.
//!
//! Every bound is a timestamp, an `i64` of milliseconds. A row whose window would start
//! before `i64::MIN` or end after `i64::MAX` (an event time within one window length of
//! either end of that range) is in no window: [`Unfit`] says why, and the operator sends the
//! row to the dead letters. The arithmetic that decides it is done in `i128`, so that it
//! cannot overflow; once a row is known to fit, its panes and windows are computed in `i64`.

use super::WindowKind;

/// A window that does not fit in a timestamp (its bounds in milliseconds, beyond `i64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unfit {
    pub start: i128,
    pub end: i128,
}

impl Unfit {
    /// Why the row at `ts` is in no window, for the dead letters.
    pub(crate) fn reason(&self, ts: i64) -> String {
        let beyond = if self.start < i128::from(i64::MIN) {
            format!(
                "starts before the first timestamp, {}",
                anduin_types::instant_text(i64::MIN)
            )
        } else {
            format!(
                "ends after the last timestamp, {}",
                anduin_types::instant_text(i64::MAX)
            )
        };
        format!(
            "event time {} ({ts} ms since the epoch): its window [{} ms, {} ms) does not fit in a timestamp: it {beyond}",
            anduin_types::instant_text(ts),
            self.start,
            self.end,
        )
    }
}

/// `[start, end)` if both bounds are timestamps.
fn window(start: i128, end: i128) -> Result<(), Unfit> {
    if start < i128::from(i64::MIN) || end > i128::from(i64::MAX) {
        Err(Unfit { start, end })
    } else {
        Ok(())
    }
}

/// Whether every window of `kind` that holds a row at `ts` fits in a timestamp. A count
/// window holding the row ends at least one millisecond after it, a session at least `gap`
/// after it.
pub(crate) fn fits(kind: WindowKind, ts: i64) -> Result<(), Unfit> {
    let t = i128::from(ts);
    match kind {
        WindowKind::Sliding { size, slide } => sliding_fits(ts, size, slide),
        WindowKind::Cumulate { size, .. } => {
            // Every window holding the row lies within its cycle `[s, s + size)`.
            let start = t.div_euclid(i128::from(size)) * i128::from(size);
            window(start, start + i128::from(size))
        }
        WindowKind::Session { gap } => window(t, t + i128::from(gap)),
        WindowKind::Count { .. } => window(t, t + 1),
    }
}

/// Whether every window of `size` every `slide` that holds `ts` fits in a timestamp: the
/// first one's start and the last one's end.
pub(crate) fn sliding_fits(ts: i64, size: i64, slide: i64) -> Result<(), Unfit> {
    let (t, size, slide) = (i128::from(ts), i128::from(size), i128::from(slide));
    // The earliest start (a multiple of slide) after t - size, and the latest one at or
    // before t.
    let first = (t - size).div_euclid(slide) * slide + slide;
    let last = t.div_euclid(slide) * slide;
    window(first, first + size)?;
    window(last, last + size)
}

/// The start of the slice of length `len` that holds `ts` (aligned to the epoch, also for
/// negative times). Only for a `ts` whose windows fit ([`fits`]): the slice then starts
/// within a timestamp.
pub(crate) fn slice_start(ts: i64, len: i64) -> i64 {
    ts.div_euclid(len) * len
}

/// The greatest common divisor: sliding windows of `size` every `slide` are built from
/// panes of `gcd(size, slide)`.
pub(crate) fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

/// The ends of the sliding windows (`size` every `slide`) that contain the pane
/// `[start, start + pane)`, in increasing order; only those that are timestamps (all of
/// them for the pane of a row that [`fits`]).
pub(crate) fn window_ends_of_pane(
    start: i64,
    pane: i64,
    size: i64,
    slide: i64,
) -> impl Iterator<Item = i64> {
    let (start, pane, size, slide) = (
        i128::from(start),
        i128::from(pane),
        i128::from(size),
        i128::from(slide),
    );
    // A window [e - size, e) contains the pane when e - size <= start and start + pane <= e.
    let first = (start + pane).div_euclid(slide) * slide;
    let first = if first < start + pane {
        first + slide
    } else {
        first
    };
    let last = (start + size).div_euclid(slide) * slide;
    (0..)
        .map(move |k| first + k * slide)
        .take_while(move |e| *e <= last)
        .filter_map(|e| i64::try_from(e).ok())
}

/// The ends of the cumulating windows (from each multiple of `size`, `step` longer each)
/// that contain the pane `[start, start + step)`: each later multiple of `step` up to the end
/// of the pane's cycle, in increasing order; only those that are timestamps.
pub(crate) fn cumulate_ends_of_pane(start: i64, step: i64, size: i64) -> Vec<i64> {
    let (start, step, size) = (i128::from(start), i128::from(step), i128::from(size));
    let cycle_end = start.div_euclid(size) * size + size;
    (1..)
        .map(|k| start + k * step)
        .take_while(|e| *e <= cycle_end)
        .filter_map(|e| i64::try_from(e).ok())
        .collect()
}

/// The start of the cumulating window (of cycles `size` long) that ends at `end`.
pub(crate) fn cumulate_start(end: i64, size: i64) -> i64 {
    // `end` is in `(s, s + size]`: `end - 1` is in the cycle.
    (end - 1).div_euclid(size) * size
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_aligned_to_the_epoch_also_before_it() {
        assert_eq!(slice_start(1_700_000_000_123, 1000), 1_700_000_000_000);
        assert_eq!(slice_start(999, 1000), 0);
        assert_eq!(slice_start(-1, 1000), -1000);
        assert_eq!(slice_start(-1000, 1000), -1000);
    }

    #[test]
    fn panes_are_the_gcd_of_size_and_slide() {
        assert_eq!(gcd(10_000, 1_000), 1_000);
        assert_eq!(gcd(10_000, 4_000), 2_000);
        assert_eq!(gcd(3, 5), 1);
    }

    #[test]
    fn a_pane_belongs_to_size_over_slide_windows() {
        // Windows of 10 s every 1 s; the pane [0, 1 s) is in the windows ending 1 s … 10 s.
        let ends: Vec<i64> = window_ends_of_pane(0, 1000, 10_000, 1000).collect();
        assert_eq!(ends, (1..=10).map(|k| k * 1000).collect::<Vec<_>>());
        // Windows of 10 s every 4 s, panes of 2 s: [2 s, 4 s) is in the windows ending 4 s, 8 s, 12 s.
        let ends: Vec<i64> = window_ends_of_pane(2000, 2000, 10_000, 4000).collect();
        assert_eq!(ends, vec![4000, 8000, 12_000]);
        // Tumbling (size = slide = pane): one window.
        let ends: Vec<i64> = window_ends_of_pane(5000, 1000, 1000, 1000).collect();
        assert_eq!(ends, vec![6000]);
    }

    #[test]
    fn a_pane_belongs_to_the_cumulating_windows_of_its_cycle_that_end_after_it() {
        // Cycles of 10 s growing by 2 s: [4 s, 6 s) is in the windows ending 6, 8 and 10 s.
        assert_eq!(
            cumulate_ends_of_pane(4000, 2000, 10_000),
            vec![6000, 8000, 10_000]
        );
        // The last pane of a cycle is in its last window only; the next cycle starts afresh.
        assert_eq!(cumulate_ends_of_pane(8000, 2000, 10_000), vec![10_000]);
        assert_eq!(cumulate_ends_of_pane(10_000, 2000, 10_000)[0], 12_000);
        // Before the epoch too.
        assert_eq!(cumulate_ends_of_pane(-2000, 1000, 3000), vec![-1000, 0]);
        assert_eq!(cumulate_start(6000, 10_000), 0);
        assert_eq!(cumulate_start(10_000, 10_000), 0);
        assert_eq!(cumulate_start(12_000, 10_000), 10_000);
        assert_eq!(cumulate_start(-1000, 3000), -3000);
        let kind = WindowKind::Cumulate {
            size: 1000,
            step: 100,
        };
        assert!(fits(kind, i64::MAX - 808).is_ok());
        assert!(fits(kind, i64::MAX - 807).is_err());
    }

    #[test]
    fn windows_that_would_leave_the_timestamp_range_do_not_fit() {
        let tumbling = WindowKind::Sliding {
            size: 1000,
            slide: 1000,
        };
        // i64::MAX's second would end at ...776000 ms.
        assert_eq!(
            fits(tumbling, i64::MAX),
            Err(Unfit {
                start: 9_223_372_036_854_775_000,
                end: 9_223_372_036_854_776_000
            })
        );
        // i64::MIN's second would start at -...776000 ms.
        assert!(fits(tumbling, i64::MIN).is_err());
        assert!(fits(tumbling, i64::MIN + 808).is_ok());
        assert!(fits(tumbling, i64::MAX - 808).is_ok());
        assert!(fits(tumbling, i64::MAX - 807).is_err());
        // Windows of 2 ms every 1 ms: the row at MAX - 1 is also in [MAX - 1, MAX + 1).
        let hop = WindowKind::Sliding { size: 2, slide: 1 };
        assert!(fits(hop, i64::MAX - 2).is_ok());
        assert!(fits(hop, i64::MAX - 1).is_err());
        assert!(fits(hop, i64::MIN).is_err());
        assert!(fits(hop, i64::MIN + 1).is_ok());
        // A window of a power of two ms starts exactly at i64::MIN.
        assert!(fits(
            WindowKind::Sliding {
                size: 1024,
                slide: 1024
            },
            i64::MIN
        )
        .is_ok());
        let session = WindowKind::Session { gap: 10 };
        assert!(fits(session, i64::MAX - 10).is_ok());
        assert!(fits(session, i64::MAX - 9).is_err());
        assert!(fits(session, i64::MIN).is_ok());
        let count = WindowKind::Count { size: 3 };
        assert!(fits(count, i64::MAX - 1).is_ok());
        assert!(fits(count, i64::MAX).is_err());
    }

    #[test]
    fn the_reason_names_the_event_time_and_the_window() {
        let tumbling = WindowKind::Sliding {
            size: 1000,
            slide: 1000,
        };
        let reason = fits(tumbling, i64::MAX)
            .expect_err("does not fit")
            .reason(i64::MAX);
        assert_eq!(
            reason,
            "event time 292278994-08-17T07:12:55.807Z (9223372036854775807 ms since the epoch): \
             its window [9223372036854775000 ms, 9223372036854776000 ms) does not fit in a \
             timestamp: it ends after the last timestamp, 292278994-08-17T07:12:55.807Z"
        );
        let reason = fits(tumbling, i64::MIN)
            .expect_err("does not fit")
            .reason(i64::MIN);
        assert!(
            reason.contains("starts before the first timestamp, -292275055-05-16T16:47:04.192Z"),
            "{reason}"
        );
    }

    #[test]
    fn the_ends_of_a_pane_next_to_the_range_s_end_are_timestamps() {
        // Windows of 4 ms every 2 ms; the pane [MAX - 7, MAX - 5) is in the windows ending
        // MAX - 5 and MAX - 3 (i64::MAX is odd: MAX - 7 is a multiple of 2).
        let ends: Vec<i64> = window_ends_of_pane(i64::MAX - 7, 2, 4, 2).collect();
        assert_eq!(ends, vec![i64::MAX - 5, i64::MAX - 3]);
    }
}
