//! Which windows a row belongs to: pure arithmetic on epoch milliseconds. Windows are
//! half-open `[start, end)` and aligned to the Unix epoch.

/// The start of the slice of length `len` that holds `ts` (aligned to the epoch, also for
/// negative times).
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
/// `[start, start + pane)`, in increasing order.
pub(crate) fn window_ends_of_pane(
    start: i64,
    pane: i64,
    size: i64,
    slide: i64,
) -> impl Iterator<Item = i64> {
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
}
