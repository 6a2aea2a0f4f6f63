//! The bytes of one key's entry in the state backend: both sides' buffered rows of the key,
//! each with its event time, whether it found a partner, and its column values as Arrow
//! row-format bytes (a `RowConverter` over the side's columns makes and reads them).
//!
//! Layout, per side (left, then right): the row count, then per row its event time
//! (zigzag), `len << 1 | matched`, and `len` bytes of values. Numbers are LEB128 varints.

/// One stored row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StoredRow<'a> {
    pub time: i64,
    pub matched: bool,
    /// Its column values in the row format of its side's `RowConverter`.
    pub values: &'a [u8],
}

/// Appends one side's rows (call it for the left side, then for the right side).
pub(crate) fn put_side<'a>(out: &mut Vec<u8>, rows: impl ExactSizeIterator<Item = StoredRow<'a>>) {
    put_varint(out, rows.len() as u64);
    for r in rows {
        put_varint(out, zigzag(r.time));
        put_varint(out, ((r.values.len() as u64) << 1) | u64::from(r.matched));
        out.extend_from_slice(r.values);
    }
}

/// Both sides' rows of an entry; `None` if the bytes are not an entry.
pub(crate) fn get_sides(bytes: &[u8]) -> Option<[Vec<StoredRow<'_>>; 2]> {
    let mut r = bytes;
    let left = get_side(&mut r)?;
    let right = get_side(&mut r)?;
    r.is_empty().then_some([left, right])
}

fn get_side<'a>(r: &mut &'a [u8]) -> Option<Vec<StoredRow<'a>>> {
    let n = usize::try_from(get_varint(r)?).ok()?;
    // Every row takes at least two bytes: do not trust a count larger than that allows.
    let mut rows = Vec::with_capacity(n.min(r.len() / 2));
    for _ in 0..n {
        let time = unzigzag(get_varint(r)?);
        let len_matched = get_varint(r)?;
        let len = usize::try_from(len_matched >> 1).ok()?;
        if r.len() < len {
            return None;
        }
        let (values, rest) = r.split_at(len);
        *r = rest;
        rows.push(StoredRow {
            time,
            matched: len_matched & 1 == 1,
            values,
        });
    }
    Some(rows)
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

pub(crate) fn get_varint(r: &mut &[u8]) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = r.split_first()?;
        *r = rest;
        n |= u64::from(b & 0x7f).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_round_trip_through_bytes_and_truncation_is_caught() {
        let left = [
            StoredRow {
                time: 1_700_000_000_123,
                matched: true,
                values: b"\x01abc",
            },
            StoredRow {
                time: i64::MIN,
                matched: false,
                values: b"",
            },
        ];
        let right = [StoredRow {
            time: -5,
            matched: false,
            values: &[0xff; 200],
        }];
        let mut bytes = Vec::new();
        put_side(&mut bytes, left.iter().copied());
        put_side(&mut bytes, right.iter().copied());
        let [l, r] = get_sides(&bytes).expect("decodes");
        assert_eq!(l, left);
        assert_eq!(r, right);
        for cut in 0..bytes.len() {
            assert!(get_sides(&bytes[..cut]).is_none(), "truncated at {cut}");
        }
    }

    #[test]
    fn varints_cover_the_whole_range() {
        for n in [0, 1, 127, 128, 300, u64::MAX / 3, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, n);
            assert_eq!(get_varint(&mut &b[..]), Some(n));
        }
        for t in [0, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(t)), t);
        }
    }
}
