//! Key groups: the unit in which keyed state is partitioned, assigned and moved.
//!
//! A key belongs to key group `hash(key) % max`, where `max` is fixed for the life of a query
//! (DESIGN.md §3). Instance `i` of `p` parallel instances owns the contiguous range
//! `[ceil(i·max/p), ceil((i+1)·max/p))`, so `instance_for` is `kg·p/max` and rescaling moves
//! whole ranges.

use std::fmt;
use std::num::NonZeroU16;

use crate::StateError;

/// The default number of key groups of a query: 720 = 2⁴·3²·5, divisible by every parallelism
/// from 1 to 6 and by 8, 9, 10, 12, 15, 16, 18, 20 ….
pub const DEFAULT_MAX_KEY_GROUPS: NonZeroU16 = match NonZeroU16::new(720) {
    Some(n) => n,
    None => panic!("720 is not zero"),
};

/// A key group: `key_hash(key) % max_key_groups`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyGroup(pub u16);

impl fmt::Display for KeyGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key group {}", self.0)
    }
}

/// The half-open range of key groups `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyGroupRange {
    /// The first key group of the range.
    pub start: u16,
    /// One past the last key group of the range.
    pub end: u16,
}

impl KeyGroupRange {
    /// The range `[start, end)`.
    pub fn new(start: u16, end: u16) -> Self {
        KeyGroupRange { start, end }
    }

    /// Whether `kg` lies in the range.
    pub fn contains(&self, kg: KeyGroup) -> bool {
        self.start <= kg.0 && kg.0 < self.end
    }

    /// How many key groups the range holds.
    pub fn len(&self) -> u16 {
        self.end.saturating_sub(self.start)
    }

    /// Whether the range holds no key group.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The key groups of the range, in order.
    pub fn iter(&self) -> impl Iterator<Item = KeyGroup> {
        (self.start..self.end).map(KeyGroup)
    }
}

impl fmt::Display for KeyGroupRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key groups [{}, {})", self.start, self.end)
    }
}

/// The stable 64-bit hash of a key's bytes: XXH3-64 with seed 0. Its output is fixed by the
/// XXH3 specification, so it is the same on every run, machine and build.
pub fn key_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

/// The key group of a hash: `hash % max`.
pub fn key_group_for_hash(hash: u64, max: NonZeroU16) -> KeyGroup {
    let kg = hash % u64::from(max.get());
    KeyGroup(u16::try_from(kg).expect("a remainder modulo a u16 fits in a u16"))
}

/// The key group of a key's bytes: `key_group_for_hash(key_hash(key), max)`.
pub fn key_group_for_key(key: &[u8], max: NonZeroU16) -> KeyGroup {
    key_group_for_hash(key_hash(key), max)
}

/// The contiguous key-group ranges of `parallelism` instances, as even as possible (sizes
/// differ by at most one), covering `[0, max)` in instance order.
///
/// Fails when `parallelism > max`: some instance would own no key group.
pub fn assign_ranges(
    max: NonZeroU16,
    parallelism: NonZeroU16,
) -> Result<Vec<KeyGroupRange>, StateError> {
    if parallelism > max {
        return Err(StateError::ParallelismAboveMaxKeyGroups {
            parallelism: parallelism.get(),
            max: max.get(),
        });
    }
    Ok((0..parallelism.get())
        .map(|i| KeyGroupRange {
            start: range_bound(i, max, parallelism),
            end: range_bound(i + 1, max, parallelism),
        })
        .collect())
}

/// `ceil(i · max / parallelism)`: where instance `i`'s range starts.
fn range_bound(i: u16, max: NonZeroU16, parallelism: NonZeroU16) -> u16 {
    let p = u32::from(parallelism.get());
    let bound = (u32::from(i) * u32::from(max.get())).div_ceil(p);
    u16::try_from(bound).expect("i <= parallelism, so the bound is at most max")
}

/// The instance (of `parallelism`) that owns key group `kg`: `kg · parallelism / max`, which
/// agrees with [`assign_ranges`]. A `kg` outside `[0, max)` maps to `parallelism` or beyond
/// (an instance that does not exist).
pub fn instance_for(kg: KeyGroup, max: NonZeroU16, parallelism: NonZeroU16) -> u16 {
    let i = u32::from(kg.0) * u32::from(parallelism.get()) / u32::from(max.get());
    u16::try_from(i).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nz(n: u16) -> NonZeroU16 {
        NonZeroU16::new(n).expect("test values are not zero")
    }

    #[test]
    fn assigned_ranges_cover_all_key_groups_contiguously_and_evenly() {
        for max in [1, 7, 120, 128, DEFAULT_MAX_KEY_GROUPS.get()] {
            for p in 1..=16u16.min(max) {
                let ranges = assign_ranges(nz(max), nz(p)).expect("p <= max");
                assert_eq!(ranges.len(), usize::from(p));
                let mut next = 0;
                for r in &ranges {
                    assert_eq!(r.start, next, "max {max}, p {p}: gap or overlap at {r}");
                    next = r.end;
                }
                assert_eq!(next, max, "max {max}, p {p}: ranges end at {next}");
                let sizes: Vec<u16> = ranges.iter().map(KeyGroupRange::len).collect();
                let (lo, hi) = (sizes.iter().min(), sizes.iter().max());
                assert!(
                    hi.zip(lo).is_some_and(|(h, l)| h - l <= 1),
                    "max {max}, p {p}: uneven sizes {sizes:?}"
                );
            }
        }
    }

    #[test]
    fn instance_for_agrees_with_assigned_ranges() {
        let max = DEFAULT_MAX_KEY_GROUPS;
        for p in 1..=16 {
            let ranges = assign_ranges(max, nz(p)).expect("p <= max");
            for kg in (0..max.get()).map(KeyGroup) {
                let i = instance_for(kg, max, nz(p));
                let owner = ranges.get(usize::from(i)).expect("instance exists");
                assert!(owner.contains(kg), "p {p}: {kg} maps to {i} owning {owner}");
            }
        }
    }

    #[test]
    fn parallelism_above_max_key_groups_is_rejected() {
        let err = assign_ranges(nz(4), nz(5)).expect_err("5 instances cannot share 4 groups");
        assert!(matches!(
            err,
            StateError::ParallelismAboveMaxKeyGroups {
                parallelism: 5,
                max: 4
            }
        ));
    }

    #[test]
    fn key_groups_of_known_keys_never_change() {
        // Golden values: if these change, every existing checkpoint is routed wrongly.
        let golden: [(&[u8], u64, u16); 4] = [
            // The first two agree with the reference xxHash implementation.
            (b"", 0x2d06_8005_38d3_94c2, 658),
            (b"a", 0xe6c6_32b6_1e96_4e1f, 559),
            (b"user-42", 0x50fe_4b21_cf7b_09cd, 461),
            (b"\x00\x01\x02\x03", 0x60da_b036_a582_11f2, 258),
        ];
        for (key, hash, kg) in golden {
            assert_eq!(key_hash(key), hash, "hash of {key:?}");
            assert_eq!(
                key_group_for_key(key, DEFAULT_MAX_KEY_GROUPS),
                KeyGroup(kg),
                "key group of {key:?}"
            );
        }
    }

    #[test]
    fn a_range_contains_its_start_but_not_its_end() {
        let r = KeyGroupRange::new(3, 5);
        assert!(!r.contains(KeyGroup(2)));
        assert!(r.contains(KeyGroup(3)));
        assert!(r.contains(KeyGroup(4)));
        assert!(!r.contains(KeyGroup(5)));
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![KeyGroup(3), KeyGroup(4)]);
        assert!(KeyGroupRange::new(5, 5).is_empty());
    }
}
