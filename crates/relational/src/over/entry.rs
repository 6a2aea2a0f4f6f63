//! The bytes of one partition's entry in the state backend.
//!
//! Over an append-only stream (`encode`): a flags byte (bit 0: the time of the last row
//! emitted follows, 8 bytes little-endian), the number of pending times, per time its 8
//! bytes, its number of rows and per row its values and arguments; the number of frame rows,
//! per row its time and arguments; then the aggregates ([`Group::encode`]) to the end. Over
//! an updating stream (`encode_table`): the rows of the table, each with how many times it is
//! held. Lengths and counts are LEB128 varints, each byte string after its length.

use std::collections::{BTreeMap, VecDeque};

use super::changes::{Kept, Table};
use super::frame::{Held, Partition};
use crate::group::acc::{AggPlan, Group};
use crate::join::codec::{get_varint, put_varint};

const LAST: u8 = 1;

/// The entry of partition `p`.
pub(crate) fn encode(p: &Partition) -> Vec<u8> {
    let mut out = vec![if p.last.is_some() { LAST } else { 0 }];
    if let Some(t) = p.last {
        out.extend_from_slice(&t.to_le_bytes());
    }
    put_varint(&mut out, p.pending.len() as u64);
    for (t, rows) in &p.pending {
        out.extend_from_slice(&t.to_le_bytes());
        put_varint(&mut out, rows.len() as u64);
        for r in rows {
            put_bytes(&mut out, &r.values);
            put_bytes(&mut out, &r.args);
        }
    }
    put_varint(&mut out, p.frame.len() as u64);
    for (t, args) in &p.frame {
        out.extend_from_slice(&t.to_le_bytes());
        put_bytes(&mut out, args);
    }
    out.extend_from_slice(&p.group.encode());
    out
}

/// The partition an entry holds, with aggregates `plans`; `None` if the bytes are not one.
pub(crate) fn decode(bytes: &[u8], plans: &[AggPlan]) -> Option<Partition> {
    let (&flags, mut r) = bytes.split_first()?;
    if flags & !LAST != 0 {
        return None;
    }
    let last = if flags & LAST != 0 {
        Some(get_time(&mut r)?)
    } else {
        None
    };
    let mut pending = BTreeMap::new();
    for _ in 0..get_varint(&mut r)? {
        let t = get_time(&mut r)?;
        let n = usize::try_from(get_varint(&mut r)?).ok()?;
        if n == 0 {
            return None;
        }
        // Every row takes at least two bytes: do not trust a count larger than that allows.
        let mut rows = Vec::with_capacity(n.min(r.len() / 2));
        for _ in 0..n {
            let values = get_bytes(&mut r)?;
            let args = get_bytes(&mut r)?;
            rows.push(Held { values, args });
        }
        pending.insert(t, rows);
    }
    let n = usize::try_from(get_varint(&mut r)?).ok()?;
    let mut frame = VecDeque::with_capacity(n.min(r.len() / 9));
    for _ in 0..n {
        let t = get_time(&mut r)?;
        frame.push_back((t, get_bytes(&mut r)?));
    }
    let group = Group::decode(r, plans)?;
    Some(Partition {
        pending,
        frame,
        group,
        last,
    })
}

/// The entry of a partition of an OVER window over an updating stream: the number of rows,
/// per row its time (8 bytes), values, arguments and how many times it is held.
pub(crate) fn encode_table(t: &Table) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, t.len() as u64);
    for ((time, values), kept) in t {
        out.extend_from_slice(&time.to_le_bytes());
        put_bytes(&mut out, values);
        put_bytes(&mut out, &kept.args);
        put_varint(&mut out, kept.count);
    }
    out
}

/// The rows an entry of [`encode_table`] holds; `None` if the bytes are not one.
pub(crate) fn decode_table(bytes: &[u8]) -> Option<Table> {
    let mut r = bytes;
    let mut t = Table::new();
    for _ in 0..get_varint(&mut r)? {
        let time = get_time(&mut r)?;
        let values = get_bytes(&mut r)?;
        let args = get_bytes(&mut r)?;
        let count = get_varint(&mut r)?;
        if count == 0 || t.insert((time, values), Kept { args, count }).is_some() {
            return None;
        }
    }
    r.is_empty().then_some(t)
}

fn get_time(r: &mut &[u8]) -> Option<i64> {
    let (t, rest) = r.split_first_chunk::<8>()?;
    *r = rest;
    Some(i64::from_le_bytes(*t))
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
    use crate::group::acc::{Acc, Fun};
    use arrow::datatypes::DataType;

    #[test]
    fn a_partition_round_trips_and_a_truncated_entry_is_caught() {
        let plans = [
            AggPlan::new(Fun::Avg { float: false }, &DataType::Int64).expect("plan"),
            AggPlan::new(Fun::Max, &DataType::Int64).expect("plan"),
        ];
        let mut group = Group::new(&plans);
        group.rows = 2;
        group.accs[1] = Acc::Values(crate::group::acc::Ordered::Ints(
            [(7, 2)].into_iter().collect(),
        ));
        let mut p = Partition::new(group);
        p.hold(
            -5,
            Held {
                values: b"row"[..].into(),
                args: [0xff; 200][..].into(),
            },
        );
        p.hold(
            7,
            Held {
                values: b""[..].into(),
                args: b"a"[..].into(),
            },
        );
        p.frame.push_back((3, b"x"[..].into()));
        p.last = Some(3);
        let bytes = encode(&p);
        assert_eq!(decode(&bytes, &plans), Some(p.clone()));
        for cut in 0..bytes.len() {
            assert!(
                decode(&bytes[..cut], &plans).is_none(),
                "truncated at {cut}"
            );
        }
        let empty = Partition::new(Group::new(&plans));
        assert_eq!(decode(&encode(&empty), &plans), Some(empty));
    }

    #[test]
    fn the_rows_of_a_partition_over_an_updating_stream_round_trip() {
        let mut t = Table::new();
        let kept = |args: &[u8], count| Kept {
            args: args.into(),
            count,
        };
        t.insert((-3, b"a"[..].into()), kept(b"A", 2));
        t.insert((7, b""[..].into()), kept(&[0xff; 200], 1));
        let bytes = encode_table(&t);
        assert_eq!(decode_table(&bytes), Some(t));
        for cut in 0..bytes.len() {
            assert!(decode_table(&bytes[..cut]).is_none(), "truncated at {cut}");
        }
        assert_eq!(
            decode_table(&encode_table(&Table::new())),
            Some(Table::new())
        );
    }
}
