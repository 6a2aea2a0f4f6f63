//! The bytes of one key's entry in the state backend: both sides' held rows of the key.
//!
//! Layout, per side (left, then right): the number of distinct rows, then per row its copies,
//! its degree, its values' length and its values (Arrow row-format bytes of its side). Numbers
//! are LEB128 varints.

use super::changes::Held;
use crate::join::codec::{get_varint, put_varint};

/// The entry of a key holding `sides`.
pub(crate) fn encode(sides: &[Vec<Held>; 2]) -> Vec<u8> {
    let mut out = Vec::new();
    for side in sides {
        put_varint(&mut out, side.len() as u64);
        for h in side {
            put_varint(&mut out, h.count);
            put_varint(&mut out, h.degree);
            put_varint(&mut out, h.values.len() as u64);
            out.extend_from_slice(&h.values);
        }
    }
    out
}

/// Both sides' rows of an entry; `None` if the bytes are not one.
pub(crate) fn decode(bytes: &[u8]) -> Option<[Vec<Held>; 2]> {
    let mut r = bytes;
    let left = side(&mut r)?;
    let right = side(&mut r)?;
    r.is_empty().then_some([left, right])
}

fn side(r: &mut &[u8]) -> Option<Vec<Held>> {
    let n = usize::try_from(get_varint(r)?).ok()?;
    // Every row takes at least three bytes: do not trust a count larger than that allows.
    let mut rows = Vec::with_capacity(n.min(r.len() / 3));
    for _ in 0..n {
        let count = get_varint(r)?;
        let degree = get_varint(r)?;
        let len = usize::try_from(get_varint(r)?).ok()?;
        if count == 0 || r.len() < len {
            return None;
        }
        let (values, rest) = r.split_at(len);
        *r = rest;
        rows.push(Held {
            values: values.into(),
            count,
            degree,
        });
    }
    Some(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_round_trip_and_a_truncated_entry_is_caught() {
        let sides = [
            vec![
                Held {
                    values: b"\x01abc".as_slice().into(),
                    count: 2,
                    degree: 0,
                },
                Held {
                    values: [0xff; 200].as_slice().into(),
                    count: 1,
                    degree: 300,
                },
            ],
            vec![],
        ];
        let bytes = encode(&sides);
        assert_eq!(decode(&bytes), Some(sides));
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_none(), "truncated at {cut}");
        }
    }
}
