//! How parallel instances of one `nexmark` source share the event sequence: instance `i` of
//! `N` generates the events whose number `n` (the 0-based position in the sequence, before
//! the `first_event_id` offset) has `n % N == i`.
//!
//! The split interleaves rather than cutting the sequence into `N` contiguous ranges (as
//! nexmark-flink's `GeneratorConfig.split` does): event time follows the event number, so
//! interleaved instances advance through event time together and the minimum of their
//! watermarks, which is what operators downstream see, trails the newest event by about `N`
//! events instead of by a whole range. With `events = E`, the instances together generate
//! exactly the `E` events of one instance, each once.
//!
//! ```
//! use anduin_connectors::nexmark::split::Split;
//!
//! let second_of_three = Split::new(1, 3);
//! let mut n = second_of_three.first();
//! let mut mine = vec![];
//! while n < 10 {
//!     mine.push(n);
//!     n = second_of_three.after(n);
//! }
//! assert_eq!(mine, [1, 4, 7]);
//! ```

/// One instance's share of the event numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    /// This instance, from 0.
    pub instance: u64,
    /// How many instances share the sequence (at least 1).
    pub instances: u64,
}

impl Split {
    /// The share of instance `instance` of `instances` (an `instances` of 0 counts as 1).
    pub fn new(instance: usize, instances: usize) -> Self {
        Self {
            instance: instance as u64,
            instances: instances.max(1) as u64,
        }
    }

    /// The whole sequence: one instance.
    pub fn whole() -> Self {
        Self::new(0, 1)
    }

    /// The first event number of this share.
    pub fn first(&self) -> u64 {
        self.instance
    }

    /// The event number of this share that follows `n` (a number of this share).
    pub fn after(&self, n: u64) -> u64 {
        n.saturating_add(self.instances)
    }

    /// Whether event number `n` belongs to this share.
    pub fn owns(&self, n: u64) -> bool {
        n % self.instances == self.instance
    }

    /// How many of the event numbers `0..end` belong to this share.
    pub fn count_below(&self, end: u64) -> u64 {
        if end <= self.instance {
            0
        } else {
            (end - self.instance).div_ceil(self.instances)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers below `end` that `split` walks, from its first.
    fn walk(split: Split, end: u64) -> Vec<u64> {
        let mut out = vec![];
        let mut n = split.first();
        while n < end {
            out.push(n);
            n = split.after(n);
        }
        out
    }

    #[test]
    fn one_instance_walks_every_number() {
        assert_eq!(walk(Split::whole(), 7), (0..7).collect::<Vec<_>>());
    }

    #[test]
    fn the_instances_interleave_and_together_walk_every_number_once() {
        for instances in 1..=7 {
            for end in [0, 1, 5, 49, 50, 51, 1000] {
                let mut all: Vec<u64> = (0..instances)
                    .flat_map(|i| walk(Split::new(i, instances), end))
                    .collect();
                all.sort_unstable();
                assert_eq!(
                    all,
                    (0..end).collect::<Vec<_>>(),
                    "{instances} instances, {end} events"
                );
            }
        }
        assert_eq!(walk(Split::new(2, 3), 12), [2, 5, 8, 11]);
    }

    #[test]
    fn an_instance_owns_what_it_walks_and_counts_it() {
        for instances in 1..=5usize {
            for instance in 0..instances {
                let s = Split::new(instance, instances);
                for end in 0..40 {
                    let walked = walk(s, end);
                    assert!(walked.iter().all(|n| s.owns(*n)));
                    assert_eq!(walked.len() as u64, s.count_below(end));
                    assert_eq!(
                        (0..end).filter(|n| s.owns(*n)).count() as u64,
                        s.count_below(end)
                    );
                }
            }
        }
    }
}
