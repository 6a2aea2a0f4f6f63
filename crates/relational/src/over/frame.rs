//! The rows of one partition of an OVER window: those waiting for the watermark, those in the
//! frame of the last row emitted, and what releasing the rows the watermark passed does to
//! the frame, as a list of steps (pure: the aggregates follow the steps in `running.rs`).
//!
//! Rows are released in event-time order, those of one time in the order they came. For each
//! row, `ROWS n` adds it to the frame and takes out the row `n + 1` rows before it; `RANGE x`
//! adds every row of its time (its peers) and takes out the rows older than its time minus
//! `x`, then emits each of them with the same aggregates; an unbounded frame never takes a row
//! out (and keeps none).
//!
//! ```text
//! ROWS 1 PRECEDING, rows t=1 a, t=2 b, t=2 c:
//!   +a emit(a)   +b emit(b)   +c -a emit(c)      (a frame of two rows)
//! RANGE 1 ms PRECEDING, the same rows:
//!   +a emit(a)   +b +c emit(b) emit(c)     (a, at 1 >= 2 - 1, stays)
//! ```

use std::collections::{BTreeMap, VecDeque};

use crate::group::acc::Group;

/// Which rows before the current one a frame holds (ending at the current row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Frame {
    /// `ROWS BETWEEN n PRECEDING AND CURRENT ROW` (`None`: `UNBOUNDED PRECEDING`).
    Rows(Option<u64>),
    /// `RANGE BETWEEN x PRECEDING AND CURRENT ROW`, `x` in milliseconds (`None`:
    /// `UNBOUNDED PRECEDING`): the rows whose time is at least the current one's minus `x`.
    Range(Option<i64>),
}

/// A row waiting for the watermark: its values (row format of the input's columns) and its
/// aggregates' arguments (row format, one column per aggregate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    pub values: Box<[u8]>,
    pub args: Box<[u8]>,
}

/// What releasing rows does, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Add these arguments to the aggregates.
    Add(Box<[u8]>),
    /// Take these arguments out of the aggregates.
    Retract(Box<[u8]>),
    /// Emit a row of these values with the aggregates as they are now.
    Emit(Box<[u8]>),
}

/// One partition of an OVER window.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Partition {
    /// The rows waiting for the watermark, by event time, each time's in arrival order.
    pub pending: BTreeMap<i64, Vec<Held>>,
    /// A bounded frame's rows (time, arguments), oldest first.
    pub frame: VecDeque<(i64, Box<[u8]>)>,
    /// The aggregates over the frame (`rows`: how many rows it holds).
    pub group: Group,
    /// The time of the last row emitted: a row of that time or earlier comes late.
    pub last: Option<i64>,
}

impl Partition {
    /// An empty partition whose aggregates start as `group`.
    pub(crate) fn new(group: Group) -> Self {
        Self {
            pending: BTreeMap::new(),
            frame: VecDeque::new(),
            group,
            last: None,
        }
    }

    /// Whether a row of time `t` comes in time (after the last row emitted), as Flink drops
    /// a row whose time is not after the last one its key fired.
    pub(crate) fn in_time(&self, t: i64) -> bool {
        self.last.is_none_or(|l| t > l)
    }

    /// Holds a row of time `t` until the watermark passes it.
    pub(crate) fn hold(&mut self, t: i64, row: Held) {
        self.pending.entry(t).or_default().push(row);
    }

    /// The earliest time waiting.
    pub(crate) fn first_pending(&self) -> Option<i64> {
        self.pending.keys().next().copied()
    }

    /// How many rows wait.
    pub(crate) fn pending_rows(&self) -> usize {
        self.pending.values().map(Vec::len).sum()
    }

    /// Releases the rows whose time the watermark `w` passed (before `w`: a row at `w` may
    /// still come; all at the end of event time, `i64::MAX`), pushing what that does to
    /// `steps`.
    pub(crate) fn release(&mut self, frame: Frame, w: i64, steps: &mut Vec<Step>) {
        while let Some(entry) = self.pending.first_entry() {
            let t = *entry.key();
            if !passed(t, w) {
                break;
            }
            let rows = entry.remove();
            match frame {
                Frame::Rows(n) => {
                    for row in rows {
                        steps.push(Step::Add(row.args.clone()));
                        if let Some(n) = n {
                            self.frame.push_back((t, row.args));
                            let keep = usize::try_from(n).unwrap_or(usize::MAX).saturating_add(1);
                            while self.frame.len() > keep {
                                if let Some((_, old)) = self.frame.pop_front() {
                                    steps.push(Step::Retract(old));
                                }
                            }
                        }
                        steps.push(Step::Emit(row.values));
                    }
                }
                Frame::Range(x) => {
                    for row in &rows {
                        steps.push(Step::Add(row.args.clone()));
                        if x.is_some() {
                            self.frame.push_back((t, row.args.clone()));
                        }
                    }
                    if let Some(x) = x {
                        let from = t.saturating_sub(x);
                        while self.frame.front().is_some_and(|(old, _)| *old < from) {
                            if let Some((_, old)) = self.frame.pop_front() {
                                steps.push(Step::Retract(old));
                            }
                        }
                    }
                    steps.extend(rows.into_iter().map(|row| Step::Emit(row.values)));
                }
            }
            self.last = Some(t);
        }
    }
}

/// Whether watermark `w` passed time `t`: no row before `w` comes any more, so a row at `w`
/// may (the watermark trails the largest time seen by the delay, 0 by default: a row of that
/// same time can follow); the end of event time (`i64::MAX`) passes every time.
pub(crate) fn passed(t: i64, w: i64) -> bool {
    t < w || w == i64::MAX
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Box<[u8]> {
        s.as_bytes().into()
    }

    fn held(v: &str) -> Held {
        Held {
            values: b(v),
            args: b(&v.to_uppercase()),
        }
    }

    fn steps(frame: Frame, rows: &[(i64, &str)], w: i64) -> (Vec<String>, Partition) {
        let mut p = Partition::new(Group {
            rows: 0,
            accs: Vec::new(),
            shared: Vec::new(),
        });
        for (t, v) in rows {
            p.hold(*t, held(v));
        }
        let mut out = Vec::new();
        p.release(frame, w, &mut out);
        let text = out
            .iter()
            .map(|s| match s {
                Step::Add(a) => format!("+{}", String::from_utf8_lossy(a)),
                Step::Retract(a) => format!("-{}", String::from_utf8_lossy(a)),
                Step::Emit(v) => format!("emit {}", String::from_utf8_lossy(v)),
            })
            .collect();
        (text, p)
    }

    #[test]
    fn a_rows_frame_takes_out_the_row_n_plus_one_before_in_time_then_arrival_order() {
        let (out, p) = steps(Frame::Rows(Some(1)), &[(2, "b"), (1, "a"), (2, "c")], 5);
        assert_eq!(out, ["+A", "emit a", "+B", "emit b", "+C", "-A", "emit c"]);
        assert_eq!((p.frame.len(), p.last), (2, Some(2)));
        assert!(!p.in_time(2) && p.in_time(3));
    }

    #[test]
    fn a_range_frame_adds_a_time_s_peers_together_and_keeps_rows_at_its_lower_bound() {
        let rows = [(1, "a"), (2, "b"), (2, "c"), (4, "d")];
        let (out, _) = steps(Frame::Range(Some(1)), &rows, 9);
        assert_eq!(
            out,
            ["+A", "emit a", "+B", "+C", "emit b", "emit c", "+D", "-A", "-B", "-C", "emit d"]
        );
        let (out, p) = steps(Frame::Range(None), &rows, 9);
        assert_eq!(
            out,
            ["+A", "emit a", "+B", "+C", "emit b", "emit c", "+D", "emit d"]
        );
        assert!(p.frame.is_empty(), "an unbounded frame keeps no row");
    }

    #[test]
    fn only_the_rows_the_watermark_passed_are_released() {
        let (out, p) = steps(Frame::Rows(None), &[(1, "a"), (3, "b")], 2);
        assert_eq!(out, ["+A", "emit a"]);
        assert_eq!((p.first_pending(), p.pending_rows()), (Some(3), 1));
    }
}
