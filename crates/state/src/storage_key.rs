//! The one place that lays out a stored key: the key group as 2 big-endian bytes, then the
//! key. Byte order of stored keys is therefore `(kg, key)` order, and a key group, or a range
//! of them, is a contiguous range of stored keys.

use crate::KeyGroup;

/// `kg` (big-endian) followed by `key`.
pub(crate) fn encode(kg: KeyGroup, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + key.len());
    out.extend_from_slice(&kg.0.to_be_bytes());
    out.extend_from_slice(key);
    out
}

/// The first stored key of key group `kg` (and, exclusive, the end of key group `kg - 1`).
pub(crate) fn group_start(kg: u16) -> [u8; 2] {
    kg.to_be_bytes()
}

/// Splits a stored key into its key group and key; `None` for a key shorter than the prefix
/// (which this crate never writes).
pub(crate) fn decode(stored: &[u8]) -> Option<(KeyGroup, &[u8])> {
    let (kg, key) = stored.split_first_chunk::<2>()?;
    Some((KeyGroup(u16::from_be_bytes(*kg)), key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_keys_sort_by_key_group_then_key() {
        let mut keys = [
            encode(KeyGroup(256), b""),
            encode(KeyGroup(1), b"\xff\xff"),
            encode(KeyGroup(1), b""),
            encode(KeyGroup(2), b"a"),
        ];
        keys.sort();
        let decoded: Vec<_> = keys.iter().filter_map(|k| decode(k)).collect();
        assert_eq!(
            decoded,
            vec![
                (KeyGroup(1), &b""[..]),
                (KeyGroup(1), &b"\xff\xff"[..]),
                (KeyGroup(2), &b"a"[..]),
                (KeyGroup(256), &b""[..]),
            ]
        );
    }

    #[test]
    fn a_stored_key_shorter_than_the_prefix_does_not_decode() {
        assert_eq!(decode(b"x"), None);
    }
}
