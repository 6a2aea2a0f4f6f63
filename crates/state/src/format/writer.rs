//! Writing a snapshot stream.

use std::io::{BufWriter, Write};

use super::{KindByte, SnapshotKind, SnapshotStats, MAGIC, TAG_DELETE, TAG_END, TAG_PUT, VERSION};
use crate::{KeyGroup, StateError, MAX_KEY_LEN, MAX_VALUE_LEN};

const BUFFER: usize = 256 << 10;

/// Writes one stream: the header on creation, then records, then the trailer on
/// [`SnapshotWriter::finish`]. A stream that is not finished has no trailer, and readers reject
/// it as truncated.
///
/// # Examples
///
/// ```
/// use anduin_state::format::{Record, SnapshotReader, SnapshotWriter};
/// use anduin_state::{KeyGroup, SnapshotKind, StreamIndex};
///
/// let mut bytes = Vec::new();
/// let mut w = SnapshotWriter::new(&mut bytes, SnapshotKind::Changes)?;
/// w.put(KeyGroup(3), b"k", b"v")?;
/// w.delete(KeyGroup(4), b"gone")?;
/// let stats = w.finish()?;
/// assert_eq!((stats.entries, stats.bytes), (2, bytes.len() as u64));
///
/// let mut r = SnapshotReader::new(bytes.as_slice(), StreamIndex(1))?;
/// assert!(matches!(r.next_record()?, Some(Record::Put { kg: KeyGroup(3), .. })));
/// assert!(matches!(r.next_record()?, Some(Record::Delete { key: b"gone", .. })));
/// assert!(r.next_record()?.is_none());
/// # Ok::<(), anduin_state::StateError>(())
/// ```
pub struct SnapshotWriter<W: Write> {
    out: BufWriter<W>,
    kind: SnapshotKind,
    crc: crc32fast::Hasher,
    bytes: u64,
    records: u64,
}

impl<W: Write> SnapshotWriter<W> {
    /// Starts a stream of `kind` on `out`, writing its header.
    pub fn new(out: W, kind: SnapshotKind) -> Result<Self, StateError> {
        let mut w = SnapshotWriter {
            out: BufWriter::with_capacity(BUFFER, out),
            kind,
            crc: crc32fast::Hasher::new(),
            bytes: 0,
            records: 0,
        };
        w.emit(&MAGIC)?;
        w.emit(&VERSION.to_be_bytes())?;
        w.emit(&[kind.byte(), 0])?;
        Ok(w)
    }

    /// The kind of stream being written.
    pub fn kind(&self) -> SnapshotKind {
        self.kind
    }

    /// Appends a put record. In a full stream, `(kg, key)` must increase strictly from record
    /// to record; readers reject the stream otherwise.
    pub fn put(&mut self, kg: KeyGroup, key: &[u8], value: &[u8]) -> Result<(), StateError> {
        let key_len = key_len(kg, key)?;
        let value_len = value_len(kg, value)?;
        self.emit(&[TAG_PUT])?;
        self.emit(&kg.0.to_be_bytes())?;
        self.emit(&key_len.to_be_bytes())?;
        self.emit(key)?;
        self.emit(&value_len.to_be_bytes())?;
        self.emit(value)?;
        self.records += 1;
        Ok(())
    }

    /// Appends a delete record (not allowed in a full stream: readers reject it).
    pub fn delete(&mut self, kg: KeyGroup, key: &[u8]) -> Result<(), StateError> {
        let key_len = key_len(kg, key)?;
        self.emit(&[TAG_DELETE])?;
        self.emit(&kg.0.to_be_bytes())?;
        self.emit(&key_len.to_be_bytes())?;
        self.emit(key)?;
        self.records += 1;
        Ok(())
    }

    /// Writes the trailer and flushes. The stream is complete only once this returns `Ok`.
    pub fn finish(mut self) -> Result<SnapshotStats, StateError> {
        self.emit(&[TAG_END])?;
        self.emit(&self.records.to_be_bytes())?;
        let crc = self.crc.clone().finalize();
        self.write_raw(&crc.to_be_bytes())?;
        let kind = self.kind;
        self.out
            .flush()
            .map_err(|source| StateError::Write { kind, source })?;
        Ok(SnapshotStats {
            entries: self.records,
            bytes: self.bytes,
        })
    }

    /// Writes bytes covered by the checksum.
    fn emit(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        self.crc.update(bytes);
        self.write_raw(bytes)
    }

    fn write_raw(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let kind = self.kind;
        self.out
            .write_all(bytes)
            .map_err(|source| StateError::Write { kind, source })?;
        self.bytes += bytes.len() as u64;
        Ok(())
    }
}

fn key_len(kg: KeyGroup, key: &[u8]) -> Result<u32, StateError> {
    if key.len() > MAX_KEY_LEN {
        return Err(StateError::KeyTooLarge { kg, len: key.len() });
    }
    Ok(u32::try_from(key.len()).expect("MAX_KEY_LEN fits in u32"))
}

fn value_len(kg: KeyGroup, value: &[u8]) -> Result<u32, StateError> {
    if value.len() > MAX_VALUE_LEN {
        return Err(StateError::ValueTooLarge {
            kg,
            len: value.len(),
        });
    }
    Ok(u32::try_from(value.len()).expect("MAX_VALUE_LEN fits in u32"))
}

/// Checks `key` and `value` against the limits every backend enforces on `put`.
pub(crate) fn check_entry(kg: KeyGroup, key: &[u8], value: &[u8]) -> Result<(), StateError> {
    key_len(kg, key)?;
    value_len(kg, value)?;
    Ok(())
}

/// Checks `key` against the key limit every backend enforces.
pub(crate) fn check_key(kg: KeyGroup, key: &[u8]) -> Result<(), StateError> {
    key_len(kg, key).map(|_| ())
}
