//! Reading and verifying a snapshot stream.

use std::io::{BufReader, ErrorKind, Read};

use super::{KindByte, SnapshotKind, MAGIC, TAG_DELETE, TAG_END, TAG_PUT, VERSION};
use crate::{KeyGroup, StateError, StreamIndex, StreamProblem, MAX_KEY_LEN, MAX_VALUE_LEN};

const BUFFER: usize = 256 << 10;
/// Values grow their buffer by at most this much per read, so a corrupt length allocates
/// no more than the bytes that actually arrive (plus one step).
const GROWTH_STEP: usize = 1 << 20;

/// One record of a stream, borrowed from the reader until the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Record<'a> {
    /// Set `key` of `kg` to `value`.
    Put {
        /// The key group.
        kg: KeyGroup,
        /// The key.
        key: &'a [u8],
        /// The value.
        value: &'a [u8],
    },
    /// Remove `key` of `kg` (if present).
    Delete {
        /// The key group.
        kg: KeyGroup,
        /// The key.
        key: &'a [u8],
    },
}

/// Reads one stream record by record, checking every rule of the format; the checksum and count
/// are verified when the trailer is reached, so a consumer must treat what it applied as
/// provisional until [`SnapshotReader::next_record`] has returned `Ok(None)`.
pub struct SnapshotReader<R: Read> {
    input: BufReader<R>,
    stream: StreamIndex,
    kind: SnapshotKind,
    crc: crc32fast::Hasher,
    offset: u64,
    records: u64,
    kg: u16,
    key: Vec<u8>,
    /// The previous record's key in a full stream (for the order check), else scratch.
    prev_key: Vec<u8>,
    value: Vec<u8>,
    finished: bool,
}

impl<R: Read> SnapshotReader<R> {
    /// Reads and checks the header of `input`. `stream` names the stream in errors.
    pub fn new(input: R, stream: StreamIndex) -> Result<Self, StateError> {
        let mut r = SnapshotReader {
            input: BufReader::with_capacity(BUFFER, input),
            stream,
            kind: SnapshotKind::Full,
            crc: crc32fast::Hasher::new(),
            offset: 0,
            records: 0,
            kg: 0,
            key: Vec::new(),
            prev_key: Vec::new(),
            value: Vec::new(),
            finished: false,
        };
        let mut magic = [0u8; MAGIC.len()];
        r.read_hashed(&mut magic)?;
        if magic != MAGIC {
            return Err(r.problem(StreamProblem::BadMagic { found: magic }));
        }
        let mut version = [0u8; 2];
        r.read_hashed(&mut version)?;
        let version = u16::from_be_bytes(version);
        if version != VERSION {
            return Err(r.problem(StreamProblem::UnsupportedVersion { found: version }));
        }
        let mut kind_and_flags = [0u8; 2];
        r.read_hashed(&mut kind_and_flags)?;
        let [kind, flags] = kind_and_flags;
        r.kind = SnapshotKind::from_byte(kind)
            .ok_or_else(|| r.problem(StreamProblem::UnknownKind { found: kind }))?;
        if flags != 0 {
            return Err(r.malformed(11, format!("header flags {flags:#04x}, expected 0")));
        }
        Ok(r)
    }

    /// The kind in the stream's header.
    pub fn kind(&self) -> SnapshotKind {
        self.kind
    }

    /// Fails with [`StreamProblem::WrongKind`] unless the stream is of kind `expected`.
    pub fn expect_kind(&self, expected: SnapshotKind) -> Result<(), StateError> {
        if self.kind == expected {
            return Ok(());
        }
        Err(self.problem(StreamProblem::WrongKind {
            expected,
            found: self.kind,
        }))
    }

    /// Records read so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Bytes read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next record, or `None` once the trailer has been read and verified (checksum,
    /// count, nothing after it).
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>, StateError> {
        if self.finished {
            return Ok(None);
        }
        let start = self.offset;
        let mut tag = [0u8; 1];
        self.read_hashed(&mut tag)?;
        match tag {
            [TAG_PUT] => {
                self.read_kg_and_key(start)?;
                let len = self.read_len(start, MAX_VALUE_LEN, "value")?;
                self.read_value(len)?;
                self.records += 1;
                Ok(Some(Record::Put {
                    kg: KeyGroup(self.kg),
                    key: &self.key,
                    value: &self.value,
                }))
            }
            [TAG_DELETE] => {
                if self.kind == SnapshotKind::Full {
                    return Err(self.malformed(start, "a delete record in a full snapshot".into()));
                }
                self.read_kg_and_key(start)?;
                self.records += 1;
                Ok(Some(Record::Delete {
                    kg: KeyGroup(self.kg),
                    key: &self.key,
                }))
            }
            [TAG_END] => {
                self.read_trailer()?;
                Ok(None)
            }
            [other] => Err(self.malformed(start, format!("unknown record tag {other:#04x}"))),
        }
    }

    fn read_kg_and_key(&mut self, start: u64) -> Result<(), StateError> {
        let mut kg = [0u8; 2];
        self.read_hashed(&mut kg)?;
        let kg = u16::from_be_bytes(kg);
        let len = self.read_len(start, MAX_KEY_LEN, "key")?;
        let mut key = std::mem::take(&mut self.prev_key);
        key.clear();
        key.resize(len, 0);
        self.read_hashed(&mut key)?;
        if self.kind == SnapshotKind::Full
            && self.records > 0
            && (kg, key.as_slice()) <= (self.kg, self.key.as_slice())
        {
            return Err(self.malformed(
                start,
                format!(
                    "key group {kg} key {key:02x?} does not follow key group {} key {:02x?} \
                     (a full snapshot is in strictly increasing order)",
                    self.kg, self.key
                ),
            ));
        }
        self.prev_key = std::mem::replace(&mut self.key, key);
        self.kg = kg;
        Ok(())
    }

    fn read_len(&mut self, start: u64, max: usize, what: &str) -> Result<usize, StateError> {
        let mut len = [0u8; 4];
        self.read_hashed(&mut len)?;
        let len = usize::try_from(u32::from_be_bytes(len)).unwrap_or(usize::MAX);
        if len > max {
            return Err(self.malformed(start, format!("{what} length {len} exceeds {max}")));
        }
        Ok(len)
    }

    /// Reads a value of `len` bytes, growing the buffer only as bytes arrive.
    fn read_value(&mut self, len: usize) -> Result<(), StateError> {
        let mut value = std::mem::take(&mut self.value);
        value.clear();
        while value.len() < len {
            let filled = value.len();
            value.resize(filled + (len - filled).min(GROWTH_STEP), 0);
            let chunk = value.get_mut(filled..).expect("just resized past filled");
            self.read_hashed(chunk)?;
        }
        self.value = value;
        Ok(())
    }

    fn read_trailer(&mut self) -> Result<(), StateError> {
        let mut count = [0u8; 8];
        self.read_hashed(&mut count)?;
        let computed = self.crc.clone().finalize();
        let mut stored = [0u8; 4];
        self.read_exact_at(&mut stored)?;
        let stored = u32::from_be_bytes(stored);
        if stored != computed {
            return Err(self.problem(StreamProblem::ChecksumMismatch { stored, computed }));
        }
        let count = u64::from_be_bytes(count);
        if count != self.records {
            return Err(self.problem(StreamProblem::CountMismatch {
                stored: count,
                counted: self.records,
            }));
        }
        let mut extra = [0u8; 1];
        if self.read_some(&mut extra)? > 0 {
            return Err(self.problem(StreamProblem::TrailingBytes {
                offset: self.offset - 1,
            }));
        }
        self.finished = true;
        Ok(())
    }

    /// Fills `buf` and adds it to the checksum.
    fn read_hashed(&mut self, buf: &mut [u8]) -> Result<(), StateError> {
        self.read_exact_at(buf)?;
        self.crc.update(buf);
        Ok(())
    }

    /// Fills `buf`; an early end of input is [`StreamProblem::Truncated`] at the exact offset.
    fn read_exact_at(&mut self, buf: &mut [u8]) -> Result<(), StateError> {
        let mut filled = 0;
        while let Some(rest) = buf.get_mut(filled..).filter(|rest| !rest.is_empty()) {
            match self.read_some(rest)? {
                0 => {
                    return Err(self.problem(StreamProblem::Truncated {
                        offset: self.offset,
                    }))
                }
                n => filled += n,
            }
        }
        Ok(())
    }

    fn read_some(&mut self, buf: &mut [u8]) -> Result<usize, StateError> {
        loop {
            match self.input.read(buf) {
                Ok(n) => {
                    self.offset += n as u64;
                    return Ok(n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.problem(StreamProblem::Read(e))),
            }
        }
    }

    fn malformed(&self, offset: u64, reason: String) -> StateError {
        self.problem(StreamProblem::Malformed { offset, reason })
    }

    fn problem(&self, problem: StreamProblem) -> StateError {
        StateError::BadStream {
            stream: self.stream,
            problem,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{SnapshotWriter, HEADER_LEN};

    fn full_stream(entries: &[(u16, &[u8], &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = SnapshotWriter::new(&mut out, SnapshotKind::Full).expect("vec write");
        for (kg, k, v) in entries {
            w.put(KeyGroup(*kg), k, v).expect("vec write");
        }
        let _ = w.finish().expect("vec write");
        out
    }

    /// A record as `(kg, key, Some(value))` for a put, `(kg, key, None)` for a delete.
    type Decoded = (u16, Vec<u8>, Option<Vec<u8>>);

    fn read_all(bytes: &[u8]) -> Result<Vec<Decoded>, StateError> {
        let mut r = SnapshotReader::new(bytes, StreamIndex(0))?;
        let mut out = Vec::new();
        while let Some(rec) = r.next_record()? {
            out.push(match rec {
                Record::Put { kg, key, value } => (kg.0, key.to_vec(), Some(value.to_vec())),
                Record::Delete { kg, key } => (kg.0, key.to_vec(), None),
            });
        }
        Ok(out)
    }

    #[test]
    fn an_empty_full_stream_is_header_and_trailer_only() {
        let bytes = full_stream(&[]);
        assert_eq!(bytes.len(), HEADER_LEN + 1 + 8 + 4);
        assert_eq!(read_all(&bytes).expect("valid").len(), 0);
    }

    #[test]
    fn records_read_back_as_written() {
        let bytes = full_stream(&[(0, b"a", b"1"), (0, b"b", b""), (7, b"", b"x")]);
        let got = read_all(&bytes).expect("valid");
        assert_eq!(
            got,
            vec![
                (0, b"a".to_vec(), Some(b"1".to_vec())),
                (0, b"b".to_vec(), Some(Vec::new())),
                (7, Vec::new(), Some(b"x".to_vec())),
            ]
        );
    }

    #[test]
    fn a_full_stream_out_of_key_order_is_malformed() {
        let bytes = full_stream(&[(1, b"b", b""), (1, b"a", b"")]);
        let err = read_all(&bytes).expect_err("out of order");
        assert!(
            matches!(
                &err,
                StateError::BadStream {
                    problem: StreamProblem::Malformed { reason, .. },
                    ..
                } if reason.contains("strictly increasing")
            ),
            "{err}"
        );
    }

    #[test]
    fn a_repeated_key_in_a_full_stream_is_malformed() {
        let bytes = full_stream(&[(1, b"a", b""), (1, b"a", b"")]);
        assert!(read_all(&bytes).is_err());
    }

    #[test]
    fn a_huge_corrupt_length_is_rejected_without_allocating_it() {
        let mut bytes = full_stream(&[(1, b"k", b"v")]);
        // value_len sits after tag(1) kg(2) key_len(4) key(1): set it to 200 MiB.
        let at = HEADER_LEN + 1 + 2 + 4 + 1;
        bytes
            .get_mut(at..at + 4)
            .expect("inside the stream")
            .copy_from_slice(&(200u32 << 20).to_be_bytes());
        let err = read_all(&bytes).expect_err("truncated");
        assert!(
            matches!(
                err,
                StateError::BadStream {
                    problem: StreamProblem::Truncated { .. },
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn a_failed_put_leaves_the_stream_valid() {
        let mut out = Vec::new();
        let mut w = SnapshotWriter::new(&mut out, SnapshotKind::Changes).expect("vec write");
        let big = vec![0u8; MAX_KEY_LEN + 1];
        assert!(matches!(
            w.put(KeyGroup(0), &big, b""),
            Err(StateError::KeyTooLarge { .. })
        ));
        w.put(KeyGroup(0), b"k", b"v").expect("vec write");
        let _ = w.finish().expect("vec write");
        assert_eq!(read_all(&out).expect("valid").len(), 1);
    }
}
