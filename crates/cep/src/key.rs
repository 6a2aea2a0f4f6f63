//! A partition key: the bytes the exchange routes a row by (the row format of the
//! `partition_by` columns), held inline when short.
//!
//! Every row waiting for the watermark carries its partition's key, and every partition in
//! memory is found by it: a Nexmark run has ≈ 3.7 M rows waiting and millions of
//! (auction, bidder) partitions of a row or two. As a `Box<[u8]>` the key was an allocation
//! per row and another per partition (18 bytes of two `BIGINT`s in a 32-byte block, each
//! zeroed fresh by the kernel); inline it is part of the row's or the partition's entry.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// How many bytes a key holds inline (two `BIGINT`s take 18, three 27).
const INLINE: usize = 22;

/// A partition key (see the module's documentation); it hashes, compares and borrows as its
/// bytes, so that a table keyed by it is looked up with a `&[u8]`.
#[derive(Clone)]
pub(crate) enum Key {
    /// A key of at most [`INLINE`] bytes: its length and its bytes.
    Inline(u8, [u8; INLINE]),
    /// A longer key.
    Boxed(Box<[u8]>),
}

impl Key {
    /// The key's bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            Key::Inline(len, bytes) => bytes.get(..usize::from(*len)).unwrap_or(bytes),
            Key::Boxed(b) => b,
        }
    }
}

impl From<&[u8]> for Key {
    fn from(bytes: &[u8]) -> Self {
        match u8::try_from(bytes.len()) {
            Ok(len) if bytes.len() <= INLINE => {
                let mut inline = [0; INLINE];
                let (head, _) = inline.split_at_mut(bytes.len());
                head.copy_from_slice(bytes);
                Key::Inline(len, inline)
            }
            _ => Key::Boxed(bytes.into()),
        }
    }
}

impl std::ops::Deref for Key {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Borrow<[u8]> for Key {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// As its bytes: a key and its `&[u8]` hash alike (what [`Borrow`] asks).
impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Key {}

/// By bytes (keys of one time in a queue of deadlines come out in some order).
impl Ord for Key {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key({:02x?})", self.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn a_key_is_as_big_as_three_words_and_holds_two_bigints_inline() {
        assert_eq!(std::mem::size_of::<Key>(), 24);
        assert!(matches!(Key::from(&[7u8; 18][..]), Key::Inline(18, _)));
        assert!(matches!(Key::from(&[7u8; 23][..]), Key::Boxed(_)));
    }

    #[test]
    fn keys_of_every_length_keep_their_bytes_and_are_found_by_them() {
        let mut map: HashMap<Key, usize, ahash::RandomState> = HashMap::default();
        let keys: Vec<Vec<u8>> = (0..40u8).map(|n| (0..n).collect()).collect();
        for (i, k) in keys.iter().enumerate() {
            let key = Key::from(&k[..]);
            assert_eq!(key.as_bytes(), &k[..]);
            assert_eq!(key.clone(), key);
            map.insert(key, i);
        }
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(map.get(&k[..]), Some(&i), "{k:?}");
        }
        assert_ne!(Key::from(&[1u8, 0][..]), Key::from(&[1u8][..]));
    }
}
