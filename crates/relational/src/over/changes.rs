//! One partition of an OVER window over an updating stream: the rows of the table its input's
//! changes describe, in order, and which rows' results a set of changes can alter (pure: the
//! aggregates follow the steps in `updating.rs`).
//!
//! The rows are ordered by event time, then by their values (row format bytes), so that the
//! order of rows of one time, and so a `ROWS` frame, does not depend on when they came. A
//! change of the row at key `k` alters the results of:
//!
//! - `ROWS n`: the rows from `k` on to the `n`-th row after the last changed one (a later row's
//!   frame holds only rows after every change, the same before and after);
//! - `RANGE x`: the rows whose time is from `k`'s to the last changed time plus `x`;
//! - an unbounded frame: every row from `k` on.
//!
//! ```text
//! ROWS 1, rows a@1 b@2 c@3 d@4; b taken out:
//!   region b..c (c's frame held b): before b(a,b) c(b,c), after c(a,c); d(c,d) unchanged
//! ```

use std::collections::BTreeMap;
use std::ops::Bound;

use super::frame::{Frame, Step};

/// A row's place in its partition: its event time, then its values.
pub(crate) type RowKey = (i64, Box<[u8]>);

/// A row of the table, held `count` times (equal rows are one entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kept {
    /// Its aggregates' arguments (row format, one column per aggregate).
    pub args: Box<[u8]>,
    pub count: u64,
}

/// The rows of one partition, in order.
pub(crate) type Table = BTreeMap<RowKey, Kept>;

/// The rows whose results changes between `first` and `last` (keys, inclusive) can alter:
/// from `from` (inclusive) up to `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Region {
    pub from: RowKey,
    pub to: Bound<RowKey>,
}

/// The first key of time `t`.
fn start_of(t: i64) -> RowKey {
    (t, Box::from(&[][..]))
}

/// The region of rows changes from `first` to `last` alter, given the rows after `last` (the
/// same before and after the changes).
pub(crate) fn region(table: &Table, frame: Frame, first: &RowKey, last: &RowKey) -> Region {
    match frame {
        Frame::Rows(None) => Region {
            from: first.clone(),
            to: Bound::Unbounded,
        },
        Frame::Range(None) => Region {
            from: start_of(first.0),
            to: Bound::Unbounded,
        },
        Frame::Rows(Some(n)) => {
            let mut left = n;
            let mut to = Bound::Included(last.clone());
            if left > 0 {
                to = Bound::Unbounded;
                for (k, kept) in table.range((Bound::Excluded(last.clone()), Bound::Unbounded)) {
                    if kept.count >= left {
                        to = Bound::Included(k.clone());
                        break;
                    }
                    left -= kept.count;
                }
            }
            Region {
                from: first.clone(),
                to,
            }
        }
        Frame::Range(Some(x)) => {
            // Every row up to time `last + x`.
            let to = match last.0.saturating_add(x).checked_add(1) {
                Some(after) => Bound::Excluded(start_of(after)),
                None => Bound::Unbounded,
            };
            Region {
                from: start_of(first.0),
                to,
            }
        }
    }
}

/// What computing the results of the rows of `region` in `table` takes: the steps of adding
/// the rows of the frame before its first row, then each of its rows (adding, taking out of
/// the frame, emitting), as `frame.rs` releases rows.
pub(crate) fn steps(table: &Table, frame: Frame, region: &Region, out: &mut Vec<Step>) {
    // The rows before the region in the first row's frame, latest first.
    let mut before: Vec<(&RowKey, &Kept)> = Vec::new();
    let earlier = table.range(..region.from.clone()).rev();
    match frame {
        Frame::Rows(Some(n)) => {
            let mut left = n;
            for (k, kept) in earlier {
                if left == 0 {
                    break;
                }
                before.push((k, kept));
                left = left.saturating_sub(kept.count);
            }
        }
        Frame::Range(Some(x)) => {
            let from = region.from.0.saturating_sub(x);
            before.extend(earlier.take_while(|(k, _)| k.0 >= from));
        }
        Frame::Rows(None) | Frame::Range(None) => before.extend(earlier),
    }
    // Every row as often as it is held, oldest first, and whether it is in the region.
    let inside = table.range((Bound::Included(region.from.clone()), region.to.clone()));
    let rows = before
        .into_iter()
        .rev()
        .map(|r| (r, false))
        .chain(inside.map(|r| (r, true)))
        .flat_map(|((k, kept), emits)| {
            (0..kept.count).map(move |_| (k.0, &k.1, &kept.args, emits))
        });
    let rows: Vec<_> = rows.collect();
    // A ROWS frame's context may hold more copies of its first row than the frame takes.
    let skip = match frame {
        Frame::Rows(Some(n)) => {
            let context = rows.iter().take_while(|r| !r.3).count();
            context.saturating_sub(usize::try_from(n).unwrap_or(usize::MAX))
        }
        _ => 0,
    };
    let rows = rows.get(skip..).unwrap_or_default();
    let mut framed: std::collections::VecDeque<(i64, &Box<[u8]>)> = Default::default();
    let mut i = 0;
    while let Some(&(t, _, _, _)) = rows.get(i) {
        // A RANGE frame takes a time's rows together (its peers); a ROWS frame one by one.
        let peers = match frame {
            Frame::Range(_) => rows[i..].iter().take_while(|r| r.0 == t).count(),
            Frame::Rows(_) => 1,
        };
        let group = &rows[i..i + peers];
        for (_, _, args, _) in group {
            out.push(Step::Add((*args).clone()));
            framed.push_back((t, args));
        }
        match frame {
            Frame::Rows(Some(n)) => {
                let keep = usize::try_from(n).unwrap_or(usize::MAX).saturating_add(1);
                while framed.len() > keep {
                    if let Some((_, old)) = framed.pop_front() {
                        out.push(Step::Retract(old.clone()));
                    }
                }
            }
            Frame::Range(Some(x)) => {
                let from = t.saturating_sub(x);
                while framed.front().is_some_and(|(old, _)| *old < from) {
                    if let Some((_, old)) = framed.pop_front() {
                        out.push(Step::Retract(old.clone()));
                    }
                }
            }
            Frame::Rows(None) | Frame::Range(None) => framed.clear(),
        }
        for (_, values, _, emits) in group {
            if *emits {
                out.push(Step::Emit((*values).clone()));
            }
        }
        i += peers;
    }
}

/// Adds (`add`) or takes out one copy of the row at `key` with arguments `args`; false if it
/// takes out a row the table does not hold.
pub(crate) fn apply(table: &mut Table, key: RowKey, args: Box<[u8]>, add: bool) -> bool {
    if add {
        table.entry(key).or_insert(Kept { args, count: 0 }).count += 1;
        return true;
    }
    match table.get_mut(&key) {
        Some(kept) if kept.count > 1 => kept.count -= 1,
        Some(_) => {
            table.remove(&key);
        }
        None => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(t: i64, v: &str) -> RowKey {
        (t, v.as_bytes().into())
    }

    fn table(rows: &[(i64, &str)]) -> Table {
        let mut t = Table::new();
        for (time, v) in rows {
            apply(
                &mut t,
                key(*time, v),
                v.to_uppercase().as_bytes().into(),
                true,
            );
        }
        t
    }

    fn text(steps: &[Step]) -> Vec<String> {
        steps
            .iter()
            .map(|s| match s {
                Step::Add(a) => format!("+{}", String::from_utf8_lossy(a)),
                Step::Retract(a) => format!("-{}", String::from_utf8_lossy(a)),
                Step::Emit(v) => format!("emit {}", String::from_utf8_lossy(v)),
            })
            .collect()
    }

    #[test]
    fn a_rows_frame_s_region_ends_n_rows_after_the_last_change() {
        let t = table(&[(1, "a"), (2, "b"), (3, "c"), (4, "d")]);
        let r = region(&t, Frame::Rows(Some(1)), &key(2, "b"), &key(2, "b"));
        assert_eq!(r.to, Bound::Included(key(3, "c")));
        let mut out = Vec::new();
        steps(&t, Frame::Rows(Some(1)), &r, &mut out);
        // b's frame holds a and b; c's, b and c.
        assert_eq!(text(&out), ["+A", "+B", "emit b", "+C", "-A", "emit c"]);
        let r = region(&t, Frame::Rows(Some(5)), &key(2, "b"), &key(2, "b"));
        assert_eq!(
            r.to,
            Bound::Unbounded,
            "fewer rows after it than the frame takes"
        );
    }

    #[test]
    fn a_range_frame_s_region_takes_a_time_s_peers_and_the_times_up_to_x_after() {
        let t = table(&[(1, "a"), (2, "b"), (2, "c"), (4, "d"), (5, "e")]);
        let r = region(&t, Frame::Range(Some(2)), &key(2, "c"), &key(2, "c"));
        assert_eq!(r.from, key(2, ""));
        assert_eq!(r.to, Bound::Excluded(key(5, "")));
        let mut out = Vec::new();
        steps(&t, Frame::Range(Some(2)), &r, &mut out);
        assert_eq!(
            text(&out),
            ["+A", "+B", "+C", "emit b", "emit c", "+D", "-A", "emit d"]
        );
    }

    #[test]
    fn equal_rows_count_once_each_in_a_rows_frame() {
        let t = table(&[(1, "a"), (1, "a"), (1, "a"), (2, "b")]);
        let r = region(&t, Frame::Rows(Some(1)), &key(2, "b"), &key(2, "b"));
        let mut out = Vec::new();
        steps(&t, Frame::Rows(Some(1)), &r, &mut out);
        // Of the three a, the frame before b takes one.
        assert_eq!(text(&out), ["+A", "+B", "emit b"]);
    }

    #[test]
    fn an_unbounded_frame_adds_every_row_before_and_takes_none_out() {
        let t = table(&[(1, "a"), (2, "b"), (3, "c")]);
        let r = region(&t, Frame::Rows(None), &key(2, "b"), &key(2, "b"));
        let mut out = Vec::new();
        steps(&t, Frame::Rows(None), &r, &mut out);
        assert_eq!(text(&out), ["+A", "+B", "emit b", "+C", "emit c"]);
    }

    #[test]
    fn taking_out_a_row_not_held_changes_nothing() {
        let mut t = table(&[(1, "a")]);
        assert!(!apply(&mut t, key(2, "b"), b"B"[..].into(), false));
        assert!(apply(&mut t, key(1, "a"), b"A"[..].into(), false));
        assert!(t.is_empty());
    }
}
