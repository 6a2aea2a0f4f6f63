//! The rows of one partition in rank order, and the changes between two of its top-N lists:
//! pure functions of the rows, as Flink's `RetractableTopNFunction` keeps a sort key's rows
//! in a list under a sorted map.
//!
//! A row is held as its sort key (Arrow row-format bytes of the `order` columns, which compare
//! as the order asks) and its values (row-format bytes of every input column but the change
//! kind). Rows of equal sort keys are ranked by arrival: the earliest first ([`Ties::Earliest`],
//! SQL's `ROW_NUMBER` over ties in Flink), or the latest first ([`Ties::Latest`], the keep-last
//! deduplication). A retraction takes out the first equal row of its sort key in that order.
//!
//! ```text
//! limit 2, order v DESC, rows +I(5) +I(9) +I(7):
//!   top [5]      -> +I(5)
//!   top [9, 5]   -> +I(9)
//!   top [9, 7]   -> -D(5) +I(7)          (ranked: -U(5,2) +U(7,2))
//! ```

use std::collections::BTreeMap;

use anduin_types::ChangeKind;

/// Which of the rows of equal sort keys ranks first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ties {
    /// The one that came first.
    Earliest,
    /// The one that came last.
    Latest,
}

/// The rows of one partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Partition {
    /// Rows by sort key; those of one sort key in rank order.
    rows: Held,
    /// How many rows `rows` holds.
    pub len: usize,
    /// Keep-first deduplication: the partition's row was emitted, and every later row of it
    /// is dropped.
    pub emitted: bool,
    /// Keep-first deduplication: the event time of the row held, not emitted yet.
    pub pending: Option<i64>,
}

/// The rows of a partition: most partitions of a deduplication or a top-1 hold one, which
/// takes no sorted map (a map's first node has room for eleven).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Held {
    #[default]
    None,
    /// One row: its sort key and values.
    One { sort: Box<[u8]>, row: Box<[u8]> },
    /// Two rows or more, by sort key; those of one sort key in rank order.
    Many(BTreeMap<Box<[u8]>, Vec<Box<[u8]>>>),
}

impl Partition {
    /// A partition of the rows `rows` (by sort key, each key's in rank order, none empty).
    pub(crate) fn of(rows: BTreeMap<Box<[u8]>, Vec<Box<[u8]>>>) -> Self {
        let len = rows.values().map(Vec::len).sum();
        let mut p = Self {
            rows: Held::Many(rows),
            len,
            ..Self::default()
        };
        p.settle();
        p
    }

    /// The mark of a keep-first partition whose row was emitted: no row, and every later
    /// row of its key dropped.
    pub(crate) fn emitted() -> Self {
        Self {
            emitted: true,
            ..Self::default()
        }
    }

    /// Keeps one row or none without a map.
    fn settle(&mut self) {
        let Held::Many(map) = &mut self.rows else {
            return;
        };
        match self.len {
            0 => self.rows = Held::None,
            1 => {
                if let Some((sort, mut list)) = map.pop_first() {
                    if let Some(row) = list.pop() {
                        self.rows = Held::One { sort, row };
                    }
                }
            }
            _ => {}
        }
    }

    /// The rows by sort key, those of one sort key in rank order (no allocation: it is
    /// read for every partition a batch touches).
    pub(crate) fn lists(&self) -> impl Iterator<Item = (&[u8], &[Box<[u8]>])> + '_ {
        let (one, many) = match &self.rows {
            Held::None => (None, None),
            Held::One { sort, row } => (Some((&sort[..], std::slice::from_ref(row))), None),
            Held::Many(map) => (None, Some(map.iter().map(|(s, l)| (&s[..], &l[..])))),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    /// How many sort keys the rows have.
    pub(crate) fn sort_keys(&self) -> usize {
        match &self.rows {
            Held::None => 0,
            Held::One { .. } => 1,
            Held::Many(map) => map.len(),
        }
    }

    /// The first row's sort key.
    pub(crate) fn first_sort(&self) -> Option<&[u8]> {
        match &self.rows {
            Held::None => None,
            Held::One { sort, .. } => Some(sort),
            Held::Many(map) => map.first_key_value().map(|(s, _)| &s[..]),
        }
    }

    /// Drops every row.
    pub(crate) fn clear(&mut self) {
        self.rows = Held::None;
        self.len = 0;
    }

    /// Adds a row with sort key `sort` and values `row`.
    pub(crate) fn add(&mut self, sort: &[u8], row: &[u8], ties: Ties) {
        self.len += 1;
        let map = match &mut self.rows {
            Held::None => {
                self.rows = Held::One {
                    sort: sort.into(),
                    row: row.into(),
                };
                return;
            }
            Held::One { .. } => {
                let Held::One { sort: s, row: r } = std::mem::take(&mut self.rows) else {
                    unreachable!("matched as one row above")
                };
                self.rows = Held::Many(BTreeMap::from([(s, vec![r])]));
                let Held::Many(map) = &mut self.rows else {
                    unreachable!("set just above")
                };
                map
            }
            Held::Many(map) => map,
        };
        let list = match map.get_mut(sort) {
            Some(list) => list,
            None => map.entry(sort.into()).or_default(),
        };
        match ties {
            Ties::Earliest => list.push(row.into()),
            Ties::Latest => list.insert(0, row.into()),
        }
    }

    /// Takes out the first row of sort key `sort` equal to `row`; whether one was held.
    pub(crate) fn take(&mut self, sort: &[u8], row: &[u8]) -> bool {
        match &mut self.rows {
            Held::None => return false,
            Held::One { sort: s, row: r } => {
                if **s != *sort || **r != *row {
                    return false;
                }
                self.rows = Held::None;
            }
            Held::Many(map) => {
                let Some(list) = map.get_mut(sort) else {
                    return false;
                };
                let Some(i) = list.iter().position(|r| **r == *row) else {
                    return false;
                };
                list.remove(i);
                if list.is_empty() {
                    map.remove(sort);
                }
            }
        }
        self.len -= 1;
        self.settle();
        true
    }

    /// Drops every row ranked after the first `n` (of an append-only input, which can never
    /// rank among the first `n` again).
    pub(crate) fn trim(&mut self, n: usize) {
        if self.len <= n {
            return;
        }
        if let Held::Many(map) = &mut self.rows {
            while self.len > n {
                let Some(mut last) = map.last_entry() else {
                    break;
                };
                let over = self.len - n;
                let list = last.get_mut();
                if list.len() <= over {
                    self.len -= list.len();
                    last.remove();
                } else {
                    list.truncate(list.len() - over);
                    self.len = n;
                }
            }
            self.settle();
        } else {
            self.clear();
        }
    }

    /// The values of the first `n` rows, in rank order, borrowed.
    pub(crate) fn top_refs(&self, n: usize) -> Vec<&[u8]> {
        self.lists()
            .flat_map(|(_, l)| l.iter().map(|r| &r[..]))
            .take(n)
            .collect()
    }

    /// The values of the first `n` rows, in rank order.
    pub(crate) fn top(&self, n: usize) -> Top {
        self.lists()
            .flat_map(|(_, l)| l.iter())
            .take(n)
            .cloned()
            .collect()
    }

    /// Whether the partition keeps nothing (no row, no mark of an emitted row).
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0 && !self.emitted
    }
}

/// The values of a partition's first rows, in rank order.
pub(crate) type Top = Vec<Box<[u8]>>;

/// One change of the output: the values of a row, its rank (from 1) and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    pub row: Box<[u8]>,
    pub rank: u64,
    pub kind: ChangeKind,
}

/// The changes that turn the top list `before` of a partition into `after`, pushed to `out`.
///
/// With `ranked` (the rank is a column of the output), each rank whose row changed is
/// updated (`-U` then `+U`), dropped (`-D`) or added (`+I`). Without, a row that left the
/// list is deleted and a row that entered it inserted (multisets: a row held twice that
/// stays twice changes nothing), except that a list of one row replaced by another (a
/// deduplication) is an update; the rank given is then the row's place in its list.
pub(crate) fn changes<A: AsRef<[u8]>>(
    before: &[Box<[u8]>],
    after: &[A],
    ranked: bool,
    out: &mut Vec<Change>,
) {
    let change = |row: &[u8], at: usize, kind| Change {
        row: row.into(),
        rank: at as u64 + 1,
        kind,
    };
    if ranked {
        for i in 0..before.len().max(after.len()) {
            match (before.get(i), after.get(i)) {
                (Some(b), Some(a)) if **b == *a.as_ref() => {}
                (Some(b), Some(a)) => {
                    out.push(change(b, i, ChangeKind::UpdateBefore));
                    out.push(change(a.as_ref(), i, ChangeKind::UpdateAfter));
                }
                (Some(b), None) => out.push(change(b, i, ChangeKind::Delete)),
                (None, Some(a)) => out.push(change(a.as_ref(), i, ChangeKind::Insert)),
                (None, None) => {}
            }
        }
        return;
    }
    // Each row of one list matched with an equal one of the other, at most once.
    let mut kept = vec![false; after.len()];
    let mut gone = Vec::new();
    for (i, b) in before.iter().enumerate() {
        match (0..after.len()).find(|j| !kept[*j] && *after[*j].as_ref() == **b) {
            Some(j) => kept[j] = true,
            None => gone.push(i),
        }
    }
    let came: Vec<usize> = (0..after.len()).filter(|j| !kept[*j]).collect();
    if let ([b], [a], 1, 1) = (gone.as_slice(), came.as_slice(), before.len(), after.len()) {
        out.push(change(&before[*b], 0, ChangeKind::UpdateBefore));
        out.push(change(after[*a].as_ref(), 0, ChangeKind::UpdateAfter));
        return;
    }
    for i in gone {
        out.push(change(&before[i], i, ChangeKind::Delete));
    }
    for j in came {
        out.push(change(after[j].as_ref(), j, ChangeKind::Insert));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ChangeKind::{Delete, Insert, UpdateAfter, UpdateBefore};

    fn b(s: &str) -> Box<[u8]> {
        s.as_bytes().into()
    }

    fn kinds(out: &[Change]) -> Vec<(String, u64, ChangeKind)> {
        out.iter()
            .map(|c| (String::from_utf8_lossy(&c.row).into_owned(), c.rank, c.kind))
            .collect()
    }

    #[test]
    fn equal_sort_keys_rank_by_arrival_and_a_retraction_takes_the_first_equal_row() {
        let mut p = Partition::default();
        for (sort, row) in [("1", "a"), ("0", "b"), ("1", "c"), ("1", "a")] {
            p.add(sort.as_bytes(), row.as_bytes(), Ties::Earliest);
        }
        assert_eq!(p.top(9), [b("b"), b("a"), b("c"), b("a")]);
        assert!(p.take(b"1", b"a"));
        assert_eq!(p.top(9), [b("b"), b("c"), b("a")]);
        assert!(
            !p.take(b"0", b"a"),
            "a row of another sort key is not taken"
        );
        let mut latest = Partition::default();
        for row in ["x", "y"] {
            latest.add(b"5", row.as_bytes(), Ties::Latest);
        }
        assert_eq!(latest.top(1), [b("y")]);
    }

    /// Seeded adds, retractions and trims on a partition give the rows of a naive list
    /// ranked by sort key then arrival, and a partition of one row holds no map.
    #[test]
    fn a_partition_ranks_as_a_naive_list_whether_it_holds_one_row_or_many() {
        let mut rng = crate::test_rng::Lcg::new(0x70b);
        let mut next = |n: u64| rng.below(n);
        for ties in [Ties::Earliest, Ties::Latest] {
            let mut p = Partition::default();
            // (sort, arrival, row)
            type Naive = Vec<(Box<[u8]>, u64, Box<[u8]>)>;
            let mut naive: Naive = Vec::new();
            for step in 0..3_000u64 {
                let sort: Box<[u8]> = [next(4) as u8].into();
                let row: Box<[u8]> = [next(3) as u8].into();
                match next(10) {
                    0..=4 => {
                        p.add(&sort, &row, ties);
                        let arrival = match ties {
                            Ties::Earliest => step,
                            Ties::Latest => u64::MAX - step,
                        };
                        naive.push((sort, arrival, row));
                    }
                    5..=8 => {
                        let first = naive
                            .iter()
                            .enumerate()
                            .filter(|(_, (s, _, r))| *s == sort && *r == row)
                            .min_by_key(|(_, (_, a, _))| *a)
                            .map(|(i, _)| i);
                        assert_eq!(p.take(&sort, &row), first.is_some(), "step {step}");
                        if let Some(i) = first {
                            naive.remove(i);
                        }
                    }
                    _ => {
                        let n = next(4) as usize;
                        p.trim(n);
                        naive.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
                        naive.truncate(n);
                    }
                }
                naive.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
                let want: Vec<Box<[u8]>> = naive.iter().map(|(_, _, r)| r.clone()).collect();
                assert_eq!(p.top(usize::MAX), want, "{ties:?} step {step}");
                assert_eq!(p.len, naive.len());
                assert_eq!(
                    matches!(p.rows, Held::One { .. }),
                    p.len == 1,
                    "step {step}"
                );
                assert_eq!(p.rows == Held::None, p.len == 0, "step {step}");
                assert_eq!(p.first_sort(), naive.first().map(|(s, _, _)| &s[..]));
            }
        }
    }

    #[test]
    fn trimming_keeps_the_first_rows_across_sort_keys() {
        let mut p = Partition::default();
        for (sort, row) in [("1", "a"), ("2", "b"), ("2", "c"), ("3", "d")] {
            p.add(sort.as_bytes(), row.as_bytes(), Ties::Earliest);
        }
        p.trim(2);
        assert_eq!((p.top(9), p.len), (vec![b("a"), b("b")], 2));
        p.trim(0);
        assert!(p.is_empty() && p.rows == Held::None);
    }

    #[test]
    fn a_ranked_list_updates_each_rank_whose_row_changed() {
        let mut out = Vec::new();
        changes(&[b("9"), b("5")], &[b("9"), b("7"), b("5")], true, &mut out);
        assert_eq!(
            kinds(&out),
            [
                ("5".into(), 2, UpdateBefore),
                ("7".into(), 2, UpdateAfter),
                ("5".into(), 3, Insert)
            ]
        );
        out.clear();
        changes::<Box<[u8]>>(&[b("9")], &[], true, &mut out);
        assert_eq!(kinds(&out), [("9".into(), 1, Delete)]);
    }

    #[test]
    fn an_unranked_list_deletes_what_left_and_inserts_what_came_as_multisets() {
        let mut out = Vec::new();
        changes(
            &[b("9"), b("5"), b("5")],
            &[b("9"), b("7"), b("5")],
            false,
            &mut out,
        );
        assert_eq!(
            kinds(&out),
            [("5".into(), 3, Delete), ("7".into(), 2, Insert)]
        );
        out.clear();
        changes(&[b("5"), b("9")], &[b("9"), b("5")], false, &mut out);
        assert!(out.is_empty(), "a reordering changes no row");
        changes(&[b("5")], &[b("6")], false, &mut out);
        assert_eq!(
            kinds(&out),
            [("5".into(), 1, UpdateBefore), ("6".into(), 1, UpdateAfter)]
        );
    }
}
