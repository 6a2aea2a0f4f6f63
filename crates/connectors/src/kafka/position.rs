//! Which partitions a source instance reads, and where it stands in them as a checkpoint
//! keeps it.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_dealt_to_instances_in_turn() {
        let all: Vec<u32> = (0..5).collect();
        assert_eq!(share(&all, 0, 2), [0, 2, 4]);
        assert_eq!(share(&all, 1, 2), [1, 3]);
        assert_eq!(share(&all, 0, 1), all);
        assert!(share(&all, 3, 8).len() == 1 && share(&all, 6, 8).is_empty());
    }
}
