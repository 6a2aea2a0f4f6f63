//! The bytes of one partition's entry in the state backend.
//!
//! Layout: a flags byte (bit 0: the keep-first row was emitted; bit 1: a pending event time
//! follows, 8 bytes little-endian), the number of sort keys, then per sort key its length and
//! bytes, its number of rows, and per row its length and values. Numbers are LEB128 varints.

use std::collections::BTreeMap;

use super::rank::Partition;
use crate::join::codec::{get_varint, put_varint};

const EMITTED: u8 = 1;
const PENDING: u8 = 2;

/// The entry of partition `p`.
pub(crate) fn encode(p: &Partition) -> Vec<u8> {
    let mut out = Vec::new();
    let flags = if p.emitted { EMITTED } else { 0 } | if p.pending.is_some() { PENDING } else { 0 };
    out.push(flags);
    if let Some(t) = p.pending {
        out.extend_from_slice(&t.to_le_bytes());
    }
    put_varint(&mut out, p.sort_keys() as u64);
    for (sort, rows) in p.lists() {
        put_bytes(&mut out, sort);
        put_varint(&mut out, rows.len() as u64);
        for r in rows {
            put_bytes(&mut out, r);
        }
    }
    out
}

/// The partition an entry holds; `None` if the bytes are not one.
pub(crate) fn decode(bytes: &[u8]) -> Option<Partition> {
    let (&flags, mut r) = bytes.split_first()?;
    if flags & !(EMITTED | PENDING) != 0 {
        return None;
    }
    let pending = if flags & PENDING != 0 {
        let (t, rest) = r.split_first_chunk::<8>()?;
        r = rest;
        Some(i64::from_le_bytes(*t))
    } else {
        None
    };
    let keys = get_varint(&mut r)?;
    let mut rows = BTreeMap::new();
    for _ in 0..keys {
        let sort = get_bytes(&mut r)?;
        let n = usize::try_from(get_varint(&mut r)?).ok()?;
        if n == 0 {
            return None;
        }
        // Every row takes at least one byte: do not trust a count larger than that allows.
        let mut list = Vec::with_capacity(n.min(r.len()));
        for _ in 0..n {
            list.push(get_bytes(&mut r)?);
        }
        rows.insert(sort, list);
    }
    let mut p = Partition::of(rows);
    p.emitted = flags & EMITTED != 0;
    p.pending = pending;
    r.is_empty().then_some(p)
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn get_bytes(r: &mut &[u8]) -> Option<Box<[u8]>> {
    let len = usize::try_from(get_varint(r)?).ok()?;
    if r.len() < len {
        return None;
    }
    let (b, rest) = r.split_at(len);
    *r = rest;
    Some(b.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::top_n::rank::Ties;

    #[test]
    fn a_partition_round_trips_and_a_truncated_entry_is_caught() {
        let mut p = Partition::default();
        p.add(b"\x01k", b"row one", Ties::Earliest);
        p.add(b"\x01k", &[0xff; 200], Ties::Earliest);
        p.add(b"\x02", b"", Ties::Earliest);
        p.pending = Some(-5);
        let bytes = encode(&p);
        assert_eq!(decode(&bytes), Some(p.clone()));
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_none(), "truncated at {cut}");
        }
        let marked = Partition::emitted();
        assert_eq!(decode(&encode(&marked)), Some(marked));
    }
}
