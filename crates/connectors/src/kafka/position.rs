//! Which partitions a source instance reads, and where it stands in them as a checkpoint
//! keeps it; at a restore at another parallelism, which of the positions every old instance
//! kept each new instance takes. Pure.

use std::collections::BTreeMap;

/// Which of `all` (every partition, in order) instance `instance` of `parallelism` reads.
pub(crate) fn share<T: Clone>(all: &[T], instance: usize, parallelism: usize) -> Vec<T> {
    all.iter()
        .enumerate()
        .filter(|(i, _)| i % parallelism.max(1) == instance)
        .map(|(_, t)| t.clone())
        .collect()
}

/// A partition's place in a checkpoint.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SplitPosition {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset of the first record not emitted (none: nothing was read yet).
    pub next: Option<i64>,
    /// With `bounded`, where it ends.
    pub end: Option<i64>,
}

/// Where a source instance is, as a checkpoint's manifest keeps it.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Position {
    /// Each partition the instance reads.
    pub splits: Vec<SplitPosition>,
}

/// Why the positions of a checkpoint's instances cannot be dealt again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReshareError {
    /// Two old instances kept a position for one partition: each partition is read by one
    /// instance, so the checkpoint is damaged.
    #[error("instances {first} and {second} both kept a position for {topic}/{partition}")]
    Twice {
        /// The partition's topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The first old instance that kept it.
        first: usize,
        /// The second.
        second: usize,
    },
}

/// What instance `instance` of `parallelism` resumes from when a run resumes at another
/// parallelism than its checkpoint's: the positions the old instances kept (`kept`, by old
/// instance) of the partitions that are its share of `all` (every partition now, in topic
/// then partition order, as [`share`] deals them). A kept partition that is no longer among
/// `all` goes to instance 0, whose restore refuses it as it refuses one at the same
/// parallelism.
pub(crate) fn reshare(
    kept: Vec<Position>,
    all: &[(String, i32)],
    instance: usize,
    parallelism: usize,
) -> Result<Position, ReshareError> {
    let mut by_partition: BTreeMap<(String, i32), (usize, SplitPosition)> = BTreeMap::new();
    for (old, position) in kept.into_iter().enumerate() {
        for s in position.splits {
            let key = (s.topic.clone(), s.partition);
            if let Some((first, _)) = by_partition.get(&key) {
                return Err(ReshareError::Twice {
                    topic: s.topic,
                    partition: s.partition,
                    first: *first,
                    second: old,
                });
            }
            by_partition.insert(key, (old, s));
        }
    }
    let mut splits = Vec::new();
    for key in share(all, instance, parallelism) {
        if let Some((_, s)) = by_partition.remove(&key) {
            splits.push(s);
        }
    }
    if instance == 0 {
        // Those no instance reads now: instance 0's restore names them.
        let gone = by_partition
            .into_values()
            .map(|(_, s)| s)
            .filter(|s| !all.iter().any(|(t, p)| *t == s.topic && *p == s.partition));
        splits.extend(gone);
    }
    Ok(Position { splits })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(topic: &str, partition: i32, next: i64) -> SplitPosition {
        SplitPosition {
            topic: topic.to_string(),
            partition,
            next: Some(next),
            end: None,
        }
    }

    fn partitions(p: &Position) -> Vec<(String, i32, Option<i64>)> {
        p.splits
            .iter()
            .map(|s| (s.topic.clone(), s.partition, s.next))
            .collect()
    }

    fn all(spec: &[(&str, i32)]) -> Vec<(String, i32)> {
        spec.iter()
            .flat_map(|(t, n)| (0..*n).map(|p| (t.to_string(), p)))
            .collect()
    }

    /// The positions instances 0..`then` of a run at `then` keep, partition `p` of `all` at
    /// offset 100 + its index.
    fn kept(all: &[(String, i32)], then: usize) -> Vec<Position> {
        (0..then)
            .map(|i| Position {
                splits: all
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| k % then == i)
                    .map(|(k, (t, p))| at(t, *p, 100 + k as i64))
                    .collect(),
            })
            .collect()
    }

    #[test]
    fn every_partition_and_its_offset_goes_to_the_one_instance_that_reads_it_now() {
        let all = all(&[("a", 3), ("b", 2)]);
        for then in 1..=6 {
            for now in 1..=6 {
                let mut seen = Vec::new();
                for i in 0..now {
                    let got = reshare(kept(&all, then), &all, i, now).expect("reshared");
                    let mine: Vec<(String, i32)> = share(&all, i, now);
                    let names: Vec<(String, i32)> = got
                        .splits
                        .iter()
                        .map(|s| (s.topic.clone(), s.partition))
                        .collect();
                    assert_eq!(names, mine, "{then} -> {now}, instance {i}");
                    seen.extend(partitions(&got));
                }
                seen.sort();
                let want: Vec<(String, i32, Option<i64>)> = all
                    .iter()
                    .enumerate()
                    .map(|(k, (t, p))| (t.clone(), *p, Some(100 + k as i64)))
                    .collect();
                assert_eq!(seen, want, "{then} -> {now}: each offset once");
            }
        }
    }

    #[test]
    fn a_partition_no_longer_read_goes_to_instance_zero_and_one_kept_twice_is_refused() {
        let now = all(&[("a", 2)]);
        let then = vec![
            Position {
                splits: vec![at("a", 0, 5), at("gone", 0, 7)],
            },
            Position {
                splits: vec![at("a", 1, 6)],
            },
        ];
        let zero = reshare(
            vec![
                Position {
                    splits: vec![at("a", 0, 5), at("gone", 0, 7)],
                },
                Position {
                    splits: vec![at("a", 1, 6)],
                },
            ],
            &now,
            0,
            3,
        )
        .expect("reshared");
        assert_eq!(
            partitions(&zero),
            [("a".into(), 0, Some(5)), ("gone".into(), 0, Some(7))]
        );
        let two = reshare(then, &now, 2, 3).expect("reshared");
        assert!(two.splits.is_empty(), "more instances than partitions");

        let twice = vec![
            Position {
                splits: vec![at("a", 0, 5)],
            },
            Position {
                splits: vec![at("a", 0, 9)],
            },
        ];
        assert_eq!(
            reshare(twice, &now, 0, 1).expect_err("refused"),
            ReshareError::Twice {
                topic: "a".into(),
                partition: 0,
                first: 0,
                second: 1
            }
        );
    }

    #[test]
    fn partitions_are_dealt_to_instances_in_turn() {
        let all: Vec<u32> = (0..5).collect();
        assert_eq!(share(&all, 0, 2), [0, 2, 4]);
        assert_eq!(share(&all, 1, 2), [1, 3]);
        assert_eq!(share(&all, 0, 1), all);
        assert!(share(&all, 3, 8).len() == 1 && share(&all, 6, 8).is_empty());
    }
}
