//! `COUNT(DISTINCT x)` of several aggregates of one GROUP BY over the same int column `x`,
//! each with its own `FILTER` (Nexmark q15 and q16 count distinct bidders and auctions in
//! all and per price range), kept in one map per group: each value and how many of the
//! rows of each aggregate hold it. A row looks its value up once for all of them rather than
//! once for each; each aggregate keeps how many values it holds.
//!
//! Over an append-only input no row is taken out, and a value keeps only which aggregates
//! hold it (a bit each), not how many times.
//!
//! A checkpoint holds each aggregate's own multiset, in the bytes an unshared one writes
//! (`acc.rs`; over an append-only input, its set): checkpoints read the same whether or not
//! the sets are shared.
//!
//! What is shared is decided when the query is planned ([`share`]): `COUNT(DISTINCT …)` whose
//! values are kept as ints, whose argument is a column as it is (not an expression), by
//! [`SLOTS`] at most.

use std::sync::Arc;

use arrow::array::{Array, BooleanArray};

use super::acc::{Acc, AggPlan, Column, Distinct};

/// At most how many aggregates share one set.
pub(crate) const SLOTS: usize = 4;

/// The values of the aggregates that share a set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SharedSet {
    /// Each value and how many rows of each aggregate (by slot) hold it.
    Counts(hashbrown::HashMap<i64, [u64; SLOTS], ahash::RandomState>),
    /// Over an append-only input: each value and which aggregates hold it (bit `slot`).
    Held(hashbrown::HashMap<i64, u8, ahash::RandomState>),
}

impl SharedSet {
    /// Whether it counts the rows that hold a value (rows may be taken out).
    pub(crate) fn counts(&self) -> bool {
        matches!(self, SharedSet::Counts(_))
    }
}

/// The empty sets a group of aggregates `plans` keeps, as [`share`] planned them.
pub(crate) fn empty_sets(plans: &[AggPlan]) -> Vec<SharedSet> {
    let empty = |plan: &AggPlan| {
        if plan.append_only {
            SharedSet::Held(Default::default())
        } else {
            SharedSet::Counts(Default::default())
        }
    };
    let mut sets: Vec<SharedSet> = Vec::new();
    for plan in plans {
        if let Some(Share { set, .. }) = &plan.share {
            sets.resize_with(sets.len().max(set + 1), || empty(plan));
        }
    }
    sets
}

/// Where an aggregate's values are kept: set `set` of its group, count `slot` of each value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Share {
    pub set: usize,
    pub slot: usize,
    /// For the set's first aggregate (slot 0), which applies the rows of all of them: the
    /// index of each aggregate of the set, by slot.
    pub members: Option<Arc<[usize]>>,
}

/// Makes the aggregates of `plans` that can share a set share it, `columns[k]` being the
/// column aggregate `k`'s argument is, if it is one as it is; returns how many sets a group
/// keeps. An aggregate that shares with no other keeps its own values.
pub(crate) fn share(plans: &mut [AggPlan], columns: &[Option<usize>]) -> usize {
    let mut by_column: Vec<(usize, Vec<usize>)> = Vec::new();
    for (k, plan) in plans.iter().enumerate() {
        let Some(column) = columns.get(k).copied().flatten() else {
            continue;
        };
        if !plan.shareable() {
            continue;
        }
        match by_column.iter_mut().find(|(c, _)| *c == column) {
            Some((_, ks)) => ks.push(k),
            None => by_column.push((column, vec![k])),
        }
    }
    let mut sets = 0;
    for (_, ks) in by_column {
        for chunk in ks.chunks(SLOTS).filter(|c| c.len() > 1) {
            let members: Arc<[usize]> = chunk.into();
            for (slot, &k) in chunk.iter().enumerate() {
                plans[k].share = Some(Share {
                    set: sets,
                    slot,
                    members: (slot == 0).then(|| Arc::clone(&members)),
                });
            }
            sets += 1;
        }
    }
    sets
}

/// Adds row `i` to (`add`) or takes it out of the aggregates `members` of `set` (their
/// states in `accs`, their arguments in `columns`, their filters in `filters`): as each
/// aggregate's own multiset would, a row its filter leaves out or whose value is null
/// changes nothing, nor does taking out a value not held.
pub(crate) fn apply(
    set: &mut SharedSet,
    accs: &mut [Acc],
    members: &[usize],
    columns: &[Column],
    filters: &[Option<BooleanArray>],
    i: usize,
    add: bool,
) {
    let Some(Column::Ints(values)) = members.first().map(|k| &columns[*k]) else {
        return;
    };
    if !values.is_valid(i) {
        return;
    }
    let mut counted = [false; SLOTS];
    for (slot, &k) in members.iter().enumerate() {
        counted[slot] = filters[k]
            .as_ref()
            .is_none_or(|f| f.is_valid(i) && f.value(i));
    }
    if counted == [false; SLOTS] {
        return;
    }
    let v = values.value(i);
    let set = match set {
        SharedSet::Counts(set) => set,
        // Nothing is taken out of an append-only input.
        SharedSet::Held(set) if add => {
            let held = set.entry(v).or_insert(0);
            for (slot, &k) in members.iter().enumerate() {
                if counted[slot] && *held & (1 << slot) == 0 {
                    *held |= 1 << slot;
                    step_len(&mut accs[k], true);
                }
            }
            return;
        }
        SharedSet::Held(_) => return,
    };
    if add {
        let held = set.entry(v).or_insert([0; SLOTS]);
        for (slot, &k) in members.iter().enumerate() {
            if counted[slot] {
                held[slot] += 1;
                if held[slot] == 1 {
                    step_len(&mut accs[k], true);
                }
            }
        }
    } else if let Some(held) = set.get_mut(&v) {
        for (slot, &k) in members.iter().enumerate() {
            if counted[slot] && held[slot] > 0 {
                held[slot] -= 1;
                if held[slot] == 0 {
                    step_len(&mut accs[k], false);
                }
            }
        }
        if *held == [0; SLOTS] {
            set.remove(&v);
        }
    }
}

/// One value more (`up`) or fewer in a shared aggregate's count of values.
fn step_len(acc: &mut Acc, up: bool) {
    if let Acc::Distinct(Distinct::Shared { len, .. }) = acc {
        if up {
            *len += 1;
        } else {
            *len = len.saturating_sub(1);
        }
    }
}

/// The values slot `slot` of `set` holds and how many times (once each over an append-only
/// input), in order.
pub(crate) fn values(set: &SharedSet, slot: usize) -> Vec<(i64, u64)> {
    let mut out: Vec<(i64, u64)> = match set {
        SharedSet::Counts(set) => set
            .iter()
            .filter(|(_, held)| held[slot] > 0)
            .map(|(v, held)| (*v, held[slot]))
            .collect(),
        SharedSet::Held(set) => set
            .iter()
            .filter(|(_, held)| *held & (1 << slot) != 0)
            .map(|(v, _)| (*v, 1))
            .collect(),
    };
    out.sort_unstable_by_key(|(v, _)| *v);
    out
}

/// Puts `values` (each value and how many times it is held) into slot `slot` of `set`, from
/// a checkpoint; returns how many it holds.
pub(crate) fn restore(set: &mut SharedSet, slot: usize, values: &[(i64, u64)]) -> usize {
    let held = values.iter().filter(|(_, c)| *c > 0);
    match set {
        SharedSet::Counts(set) => {
            for (v, c) in held.clone() {
                set.entry(*v).or_insert([0; SLOTS])[slot] = *c;
            }
        }
        SharedSet::Held(set) => {
            for (v, _) in held.clone() {
                *set.entry(*v).or_insert(0) |= 1 << slot;
            }
        }
    }
    held.count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::acc::{Fun, Group};
    use crate::test_rng::Lcg;
    use arrow::array::{ArrayRef, Int64Array};
    use arrow::datatypes::DataType;

    fn distinct() -> AggPlan {
        AggPlan::new(Fun::CountDistinct, &DataType::Int64).expect("a plan")
    }

    #[test]
    fn distinct_ints_over_one_column_share_by_four_and_nothing_else_does() {
        let mut plans = vec![
            distinct(),
            AggPlan::new(Fun::Count, &DataType::Int64).expect("a plan"),
            distinct(),
            AggPlan::new(Fun::CountDistinct, &DataType::Utf8).expect("a plan"),
            distinct(),
            distinct(),
            distinct(),
            distinct(),
            distinct(),
            distinct(),
        ];
        let columns = [
            Some(1),
            Some(1),
            Some(1),
            Some(1),
            Some(2),
            Some(1),
            Some(1),
            Some(1),
            None,
            Some(3),
        ];
        assert_eq!(share(&mut plans, &columns), 1);
        let shares: Vec<Option<(usize, usize)>> = plans
            .iter()
            .map(|p| p.share.as_ref().map(|s| (s.set, s.slot)))
            .collect();
        // Column 1: 0, 2, 5, 6 share set 0; 7 is alone in the next four and keeps its own.
        // Column 2 (4) and column 3 (9) have one aggregate each, 8 reads an expression, 1 is
        // no COUNT(DISTINCT), 3 keeps strings.
        assert_eq!(
            shares,
            vec![
                Some((0, 0)),
                None,
                Some((0, 1)),
                None,
                None,
                Some((0, 2)),
                Some((0, 3)),
                None,
                None,
                None
            ]
        );
        assert_eq!(
            plans[0].share.as_ref().and_then(|s| s.members.as_deref()),
            Some(&[0, 2, 5, 6][..])
        );
        assert!(plans[2].share.as_ref().is_some_and(|s| s.members.is_none()));
    }

    /// Eight COUNT(DISTINCT) over three columns, each but the first with a filter (column 0:
    /// aggregates 0, 2, 4, 5 sharing a set and 6 alone; column 1: 1 and 3 sharing one; column
    /// 2: 7 alone), against the
    /// same aggregates each with its own multiset: rows added (and, where the input is
    /// updating, taken out) at random, retractions of values not held, nulls.
    fn shared_against_own(append_only: bool, seed: u64) {
        let n_aggs = 8;
        let columns = [0, 1, 0, 1, 0, 0, 0, 2];
        let plan = || {
            let p = distinct();
            if append_only {
                p.over_append_only()
            } else {
                p
            }
        };
        let mut shared_plans: Vec<AggPlan> = (0..n_aggs).map(|_| plan()).collect();
        let arguments: Vec<Option<usize>> = columns.iter().map(|c| Some(*c)).collect();
        assert_eq!(share(&mut shared_plans, &arguments), 2);
        let own_plans: Vec<AggPlan> = (0..n_aggs).map(|_| distinct()).collect();
        let mut shared = Group::new(&shared_plans);
        let mut own = Group::new(&own_plans);
        assert_eq!(shared.shared.len(), 2);
        assert!(shared.shared.iter().all(|s| s.counts() != append_only));
        for lone in [6, 7] {
            let set = matches!(shared.accs[lone], Acc::Distinct(Distinct::Set(_)));
            assert_eq!(
                set, append_only,
                "aggregate {lone}: {:?}",
                shared.accs[lone]
            );
        }
        let mut rng = Lcg::new(seed);
        for step in 0..60 {
            let n = 1 + rng.below(40) as usize;
            let value = |rng: &mut Lcg| (rng.below(10) > 0).then(|| rng.below(12) as i64 - 3);
            let by_column: [ArrayRef; 3] = [
                Arc::new(Int64Array::from_iter((0..n).map(|_| value(&mut rng)))),
                Arc::new(Int64Array::from_iter((0..n).map(|_| value(&mut rng)))),
                Arc::new(Int64Array::from_iter((0..n).map(|_| value(&mut rng)))),
            ];
            let filters: Vec<Option<BooleanArray>> = (0..n_aggs)
                .map(|k| {
                    (k > 0).then(|| {
                        BooleanArray::from_iter((0..n).map(|_| match rng.below(5) {
                            0 => None,
                            1 | 2 => Some(true),
                            _ => Some(false),
                        }))
                    })
                })
                .collect();
            let args = |plans: &[AggPlan]| -> Vec<Column> {
                plans
                    .iter()
                    .zip(columns)
                    .map(|(p, c)| p.column(&by_column[c]).expect("ints"))
                    .collect()
            };
            let (shared_columns, own_columns) = (args(&shared_plans), args(&own_plans));
            for i in 0..n {
                let add = append_only || rng.below(3) > 0;
                shared.apply(&shared_plans, &shared_columns, &filters, i, add);
                own.apply(&own_plans, &own_columns, &filters, i, add);
            }
            for (k, plan) in own_plans.iter().enumerate() {
                let a = plan.evaluate([&own.accs[k]].into_iter());
                let b = shared_plans[k].evaluate([&shared.accs[k]].into_iter());
                assert_eq!(
                    a.as_ref().ok().map(|a| a.to_data()),
                    b.as_ref().ok().map(|b| b.to_data()),
                    "aggregate {k} after step {step}"
                );
            }
            let bytes = shared.encode();
            let back = Group::decode(&bytes, &shared_plans).expect("decodes");
            assert_eq!(back, shared, "after step {step}");
            // A checkpoint of the multisets reads as the shared sets.
            let from_own = Group::decode(&own.encode(), &shared_plans).expect("decodes");
            assert_eq!(from_own, shared, "after step {step}");
            if append_only {
                // Sets without counts never stand for multisets.
                assert_eq!(Group::decode(&bytes, &own_plans), None, "after step {step}");
            } else {
                assert_eq!(bytes, own.encode(), "after step {step}");
                assert_eq!(Group::decode(&bytes, &own_plans).as_ref(), Some(&own));
            }
        }
        assert!(
            super::values(&shared.shared[0], 0).len() > 3,
            "the test must hold values: {:?}",
            shared.shared
        );
    }

    #[test]
    fn shared_sets_count_and_checkpoint_as_one_multiset_per_aggregate() {
        for seed in [23, 24, 25] {
            shared_against_own(false, seed);
        }
    }

    #[test]
    fn shared_sets_of_an_append_only_input_hold_each_value_once_and_read_older_checkpoints() {
        for seed in [23, 24, 25] {
            shared_against_own(true, seed);
        }
    }
}
