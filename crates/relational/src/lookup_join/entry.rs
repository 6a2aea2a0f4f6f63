//! The bytes of one key's entry in the state backend: the key's side rows, and its stream
//! rows still waiting for the side table to end, each with its place in arrival order.
//!
//! Layout: the number of side rows, then per row its length and its bytes; the number of
//! waiting rows, then per row its place, its length and its bytes (Arrow row-format bytes of
//! its input). Numbers are LEB128 varints.

use crate::join::codec::{get_varint, put_varint};

/// One key's rows.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct KeyRows {
    /// The side table's rows of the key.
    pub side: Vec<Box<[u8]>>,
    /// Stream rows waiting for the side table to end: (place in arrival order, row).
    pub waiting: Vec<(u64, Box<[u8]>)>,
}

impl KeyRows {
    pub(crate) fn is_empty(&self) -> bool {
        self.side.is_empty() && self.waiting.is_empty()
    }
}

/// The entry of a key holding `rows`.
pub(crate) fn encode(rows: &KeyRows) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, rows.side.len() as u64);
    for r in &rows.side {
        put_varint(&mut out, r.len() as u64);
        out.extend_from_slice(r);
    }
    put_varint(&mut out, rows.waiting.len() as u64);
    for (place, r) in &rows.waiting {
        put_varint(&mut out, *place);
        put_varint(&mut out, r.len() as u64);
        out.extend_from_slice(r);
    }
    out
}

/// A key's rows; `None` if the bytes are not an entry.
pub(crate) fn decode(bytes: &[u8]) -> Option<KeyRows> {
    let mut r = bytes;
    let mut rows = KeyRows::default();
    let n = get_varint(&mut r)?;
    for _ in 0..n {
        rows.side.push(bytes_of(&mut r)?);
    }
    let n = get_varint(&mut r)?;
    for _ in 0..n {
        let place = get_varint(&mut r)?;
        rows.waiting.push((place, bytes_of(&mut r)?));
    }
    r.is_empty().then_some(rows)
}

fn bytes_of(r: &mut &[u8]) -> Option<Box<[u8]>> {
    let len = usize::try_from(get_varint(r)?).ok()?;
    let (head, tail) = (r.len() >= len).then(|| r.split_at(len))?;
    *r = tail;
    Some(head.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_decodes_to_what_was_encoded() {
        let rows = KeyRows {
            side: vec![b"ab".to_vec().into(), b"".to_vec().into()],
            waiting: vec![(7, b"xyz".to_vec().into())],
        };
        assert_eq!(decode(&encode(&rows)), Some(rows));
        assert_eq!(decode(&[1, 5, 0]), None);
    }
}
