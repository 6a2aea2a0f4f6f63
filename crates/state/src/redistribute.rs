//! Re-cutting an operator's keyed state from one number of instances to another: what an
//! instance of the new parallelism restores, made of the states of the old instances whose
//! key groups it takes over (a query resumed from a checkpoint at another parallelism).

use std::io::Read;

use crate::{BackendKind, KeyGroupRange, KeyedTable, SnapshotKind, TableError, TableProblem};

/// One instance of the old parallelism: the key groups it owned and its snapshot streams (a
/// full snapshot, then the changelogs after it, oldest first).
pub struct OldInstance<'a> {
    /// The key groups the instance owned.
    pub range: KeyGroupRange,
    /// Its full snapshot.
    pub full: &'a mut dyn Read,
    /// The changelogs after it.
    pub changes: Vec<&'a mut dyn Read>,
}

/// The full snapshot (what [`KeyedTable::restore`] reads) of the entries of `to`'s key groups
/// held by the `old` instances of `operator`. Each old instance's state is read in memory in
/// turn and only the part of `to` taken from it; instances that own none of `to` may be left
/// out. An old instance holding an entry of a key group it did not own fails: its state is
/// corrupt, and leaving the entry behind would lose it silently.
pub fn redistribute(
    operator: &str,
    old: Vec<OldInstance<'_>>,
    to: KeyGroupRange,
) -> Result<Vec<u8>, TableError> {
    let mut target = KeyedTable::new(operator, BackendKind::Heap, None);
    let mut moved = Vec::new();
    for mut instance in old {
        let mut table = KeyedTable::new(operator, BackendKind::Heap, None);
        table.restore(instance.full, &mut instance.changes, |_| {
            Ok::<(), TableError>(())
        })?;
        let all = table.all_key_groups();
        for outside in [
            KeyGroupRange::new(all.start, instance.range.start),
            KeyGroupRange::new(instance.range.end, all.end),
        ] {
            if let Some(kg) = table.first_held(outside)? {
                return Err(table.error(TableProblem::HeldOutsideOwnRange {
                    owned: instance.range,
                    kg,
                }));
            }
        }
        let part = intersection(instance.range, to);
        if part.is_empty() {
            continue;
        }
        moved.clear();
        let _stats = table.export(part, &mut moved)?;
        let _entries = target.import(part, &mut moved.as_slice())?;
    }
    let mut out = Vec::new();
    let _stats = target.snapshot(SnapshotKind::Full, &mut out)?;
    Ok(out)
}

/// The key groups both `a` and `b` hold (empty when they are apart).
pub fn intersection(a: KeyGroupRange, b: KeyGroupRange) -> KeyGroupRange {
    let start = a.start.max(b.start);
    KeyGroupRange::new(start, a.end.min(b.end).max(start))
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::{assign_ranges, DEFAULT_MAX_KEY_GROUPS};
    use std::collections::BTreeMap;
    use std::num::NonZeroU16;

    fn ranges(p: u16) -> Vec<KeyGroupRange> {
        assign_ranges(DEFAULT_MAX_KEY_GROUPS, NonZeroU16::new(p).expect("p > 0")).expect("p <= max")
    }

    /// An old instance's full snapshot and changelog.
    type Streams = (Vec<u8>, Vec<u8>);

    /// (group key, sub-key) → value.
    type Entries = BTreeMap<(Vec<u8>, Vec<u8>), Vec<u8>>;

    /// Every entry of a restored stream.
    fn entries(bytes: &[u8]) -> Entries {
        let mut table = KeyedTable::new("t", BackendKind::Heap, None);
        let mut all = BTreeMap::new();
        table
            .restore(&mut &bytes[..], &mut [], |e| {
                all.insert((e.group_key.to_vec(), e.sub_key.to_vec()), e.value.to_vec());
                Ok::<(), TableError>(())
            })
            .expect("restores");
        all
    }

    /// `keys` keys spread over `p` instances as the exchange routes them, each instance's
    /// state a full snapshot followed by one changelog (which deletes every fifth key and
    /// rewrites every third).
    fn old_states(keys: u32, p: u16) -> (Vec<Streams>, Entries) {
        let mut tables: Vec<KeyedTable> = (0..p)
            .map(|_| KeyedTable::new("t", BackendKind::Heap, None))
            .collect();
        let mut expected = BTreeMap::new();
        let owner = |key: &[u8]| {
            let kg = crate::key_group_for_key(key, DEFAULT_MAX_KEY_GROUPS);
            usize::from(crate::instance_for(
                kg,
                DEFAULT_MAX_KEY_GROUPS,
                NonZeroU16::new(p).expect("p > 0"),
            ))
        };
        for k in 0..keys {
            let key = format!("key-{k}").into_bytes();
            let t = &mut tables[owner(&key)];
            t.put(&key, b"s", format!("v{k}").as_bytes()).expect("puts");
            expected.insert((key, b"s".to_vec()), format!("v{k}").into_bytes());
        }
        let mut fulls = Vec::new();
        for t in &mut tables {
            let mut full = Vec::new();
            let _stats = t
                .snapshot(SnapshotKind::Full, &mut full)
                .expect("snapshots");
            fulls.push(full);
        }
        for k in 0..keys {
            let key = format!("key-{k}").into_bytes();
            let t = &mut tables[owner(&key)];
            if k % 5 == 0 {
                t.delete(&key, b"s").expect("deletes");
                expected.remove(&(key, b"s".to_vec()));
            } else if k % 3 == 0 {
                t.put(&key, b"s", b"again").expect("puts");
                expected.insert((key, b"s".to_vec()), b"again".to_vec());
            }
        }
        let states = tables
            .iter_mut()
            .zip(fulls)
            .map(|(t, full)| {
                let mut changes = Vec::new();
                let _stats = t
                    .snapshot(SnapshotKind::Changes, &mut changes)
                    .expect("snapshots");
                (full, changes)
            })
            .collect();
        (states, expected)
    }

    fn recut(states: &[Streams], from: u16, to: u16) -> Vec<Vec<u8>> {
        let old_ranges = ranges(from);
        ranges(to)
            .into_iter()
            .map(|range| {
                let mut streams: Vec<(&[u8], &[u8])> =
                    states.iter().map(|(f, c)| (&f[..], &c[..])).collect();
                let old = streams
                    .iter_mut()
                    .zip(&old_ranges)
                    .map(|((full, changes), r)| OldInstance {
                        range: *r,
                        full: full as &mut dyn Read,
                        changes: vec![changes as &mut dyn Read],
                    })
                    .collect();
                redistribute("t", old, range).expect("redistributes")
            })
            .collect()
    }

    #[test]
    fn every_entry_lands_in_exactly_one_new_instance_the_exchange_routes_its_key_to() {
        for (from, to) in [(1, 4), (2, 4), (4, 2), (3, 5), (5, 1), (2, 2)] {
            let (states, expected) = old_states(500, from);
            let mut got = BTreeMap::new();
            for (i, bytes) in recut(&states, from, to).iter().enumerate() {
                for ((key, sub), value) in entries(bytes) {
                    let kg = crate::key_group_for_key(&key, DEFAULT_MAX_KEY_GROUPS);
                    let owner = crate::instance_for(
                        kg,
                        DEFAULT_MAX_KEY_GROUPS,
                        NonZeroU16::new(to).expect("to > 0"),
                    );
                    assert_eq!(
                        usize::from(owner),
                        i,
                        "{from} -> {to}: a key in the wrong instance"
                    );
                    assert!(
                        got.insert((key, sub), value).is_none(),
                        "{from} -> {to}: an entry twice"
                    );
                }
            }
            assert_eq!(got.len(), expected.len(), "{from} -> {to}");
            assert!(got == expected, "{from} -> {to}: the entries differ");
        }
    }

    #[test]
    fn an_old_instance_holding_a_key_group_it_did_not_own_is_refused_not_dropped() {
        let (states, _) = old_states(200, 2);
        // Instance 0's state claimed to be instance 1's range.
        let wrong = ranges(2)[1];
        let (mut full, mut changes) = (&states[0].0[..], &states[0].1[..]);
        let old = vec![OldInstance {
            range: wrong,
            full: &mut full,
            changes: vec![&mut changes],
        }];
        let e = redistribute("t", old, ranges(4)[3]).expect_err("refused");
        assert!(e.is_corrupt_state(), "{e}");
        assert!(e.to_string().contains("did not own"), "{e}");
    }

    #[test]
    fn the_intersection_of_ranges_apart_is_empty() {
        let (a, b) = (KeyGroupRange::new(0, 10), KeyGroupRange::new(10, 20));
        assert!(intersection(a, b).is_empty());
        assert_eq!(
            intersection(KeyGroupRange::new(0, 15), b),
            KeyGroupRange::new(10, 15)
        );
        assert!(intersection(b, a).is_empty());
    }
}
