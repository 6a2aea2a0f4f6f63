//! `MIN` and `MAX` of a GROUP BY whose input is append-only (Nexmark q16's latest minute,
//! q17's lowest and highest bid per auction and day): no row is ever taken out, so a group
//! keeps its least or greatest value only, not the multiset of every value it saw (a tree
//! node and a count per value), and a row compares its value with it.
//!
//! In a checkpoint it is tagged `x` (`acc.rs`): the value, or none. A checkpoint of the
//! multiset (an earlier anduin's, of the same append-only query) is read as its first or last
//! value; the bytes of an extreme are refused where a multiset is needed (an input that became
//! updating could take a row out, and the values behind the extreme are not there).

use super::acc::Fun;

/// Whether `v` takes the place of `held` as the extreme `fun` (`MIN` or `MAX`) keeps.
fn replaces<T: PartialOrd + ?Sized>(fun: Fun, v: &T, held: Option<&T>) -> bool {
    held.is_none_or(|h| if fun == Fun::Min { v < h } else { v > h })
}

/// Adds int `v` to the extreme `held` of `fun`.
pub(crate) fn add_int(fun: Fun, held: &mut Option<i64>, v: i64) {
    if replaces(fun, &v, held.as_ref()) {
        *held = Some(v);
    }
}

/// Adds the value whose row-format bytes are `v` to the extreme `held` of `fun` (the bytes
/// order as the values do); its bytes are copied only when it takes the place.
pub(crate) fn add_row(fun: Fun, held: &mut Option<Vec<u8>>, v: &[u8]) {
    if replaces(fun, v, held.as_deref()) {
        match held {
            Some(h) => {
                h.clear();
                h.extend_from_slice(v);
            }
            None => *held = Some(v.to_vec()),
        }
    }
}

/// The extreme of `fun` among `values`.
pub(crate) fn of<'a, T: PartialOrd + ?Sized>(
    fun: Fun,
    values: impl IntoIterator<Item = &'a T>,
) -> Option<&'a T> {
    values.into_iter().fold(None, |held, v| {
        if replaces(fun, v, held) {
            Some(v)
        } else {
            held
        }
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Array, ArrayRef, Int64Array, StringArray};
    use arrow::datatypes::DataType;

    use crate::group::acc::{Acc, AggPlan, Group, Ordered};
    use crate::test_rng::Lcg;

    use super::*;

    fn value(plans: &[AggPlan], g: &Group, k: usize) -> ArrayRef {
        match plans[k].evaluate([&g.accs[k]].into_iter()) {
            Ok(v) => v,
            Err(_) => panic!("aggregate {k} does not evaluate"),
        }
    }

    #[test]
    fn an_append_only_extreme_is_the_multiset_s_first_or_last_value_and_reads_its_checkpoint() {
        // MIN and MAX of ints and of strings, over the same rows (nulls among them).
        let plans = |append_only: bool| -> Vec<AggPlan> {
            [
                (Fun::Min, DataType::Int64),
                (Fun::Max, DataType::Int64),
                (Fun::Min, DataType::Utf8),
                (Fun::Max, DataType::Utf8),
            ]
            .into_iter()
            .map(|(f, t)| {
                let p = AggPlan::new(f, &t).expect("a plan");
                if append_only {
                    p.over_append_only()
                } else {
                    p
                }
            })
            .collect()
        };
        let (kept, all) = (plans(true), plans(false));
        let (mut extreme, mut multiset) = (Group::new(&kept), Group::new(&all));
        assert!(matches!(extreme.accs[0], Acc::Values(Ordered::Int(None))));
        assert!(matches!(extreme.accs[3], Acc::Values(Ordered::Row(None))));
        let mut rng = Lcg::new(7);
        for step in 0..50 {
            let n = 1 + rng.below(30) as usize;
            let ints: ArrayRef = Arc::new(Int64Array::from_iter((0..n).map(|_| {
                (rng.below(8) > 0).then(|| rng.bits() - (1 << 30) + i64::from(step) * 1000)
            })));
            let strings: ArrayRef =
                Arc::new(StringArray::from_iter((0..n).map(|_| {
                    (rng.below(8) > 0).then(|| format!("k{}", rng.below(500)))
                })));
            let columns = |plans: &[AggPlan]| -> Vec<_> {
                plans
                    .iter()
                    .enumerate()
                    .map(|(k, p)| {
                        p.column(if k < 2 { &ints } else { &strings })
                            .expect("a column")
                    })
                    .collect()
            };
            let (ck, ca) = (columns(&kept), columns(&all));
            let filters = vec![None; 4];
            for i in 0..n {
                extreme.apply(&kept, &ck, &filters, i, true);
                multiset.apply(&all, &ca, &filters, i, true);
            }
            for k in 0..4 {
                assert_eq!(
                    value(&kept, &extreme, k).to_data(),
                    value(&all, &multiset, k).to_data(),
                    "aggregate {k}, step {step}"
                );
            }
            // The multiset's checkpoint read as extremes; theirs survives its bytes.
            let read = Group::decode(&multiset.encode(), &kept).expect("reads the multisets");
            assert_eq!(read, extreme, "step {step}");
            let bytes = extreme.encode();
            assert_eq!(Group::decode(&bytes, &kept).as_ref(), Some(&extreme));
            // Refused where a multiset is needed.
            assert_eq!(Group::decode(&bytes, &all), None, "step {step}");
        }
        assert!(value(&kept, &extreme, 2).is_valid(0));
    }

    #[test]
    fn the_extreme_of_nothing_is_none_and_ties_keep_the_first() {
        assert_eq!(of::<i64>(Fun::Min, []), None);
        assert_eq!(of(Fun::Max, [&3, &9, &9, &-1]), Some(&9));
        assert_eq!(
            of(Fun::Min, [&b"b"[..], &b"a"[..], &b"c"[..]]),
            Some(&b"a"[..])
        );
        let mut held = None;
        for v in [5, 2, 8, 2] {
            add_int(Fun::Min, &mut held, v);
        }
        assert_eq!(held, Some(2));
    }
}
