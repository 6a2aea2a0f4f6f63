//! What one change of an input row does to the rows of its key, and the changes the join
//! emits for it: Flink's `StreamingJoinOperator`, as a pure function of the key's rows.
//!
//! Each side of a key holds its rows as [`Held`] rows: a distinct row's values, how many
//! copies of it are held, and how many rows of the other side it joins (its *degree*, Flink's
//! `numOfAssociations`). The degree tells an outer side's row when its null-padded result
//! must go (its first partner arrives: `-D` of the padded row, before the `+I` of the pair) and
//! come back (its last partner is taken out: `+I` of the padded row, after the pair's
//! retraction).
//!
//! The change kinds follow Flink's regular join: a pair is emitted `+I` and retracted `-D`
//! when a side is outer; when neither is, a pair takes the kind of the input row that makes
//! it (`+I`, `+U`, `-U`, `-D`), so an inner join of append-only inputs emits only `+I`.
//!
//! ```text
//! LEFT JOIN, left +I(a) with no right row:   +I(a, null)
//! then right +I(b) of a's key:                -D(a, null)  +I(a, b)
//! then right -D(b):                           -D(a, b)     +I(a, null)
//! ```

use anduin_types::ChangeKind;

/// One distinct row held on one side of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    /// Its values, in the row format of its side's converter.
    pub values: Box<[u8]>,
    /// How many copies of it are held (at least 1).
    pub count: u64,
    /// How many rows of the other side it joins (each copy joins the same ones).
    pub degree: u64,
}

/// What the sides of the join do with an input row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Roles {
    /// Whether the input row's side keeps its unmatched rows (padded with nulls).
    pub input_outer: bool,
    /// Whether the other side does.
    pub other_outer: bool,
    /// Whether the input row's side is updating: its equal rows are held as one with a
    /// count, so that a retraction finds them. An append-only side's rows are never
    /// retracted, and are pushed without looking for an equal one.
    pub input_updating: bool,
}

/// One change the join emits for an input row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Emitted {
    /// The input row joined with the other side's held row at this index.
    Pair(usize, ChangeKind),
    /// The input row padded with nulls on the other side.
    InputAlone(ChangeKind),
    /// The other side's held row at this index padded with nulls on the input's side.
    OtherAlone(usize, ChangeKind),
}

/// What [`apply`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Applied {
    /// The change was applied and its results emitted.
    Done,
    /// A retraction of a row its side does not hold: nothing changed, nothing emitted.
    NotHeld,
}

/// Applies an input row of kind `kind` with `values` to its side's rows `own`, given the
/// indices into `other` of the other side's rows it joins (equal key and the residual
/// condition true), and pushes what the join emits to `out`, in order.
pub(crate) fn apply(
    kind: ChangeKind,
    roles: Roles,
    own: &mut Vec<Held>,
    other: &mut [Held],
    matches: &[usize],
    values: &[u8],
    out: &mut Vec<Emitted>,
) -> Applied {
    let partners: u64 = matches
        .iter()
        .filter_map(|j| other.get(*j))
        .map(|h| h.count)
        .sum();
    if kind.adds() {
        add(own, values, partners, roles.input_updating);
        if matches.is_empty() {
            if roles.input_outer {
                out.push(Emitted::InputAlone(ChangeKind::Insert));
            }
            return Applied::Done;
        }
        let pair_kind = if roles.input_outer || roles.other_outer {
            ChangeKind::Insert
        } else {
            kind
        };
        if roles.other_outer {
            for &j in matches {
                let Some(h) = other.get_mut(j) else { continue };
                if h.degree == 0 {
                    for _ in 0..h.count {
                        out.push(Emitted::OtherAlone(j, ChangeKind::Delete));
                    }
                }
                h.degree += 1;
            }
        }
        pairs(other, matches, pair_kind, out);
        Applied::Done
    } else {
        let Some(degree) = take(own, values) else {
            return Applied::NotHeld;
        };
        if matches.is_empty() {
            // Padded only if it never had a partner: a row whose partners expired
            // (`state_ttl`) keeps their count, and its pairs, emitted, are gone with their
            // state: nothing is retracted (the result is stale, as in Flink).
            if roles.input_outer && degree == 0 {
                out.push(Emitted::InputAlone(ChangeKind::Delete));
            }
            return Applied::Done;
        }
        let pair_kind = if roles.input_outer || roles.other_outer {
            ChangeKind::Delete
        } else {
            kind
        };
        pairs(other, matches, pair_kind, out);
        if roles.other_outer {
            for &j in matches {
                let Some(h) = other.get_mut(j) else { continue };
                h.degree = h.degree.saturating_sub(1);
                if h.degree == 0 {
                    for _ in 0..h.count {
                        out.push(Emitted::OtherAlone(j, ChangeKind::Insert));
                    }
                }
            }
        }
        Applied::Done
    }
}

/// One pair per copy of each matched row.
fn pairs(other: &[Held], matches: &[usize], kind: ChangeKind, out: &mut Vec<Emitted>) {
    for &j in matches {
        let copies = other.get(j).map_or(0, |h| h.count);
        for _ in 0..copies {
            out.push(Emitted::Pair(j, kind));
        }
    }
}

/// Adds a copy of `values` joining `partners` rows (to an equal row's count if `count`).
fn add(own: &mut Vec<Held>, values: &[u8], partners: u64, count: bool) {
    let equal = if count {
        own.iter_mut().find(|h| *h.values == *values)
    } else {
        None
    };
    match equal {
        Some(h) => {
            h.count += 1;
            h.degree = partners;
        }
        None => own.push(Held {
            values: values.into(),
            count: 1,
            degree: partners,
        }),
    }
}

/// Takes out a copy of `values`; the degree it had, if one was held.
fn take(own: &mut Vec<Held>, values: &[u8]) -> Option<u64> {
    let i = own.iter().position(|h| *h.values == *values)?;
    let h = &mut own[i];
    let degree = h.degree;
    h.count -= 1;
    if h.count == 0 {
        own.swap_remove(i);
    }
    Some(degree)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ChangeKind::{Delete, Insert, UpdateAfter, UpdateBefore};
    use Emitted::{InputAlone, OtherAlone, Pair};

    const LEFT: Roles = Roles {
        input_outer: true,
        other_outer: false,
        input_updating: true,
    };

    fn held(v: &[u8], count: u64, degree: u64) -> Held {
        Held {
            values: v.into(),
            count,
            degree,
        }
    }

    fn run(
        kind: ChangeKind,
        roles: Roles,
        own: &mut Vec<Held>,
        other: &mut [Held],
        matches: &[usize],
        v: &[u8],
    ) -> Vec<Emitted> {
        let mut out = Vec::new();
        assert_eq!(
            apply(kind, roles, own, other, matches, v, &mut out),
            Applied::Done
        );
        out
    }

    #[test]
    fn a_left_row_alone_is_padded_then_retracted_when_its_partner_comes_and_back_when_it_goes() {
        let (mut left, mut right) = (Vec::new(), Vec::new());
        // left +I(a): no partner.
        assert_eq!(
            run(Insert, LEFT, &mut left, &mut right, &[], b"a"),
            [InputAlone(Insert)]
        );
        // right +I(b): from the right, the left is the outer other side.
        let right_in = Roles {
            input_outer: false,
            other_outer: true,
            input_updating: true,
        };
        assert_eq!(
            run(Insert, right_in, &mut right, &mut left, &[0], b"b"),
            [OtherAlone(0, Delete), Pair(0, Insert)]
        );
        assert_eq!(left, [held(b"a", 1, 1)]);
        assert_eq!(right, [held(b"b", 1, 1)]);
        // right -D(b): the pair goes, the padded row comes back.
        assert_eq!(
            run(Delete, right_in, &mut right, &mut left, &[0], b"b"),
            [Pair(0, Delete), OtherAlone(0, Insert)]
        );
        assert_eq!(left, [held(b"a", 1, 0)]);
        assert!(right.is_empty());
    }

    #[test]
    fn an_inner_join_passes_the_input_kind_on_and_copies_pair_once_each() {
        let mut own = Vec::new();
        let mut other = vec![held(b"x", 2, 0), held(b"y", 1, 0)];
        let inner = Roles {
            input_outer: false,
            other_outer: false,
            input_updating: true,
        };
        assert_eq!(
            run(UpdateAfter, inner, &mut own, &mut other, &[0, 1], b"a"),
            [
                Pair(0, UpdateAfter),
                Pair(0, UpdateAfter),
                Pair(1, UpdateAfter)
            ]
        );
        assert_eq!(own, [held(b"a", 1, 3)]);
        assert_eq!(
            run(UpdateBefore, inner, &mut own, &mut other, &[1], b"a"),
            [Pair(1, UpdateBefore)]
        );
        assert!(own.is_empty());
    }

    #[test]
    fn a_retraction_of_a_row_not_held_changes_and_emits_nothing() {
        let mut own = vec![held(b"a", 1, 0)];
        let mut other = vec![held(b"x", 1, 1)];
        let mut out = Vec::new();
        let full = Roles {
            input_outer: true,
            other_outer: true,
            input_updating: true,
        };
        assert_eq!(
            apply(Delete, full, &mut own, &mut other, &[0], b"z", &mut out),
            Applied::NotHeld
        );
        assert!(out.is_empty());
        assert_eq!(other, [held(b"x", 1, 1)]);
    }

    #[test]
    fn an_append_only_side_holds_equal_rows_apart_and_an_updating_one_counts_them() {
        let inner = Roles {
            input_outer: false,
            other_outer: false,
            input_updating: false,
        };
        let (mut own, mut other) = (Vec::new(), vec![held(b"x", 1, 0)]);
        for _ in 0..2 {
            let _ = run(Insert, inner, &mut own, &mut other, &[0], b"a");
        }
        assert_eq!(own, [held(b"a", 1, 1), held(b"a", 1, 1)]);
        let updating = Roles {
            input_updating: true,
            ..inner
        };
        let mut own = Vec::new();
        for _ in 0..2 {
            let _ = run(Insert, updating, &mut own, &mut other, &[0], b"a");
        }
        assert_eq!(own, [held(b"a", 2, 1)]);
    }

    #[test]
    fn an_outer_row_whose_partners_expired_retracts_nothing_padded() {
        // left +I(a), right +I(b): the pair, a's degree 1.
        let (mut left, mut right) = (Vec::new(), Vec::new());
        assert_eq!(
            run(Insert, LEFT, &mut left, &mut right, &[], b"a"),
            [InputAlone(Insert)]
        );
        let right_in = Roles {
            input_outer: false,
            other_outer: true,
            input_updating: true,
        };
        let _ = run(Insert, right_in, &mut right, &mut left, &[0], b"b");
        // The right side of the key expires (`state_ttl` drops its rows, the left keeps
        // a's count of partners); then left -D(a): a's padded row was retracted when b came,
        // so no `-D(a, null)`, and the pair's state is gone with b.
        right.clear();
        assert_eq!(
            run(Delete, LEFT, &mut left, &mut right, &[], b"a"),
            [],
            "a retraction of a padded row never emitted"
        );
        assert!(left.is_empty());
        // A row that never had a partner still retracts its padded row.
        let _ = run(Insert, LEFT, &mut left, &mut right, &[], b"c");
        assert_eq!(
            run(Delete, LEFT, &mut left, &mut right, &[], b"c"),
            [InputAlone(Delete)]
        );
    }

    #[test]
    fn an_outer_input_with_partners_emits_inserts_whatever_its_kind() {
        let mut own = Vec::new();
        let mut other = vec![held(b"x", 1, 3)];
        assert_eq!(
            run(UpdateAfter, LEFT, &mut own, &mut other, &[0], b"a"),
            [Pair(0, Insert)]
        );
        assert_eq!(
            run(UpdateBefore, LEFT, &mut own, &mut other, &[0], b"a"),
            [Pair(0, Delete)]
        );
    }
}
