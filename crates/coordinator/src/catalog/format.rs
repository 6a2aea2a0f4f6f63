//! The bytes of the catalog's files, and reading them back: pure functions over byte slices,
//! so that every damaged shape (cut, zeroed, flipped) is tested without a disk.
//!
//! Both files open with the same prefix, whatever their version: a magic, the format version
//! and a CRC32 of those 12 bytes, so that a file of another version is told from a damaged
//! one. Numbers are little-endian. An edit-log segment is a header then records:
//!
//! ```text
//! header:  "ANDUINED" · version u32 · CRC32 of those 12 bytes · first txid u64 · CRC32 of the 24 bytes before
//! record:  body length u32 · txid u64 · CRC32 of those 12 bytes · body · CRC32 of the body
//! ```
//!
//! The body is the [`Edit`] as JSON. The record's header has its own checksum, so that a
//! damaged length is caught rather than trusted.
//!
//! A snapshot is `"ANDUINCS" · version u32 · CRC32 of those 12 bytes · txid u64 · body length
//! u64 · body · CRC32 of all bytes before`, its body the [`CatalogState`] as JSON.
//!
//! Reading a segment ([`scan_segment`]) tells damage at the end of the file from damage in the
//! middle. An append writes one record and only the last append can be cut by a crash, so a
//! damaged record with no whole record after it (cut short, zeroed, or with a checksum that
//! fails) is a torn tail, dropped; a damaged record with a whole record after it is an error
//! naming its offset. (A flipped bit in the very last record therefore reads as a torn tail:
//! no file format can tell the two apart.)

use super::edit::Edit;
use super::model::CatalogState;
use crate::ids::Txid;

/// The magic at the head of an edit-log segment.
pub const SEGMENT_MAGIC: &[u8; 8] = b"ANDUINED";
/// The magic at the head of a snapshot.
pub const SNAPSHOT_MAGIC: &[u8; 8] = b"ANDUINCS";
/// The version of both formats this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The bytes of a segment's header.
pub const SEGMENT_HEADER_LEN: usize = 28;
/// The bytes of a record around its body.
pub const RECORD_OVERHEAD: usize = 20;
/// The largest body of one record (a query's source text is the largest thing in an edit).
pub const MAX_RECORD_BODY: u32 = 64 << 20;

const RECORD_HEAD_LEN: usize = 16;
const PREFIX_LEN: usize = 16;

/// The prefix of every catalog file: magic, version, and their checksum.
fn prefix(magic: &[u8; 8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(PREFIX_LEN);
    out.extend_from_slice(magic);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The version a file's prefix says, if the prefix is whole and carries `magic`.
fn prefix_version(bytes: &[u8], magic: &[u8; 8]) -> Option<u32> {
    let head = bytes.get(..12)?;
    (head.get(..8) == Some(magic.as_slice()) && u32_at(bytes, 12) == Some(crc32fast::hash(head)))
        .then(|| u32_at(head, 8))
        .flatten()
}

/// The header of a segment whose first record will be `first`.
pub fn segment_header(first: Txid) -> Vec<u8> {
    let mut out = prefix(SEGMENT_MAGIC);
    out.extend_from_slice(&first.0.to_le_bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The record of `edit` as transaction `txid`.
pub fn encode_record(txid: Txid, edit: &Edit) -> Result<Vec<u8>, serde_json::Error> {
    let body = serde_json::to_vec(edit)?;
    let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(body.len() + RECORD_OVERHEAD);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&txid.0.to_le_bytes());
    let head_crc = crc32fast::hash(&out);
    out.extend_from_slice(&head_crc.to_le_bytes());
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    Ok(out)
}

/// The snapshot of `state`, which holds every edit up to `txid`.
pub fn encode_snapshot(txid: Txid, state: &CatalogState) -> Result<Vec<u8>, serde_json::Error> {
    let body = serde_json::to_vec(state)?;
    let mut out = prefix(SNAPSHOT_MAGIC);
    out.reserve(body.len() + 20);
    out.extend_from_slice(&txid.0.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Why a snapshot cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotDamage {
    /// Not a catalog snapshot, or cut short.
    #[error("not a whole catalog snapshot ({0})")]
    NotASnapshot(&'static str),
    /// Written by another version.
    #[error("written in snapshot format {0}, this anduin reads format {FORMAT_VERSION}")]
    Version(u32),
    /// The checksum does not match.
    #[error("its checksum does not match its contents")]
    Checksum,
    /// Its contents cannot be read.
    #[error("its contents cannot be read: {0}")]
    Contents(String),
}

/// Reads a snapshot: the txid it holds edits up to, and the state.
pub fn decode_snapshot(bytes: &[u8]) -> Result<(Txid, CatalogState), SnapshotDamage> {
    let version = prefix_version(bytes, SNAPSHOT_MAGIC).ok_or(SnapshotDamage::NotASnapshot(
        "no snapshot magic, or its checksum does not match",
    ))?;
    if version != FORMAT_VERSION {
        return Err(SnapshotDamage::Version(version));
    }
    let txid = u64_at(bytes, 16).ok_or(SnapshotDamage::NotASnapshot("too short"))?;
    let len = u64_at(bytes, 24).ok_or(SnapshotDamage::NotASnapshot("too short"))?;
    let end = usize::try_from(len)
        .ok()
        .and_then(|len| len.checked_add(32))
        .ok_or(SnapshotDamage::NotASnapshot("a length beyond the file"))?;
    if bytes.len() != end + 4 {
        return Err(SnapshotDamage::NotASnapshot(
            "its length does not match the file's",
        ));
    }
    let crc = u32_at(bytes, end).ok_or(SnapshotDamage::NotASnapshot("too short"))?;
    let covered = bytes
        .get(..end)
        .ok_or(SnapshotDamage::NotASnapshot("too short"))?;
    if crc32fast::hash(covered) != crc {
        return Err(SnapshotDamage::Checksum);
    }
    let body = bytes
        .get(32..end)
        .ok_or(SnapshotDamage::NotASnapshot("too short"))?;
    let state =
        serde_json::from_slice(body).map_err(|e| SnapshotDamage::Contents(e.to_string()))?;
    Ok((Txid(txid), state))
}

/// One record read from a segment.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Its transaction.
    pub txid: Txid,
    /// Its byte offset in the segment.
    pub offset: u64,
    /// The edit.
    pub edit: Edit,
}

/// What a segment holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Scan {
    /// The txid the segment's header says its first record has (`None` when the header itself
    /// is torn).
    pub first: Option<Txid>,
    /// The whole records, in order.
    pub records: Vec<Record>,
    /// The bytes of the header and the whole records: where the next append goes.
    pub valid_len: u64,
    /// Damage at the end of the file, from a crash in the middle of an append.
    pub torn: Option<Torn>,
}

impl Scan {
    /// The txid the next record of this segment would have.
    pub fn next_txid(&self) -> Option<Txid> {
        match self.records.last() {
            Some(r) => Some(r.txid.next()),
            None => self.first,
        }
    }
}

/// The end of a segment cut by a crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Torn {
    /// Where the damage starts (the first byte dropped).
    pub offset: u64,
    /// How many bytes are dropped.
    pub bytes: u64,
}

/// Damage in the middle of a segment.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{why}")]
pub struct Damage {
    /// Where.
    pub offset: u64,
    /// What.
    pub why: String,
    /// The format version of a segment written by another version of anduin (not damage as
    /// such: the file is whole, this anduin cannot read it).
    pub other_version: Option<u32>,
}

/// Reads a segment's bytes: its records up to the first damage. Damage that reaches the end
/// of the file (nothing but zeros after it) is a torn tail; damage with data after it is an
/// error at its offset.
pub fn scan_segment(bytes: &[u8]) -> Result<Scan, Damage> {
    let damage = |offset: usize, why: String| Damage {
        offset: offset as u64,
        why,
        other_version: None,
    };
    // Cut while its header was written (a new segment is its header alone until its first
    // append): nothing in it was ever acknowledged.
    let torn_header = bytes.len() <= SEGMENT_HEADER_LEN && !record_after(bytes, 0, Txid(0));
    let version = prefix_version(bytes, SEGMENT_MAGIC);
    if let Some(version) = version.filter(|v| *v != FORMAT_VERSION) {
        return Err(Damage {
            other_version: Some(version),
            ..damage(
                8,
                format!(
                    "written in edit-log format {version}, this anduin reads format {FORMAT_VERSION}"
                ),
            )
        });
    }
    let header = bytes.get(..SEGMENT_HEADER_LEN);
    let header_ok = version.is_some()
        && header.is_some_and(|h| u32_at(h, 24) == Some(crc32fast::hash(&h[..24])));
    if !header_ok {
        if torn_header || all_zero(bytes) {
            return Ok(torn_scan(None, Vec::new(), 0, bytes.len()));
        }
        return Err(damage(
            0,
            "not an edit-log segment header (magic or checksum wrong)".into(),
        ));
    }
    let first = Txid(u64_at(bytes, 16).unwrap_or_default());
    let mut records = Vec::new();
    let mut at = SEGMENT_HEADER_LEN;
    let mut expected = first;
    loop {
        let rest = bytes.get(at..).unwrap_or_default();
        if rest.is_empty() {
            return Ok(Scan {
                first: Some(first),
                records,
                valid_len: at as u64,
                torn: None,
            });
        }
        let torn = |records| Ok(torn_scan(Some(first), records, at, bytes.len()));
        let Some(head) = rest.get(..RECORD_HEAD_LEN) else {
            return torn(records);
        };
        let len = u32_at(head, 0).unwrap_or_default();
        let txid = Txid(u64_at(head, 4).unwrap_or_default());
        if u32_at(head, 12) != Some(crc32fast::hash(&head[..12])) {
            if !record_after(bytes, at + 1, expected) {
                return torn(records);
            }
            return Err(damage(
                at,
                "the record's header checksum does not match".into(),
            ));
        }
        if len > MAX_RECORD_BODY {
            return Err(damage(
                at,
                format!("a record of {len} bytes, more than the {MAX_RECORD_BODY} allowed"),
            ));
        }
        let body_end = at + RECORD_HEAD_LEN + len as usize;
        let (Some(body), Some(crc)) = (
            bytes.get(at + RECORD_HEAD_LEN..body_end),
            u32_at(bytes, body_end),
        ) else {
            return torn(records);
        };
        let end = body_end + 4;
        if crc32fast::hash(body) != crc {
            if !record_after(bytes, at + 1, expected) {
                return torn(records);
            }
            return Err(damage(
                at,
                format!(
                    "the checksum of edit {} does not match its contents",
                    txid.0
                ),
            ));
        }
        if txid != expected {
            return Err(damage(
                at,
                format!("edit {} where edit {} was expected", txid.0, expected.0),
            ));
        }
        let edit: Edit = serde_json::from_slice(body).map_err(|e| {
            damage(
                at,
                format!(
                    "edit {} cannot be read ({e}): was it written by a newer anduin?",
                    txid.0
                ),
            )
        })?;
        records.push(Record {
            txid,
            offset: at as u64,
            edit,
        });
        expected = txid.next();
        at = end;
    }
}

fn torn_scan(first: Option<Txid>, records: Vec<Record>, at: usize, len: usize) -> Scan {
    Scan {
        first,
        records,
        valid_len: at as u64,
        torn: Some(Torn {
            offset: at as u64,
            bytes: (len - at) as u64,
        }),
    }
}

/// Whether a whole record header (its checksum right) of edit `expected` or later starts
/// anywhere from `from` on: then the damage before it is in the middle of the log, not its torn
/// end (an append writes one record, and only the last append can be cut by a crash).
fn record_after(bytes: &[u8], from: usize, expected: Txid) -> bool {
    (from..bytes.len().saturating_sub(RECORD_HEAD_LEN - 1)).any(|p| {
        let Some(head) = bytes.get(p..p + RECORD_HEAD_LEN) else {
            return false;
        };
        u32_at(head, 12) == Some(crc32fast::hash(&head[..12]))
            && u64_at(head, 4).is_some_and(|txid| txid >= expected.0)
            && u32_at(head, 0).is_some_and(|len| len <= MAX_RECORD_BODY)
    })
}

fn all_zero(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| *b == 0)
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
    Some(u32::from_le_bytes(b))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let b: [u8; 8] = bytes.get(at..at + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::WorkerId;

    fn edit(n: u32) -> Edit {
        Edit::WorkerRegistered {
            worker: WorkerId(n),
            address: format!("127.0.0.1:{n}"),
            slots: 4,
        }
    }

    fn segment(n: u64) -> (Vec<u8>, Vec<usize>) {
        let mut bytes = segment_header(Txid(1));
        let mut starts = Vec::new();
        for i in 1..=n {
            starts.push(bytes.len());
            bytes.extend(encode_record(Txid(i), &edit(i as u32)).expect("encodes"));
        }
        (bytes, starts)
    }

    #[test]
    fn a_whole_segment_reads_back_every_record_with_its_offset() {
        let (bytes, starts) = segment(3);
        let scan = scan_segment(&bytes).expect("whole");
        assert_eq!(scan.first, Some(Txid(1)));
        assert_eq!(scan.torn, None);
        assert_eq!(scan.valid_len, bytes.len() as u64);
        assert_eq!(scan.next_txid(), Some(Txid(4)));
        let offsets: Vec<u64> = scan.records.iter().map(|r| r.offset).collect();
        assert_eq!(
            offsets,
            starts.iter().map(|s| *s as u64).collect::<Vec<_>>()
        );
        assert_eq!(scan.records[2].edit, edit(3));
    }

    #[test]
    fn every_cut_of_the_last_record_is_a_torn_tail_keeping_the_others() {
        let (bytes, starts) = segment(3);
        for cut in starts[2] + 1..bytes.len() {
            let scan = scan_segment(&bytes[..cut]).expect("torn, not damaged");
            assert_eq!(scan.records.len(), 2, "cut at {cut}");
            assert_eq!(
                scan.torn,
                Some(Torn {
                    offset: starts[2] as u64,
                    bytes: (cut - starts[2]) as u64
                })
            );
        }
        for cut in 0..SEGMENT_HEADER_LEN {
            let scan = scan_segment(&bytes[..cut]).expect("a torn header");
            assert_eq!(scan.first, None);
            assert!(scan.records.is_empty());
        }
    }

    #[test]
    fn a_zeroed_end_is_a_torn_tail() {
        let (mut bytes, starts) = segment(3);
        for b in &mut bytes[starts[2] + 5..] {
            *b = 0;
        }
        bytes.extend([0u8; 100]);
        let scan = scan_segment(&bytes).expect("torn");
        assert_eq!(scan.records.len(), 2);
        assert_eq!(scan.torn.map(|t| t.offset), Some(starts[2] as u64));
    }

    #[test]
    fn a_damaged_last_record_is_a_torn_tail() {
        let (bytes, starts) = segment(3);
        for at in starts[2]..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x40;
            let scan = scan_segment(&bad).expect("torn");
            assert_eq!(scan.records.len(), 2, "flip at {at}");
            assert_eq!(scan.valid_len, starts[2] as u64);
        }
    }

    #[test]
    fn a_flipped_byte_before_the_last_record_is_damage_at_that_records_offset() {
        let (bytes, starts) = segment(4);
        for at in starts[1]..starts[2] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x40;
            let err = scan_segment(&bad).expect_err("damage in the middle");
            assert_eq!(err.offset, starts[1] as u64, "flip at {at}: {err}");
        }
        let mut bad = bytes.clone();
        bad[3] ^= 1;
        assert_eq!(scan_segment(&bad).expect_err("header").offset, 0);
    }

    #[test]
    fn a_segment_of_another_format_version_says_so() {
        // A version 2 header may look nothing like ours after its prefix.
        let mut bytes = b"ANDUINED".to_vec();
        bytes.extend(2u32.to_le_bytes());
        let crc = crc32fast::hash(&bytes);
        bytes.extend(crc.to_le_bytes());
        bytes.extend([7u8; 40]);
        let err = scan_segment(&bytes).expect_err("version 2");
        assert_eq!(err.other_version, Some(2));
        assert!(err.why.contains("edit-log format 2"), "{err}");
    }

    #[test]
    fn records_out_of_order_are_damage() {
        let mut bytes = segment_header(Txid(5));
        bytes.extend(encode_record(Txid(5), &edit(1)).expect("encodes"));
        let at = bytes.len();
        bytes.extend(encode_record(Txid(7), &edit(2)).expect("encodes"));
        let err = scan_segment(&bytes).expect_err("a gap");
        assert_eq!(err.offset, at as u64);
        assert!(err.why.contains("edit 7 where edit 6"), "{err}");
    }

    #[test]
    fn a_snapshot_reads_back_and_any_flip_or_cut_is_refused() {
        let mut state = CatalogState::default();
        state.apply(&edit(1)).expect("applies");
        let bytes = encode_snapshot(Txid(9), &state).expect("encodes");
        assert_eq!(decode_snapshot(&bytes), Ok((Txid(9), state)));
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            assert!(decode_snapshot(&bad).is_err(), "flip at {at}");
            assert!(decode_snapshot(&bytes[..at]).is_err(), "cut at {at}");
        }
    }
}
