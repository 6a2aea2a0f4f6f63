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

use crate::MAX_KEY_LEN;

/// Bytes before the group key.
const PREFIX: usize = 2;

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

/// The entry key of `sub_key` under `group_key`; fails when it would exceed [`MAX_KEY_LEN`].
pub(crate) fn encode(group_key: &[u8], sub_key: &[u8]) -> Result<Vec<u8>, TooLong> {
    let too_long = TooLong {
        group_key: group_key.len(),
        sub_key: sub_key.len(),
    };
    let total = PREFIX + group_key.len() + sub_key.len();
    if total > MAX_KEY_LEN {
        return Err(too_long);
    }
    let group_len = u16::try_from(group_key.len()).map_err(|_| too_long)?;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&group_len.to_be_bytes());
    out.extend_from_slice(group_key);
    out.extend_from_slice(sub_key);
    Ok(out)
}

/// The group key and sub-key of a stored entry key.
pub(crate) fn split(stored: &[u8]) -> Result<(&[u8], &[u8]), Unsplittable> {
    let (len, rest) = stored
        .split_first_chunk::<PREFIX>()
        .ok_or(Unsplittable::NoPrefix { len: stored.len() })?;
    let group_len = usize::from(u16::from_be_bytes(*len));
    rest.split_at_checked(group_len)
        .ok_or(Unsplittable::PastEnd {
            group_len,
            rest: rest.len(),
        })
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
            assert_eq!(split(&key), Ok((group, sub)), "{group:?} / {sub:?}");
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
                (&b"a"[..], &b"\x00"[..]),
                (&b"a"[..], &b"\xff"[..]),
                (&b"b"[..], &b"\x01"[..]),
                (&b"b"[..], &b"\x02"[..]),
                (&b"ab"[..], &b""[..]),
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
    fn an_entry_key_beyond_the_key_limit_is_refused() {
        let group = vec![0u8; MAX_KEY_LEN - 2];
        assert!(encode(&group, b"").is_ok());
        assert_eq!(
            encode(&group, b"s"),
            Err(TooLong {
                group_key: MAX_KEY_LEN - 2,
                sub_key: 1
            })
        );
    }
}
