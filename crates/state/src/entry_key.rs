//! The one place that lays out the key of a [`crate::KeyedTable`] entry in its backend: the
//! group key's length as 2 big-endian bytes, the group key, then the sub-key.
//!
//! ```text
//! entry key = group_len u16 (big-endian) · group key · sub-key
//! ```
//!
//! The length makes the split unambiguous whatever bytes either part holds, and keeps the
//! entries of one group key contiguous and in sub-key order within their key group. A stored
//! key that does not split (shorter than 2 bytes, or a length beyond its end) is corrupt.
//!
//! A group key too long for that (the entry key would pass [`MAX_KEY_LEN`], 64 KiB) is stored
//! in the long form: the length `0xFFFF` (no short group key has it), the group key's 128-bit
//! XXH3 hash, then the sub-key; the group key itself leads the entry's value
//! ([`wrap`]), so that reading the entry gives it back whole and two keys with one hash are
//! told apart (an error, never one key's state taken for the other's).
//!
//! ```text
//! long entry key = 0xFFFF · xxh3_128(group key) (16 bytes, big-endian) · sub-key
//! long value     = group_len u32 (little-endian) · group key · value
//! ```

use crate::MAX_KEY_LEN;

/// Bytes before the group key.
const PREFIX: usize = 2;

/// The length prefix of the long form.
const LONG: u16 = u16::MAX;

/// The bytes of the long form's hash.
const HASH: usize = 16;

/// A stored entry key, split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Split<'a> {
    /// The group key and the sub-key.
    Short(&'a [u8], &'a [u8]),
    /// A long group key's entry: the group key is in the value ([`unwrap`]); the sub-key.
    Long(&'a [u8]),
}

/// Why a group key and sub-key cannot form an entry key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooLong {
    pub group_key: usize,
    pub sub_key: usize,
}

/// Why a stored key is not an entry key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unsplittable {
    /// Fewer bytes than the length prefix.
    NoPrefix { len: usize },
    /// The prefix gives a group key longer than the bytes after it.
    PastEnd { group_len: usize, rest: usize },
}

impl std::fmt::Display for Unsplittable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsplittable::NoPrefix { len } => {
                write!(f, "a key of {len} bytes has no group key length")
            }
            Unsplittable::PastEnd { group_len, rest } => write!(
                f,
                "a group key of {group_len} bytes is announced but {rest} bytes follow"
            ),
        }
    }
}

/// Whether the entry of `sub_key` under `group_key` takes the long form.
pub(crate) fn is_long(group_key: &[u8], sub_key: &[u8]) -> bool {
    PREFIX + group_key.len() + sub_key.len() > MAX_KEY_LEN
}

/// The entry key of `sub_key` under `group_key`, in the long form when the short one would
/// exceed [`MAX_KEY_LEN`]; fails when even the long one would (a sub-key near the limit).
pub(crate) fn encode(group_key: &[u8], sub_key: &[u8]) -> Result<Vec<u8>, TooLong> {
    let too_long = TooLong {
        group_key: group_key.len(),
        sub_key: sub_key.len(),
    };
    if is_long(group_key, sub_key) {
        if PREFIX + HASH + sub_key.len() > MAX_KEY_LEN {
            return Err(too_long);
        }
        let mut out = Vec::with_capacity(PREFIX + HASH + sub_key.len());
        out.extend_from_slice(&LONG.to_be_bytes());
        out.extend_from_slice(&xxhash_rust::xxh3::xxh3_128(group_key).to_be_bytes());
        out.extend_from_slice(sub_key);
        return Ok(out);
    }
    // Short: at most MAX_KEY_LEN - 2 bytes, below the long form's marker.
    let group_len = u16::try_from(group_key.len()).map_err(|_| too_long)?;
    let mut out = Vec::with_capacity(PREFIX + group_key.len() + sub_key.len());
    out.extend_from_slice(&group_len.to_be_bytes());
    out.extend_from_slice(group_key);
    out.extend_from_slice(sub_key);
    Ok(out)
}

/// A stored entry key split: its group key and sub-key, or (long form) its sub-key.
pub(crate) fn split(stored: &[u8]) -> Result<Split<'_>, Unsplittable> {
    let (len, rest) = stored
        .split_first_chunk::<PREFIX>()
        .ok_or(Unsplittable::NoPrefix { len: stored.len() })?;
    let group_len = u16::from_be_bytes(*len);
    if group_len == LONG {
        return rest
            .get(HASH..)
            .map(Split::Long)
            .ok_or(Unsplittable::PastEnd {
                group_len: HASH,
                rest: rest.len(),
            });
    }
    let group_len = usize::from(group_len);
    rest.split_at_checked(group_len)
        .map(|(g, s)| Split::Short(g, s))
        .ok_or(Unsplittable::PastEnd {
            group_len,
            rest: rest.len(),
        })
}

/// The value stored for `value` under the long group key `group_key`.
pub(crate) fn wrap(group_key: &[u8], value: &[u8]) -> Vec<u8> {
    let len = u32::try_from(group_key.len()).expect("a group key is shorter than 4 GiB");
    let mut out = Vec::with_capacity(4 + group_key.len() + value.len());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(group_key);
    out.extend_from_slice(value);
    out
}

/// The group key and the value of a long group key's stored value; `None` if cut short.
pub(crate) fn unwrap(stored: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = stored.split_first_chunk::<4>()?;
    let len = usize::try_from(u32::from_le_bytes(*len)).ok()?;
    rest.split_at_checked(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_keys_split_back_into_their_group_key_and_sub_key() {
        let cases: [(&[u8], &[u8]); 5] = [
            (b"", b""),
            (b"", b"p"),
            (b"alice", b""),
            (b"al", b"ice"),
            (b"\x00\x05", b"\xff\x00"),
        ];
        for (group, sub) in cases {
            let key = encode(group, sub).expect("short");
            assert_eq!(
                split(&key),
                Ok(Split::Short(group, sub)),
                "{group:?} / {sub:?}"
            );
        }
        // The same bytes cut differently are different entries.
        assert_ne!(
            encode(b"al", b"ice").expect("short"),
            encode(b"alice", b"").expect("short")
        );
    }

    #[test]
    fn entries_of_one_group_key_sort_together_by_sub_key() {
        let mut keys = [
            encode(b"b", b"\x02").expect("short"),
            encode(b"a", b"\xff").expect("short"),
            encode(b"b", b"\x01").expect("short"),
            encode(b"ab", b"").expect("short"),
            encode(b"a", b"\x00").expect("short"),
        ];
        keys.sort();
        let split: Vec<_> = keys.iter().filter_map(|k| split(k).ok()).collect();
        assert_eq!(
            split,
            vec![
                Split::Short(&b"a"[..], &b"\x00"[..]),
                Split::Short(&b"a"[..], &b"\xff"[..]),
                Split::Short(&b"b"[..], &b"\x01"[..]),
                Split::Short(&b"b"[..], &b"\x02"[..]),
                Split::Short(&b"ab"[..], &b""[..]),
            ]
        );
    }

    #[test]
    fn a_stored_key_that_does_not_split_is_reported_with_why() {
        assert_eq!(split(b"x"), Err(Unsplittable::NoPrefix { len: 1 }));
        assert_eq!(
            split(b"\x00\x09abc"),
            Err(Unsplittable::PastEnd {
                group_len: 9,
                rest: 3
            })
        );
    }

    #[test]
    fn a_group_key_beyond_the_key_limit_takes_the_long_form_and_its_value_carries_it() {
        let group = vec![7u8; MAX_KEY_LEN - 2];
        let short = encode(&group, b"").expect("fits");
        assert_eq!(split(&short), Ok(Split::Short(&group[..], &b""[..])));
        for len in [MAX_KEY_LEN - 2, MAX_KEY_LEN, 1 << 20] {
            let group = vec![7u8; len];
            let long = encode(&group, b"sub").expect("the long form");
            assert!(long.len() < 32, "{len}");
            assert_eq!(split(&long), Ok(Split::Long(&b"sub"[..])), "{len}");
            let value = wrap(&group, b"v");
            assert_eq!(unwrap(&value), Some((&group[..], &b"v"[..])));
            let cut = value.get(..value.len() - 2).expect("longer than 2");
            assert_eq!(unwrap(cut), None);
        }
        // Two long keys differ by their hash.
        assert_ne!(
            encode(&vec![1u8; 70_000], b"").expect("long"),
            encode(&vec![2u8; 70_000], b"").expect("long")
        );
        // A sub-key near the limit has no room even then.
        let sub = vec![0u8; MAX_KEY_LEN];
        assert_eq!(
            encode(b"k", &sub),
            Err(TooLong {
                group_key: 1,
                sub_key: MAX_KEY_LEN
            })
        );
        assert_eq!(
            split(&[0xff, 0xff, 1, 2]),
            Err(Unsplittable::PastEnd {
                group_len: 16,
                rest: 2
            })
        );
    }
}
