//! Records longer than the decoders' bound (`max_record_bytes`), shared by the CSV and JSON
//! Lines decoders: the reasons they are rejected with, the cut of their text kept for the
//! dead letters, and the skipping of a line too long to keep.
//!
//! A decoder never holds more than the bound of one record: a CSV quote that is never closed,
//! or a JSON line without end, would otherwise make it buffer the rest of the file. A record
//! that grows past the bound is rejected from its first line on (its start line and the first
//! [`TEXT_MAX`] bytes of that line go to the dead letters) and decoding resumes on the line
//! after its start, so that one stray quote costs one line.

use super::Rejected;

/// The default bound on a record's length in bytes (1 MiB).
pub const DEFAULT_MAX_RECORD_BYTES: usize = 1 << 20;

/// How much of a too-long record's text a reject keeps.
pub(crate) const TEXT_MAX: usize = 4096;

/// `bytes`, cut to [`TEXT_MAX`], as lossy UTF-8.
pub(crate) fn cut_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes.get(..TEXT_MAX).unwrap_or(bytes)).into_owned()
}

/// The beginning of an encoded row and its size, to name a row too large to write in a
/// message: `"1,abc,…"… (1048577 bytes encoded)`.
pub(crate) fn row_beginning(value: &[u8]) -> String {
    const SHOWN: usize = 60;
    let text = String::from_utf8_lossy(&value[..value.len().min(SHOWN * 4)]);
    let head: String = text.chars().take(SHOWN).collect();
    format!("{head:?}… ({} bytes encoded)", value.len())
}

/// `n` bytes, readably: `1 MiB`, `64 KiB`, `1000 bytes`.
pub(crate) fn size_text(n: usize) -> String {
    const KIB: usize = 1 << 10;
    const MIB: usize = 1 << 20;
    match n {
        0 => "0 bytes".into(),
        n if n % MIB == 0 => format!("{} MiB", n / MIB),
        n if n % KIB == 0 => format!("{} KiB", n / KIB),
        n => format!("{n} bytes"),
    }
}

/// Why a CSV record that grew past the bound is rejected.
pub(crate) fn csv_too_long(max: usize) -> String {
    format!(
        "record longer than {} (param `max_record_bytes`), most likely a quote that is never closed: its first line is rejected (`record`, at most {}) and reading goes on with the next line",
        size_text(max),
        size_text(TEXT_MAX)
    )
}

/// Why a CSV record that the end of its file cuts inside a quoted field is rejected.
pub(crate) fn csv_unclosed_quote() -> String {
    "a quoted field is never closed (the input ends inside it: the file, or the message a broker's source decodes): the record's first line is rejected and reading goes on with the next line".into()
}

/// Why a line longer than the bound is rejected (a JSON line, or a CSV line with no record
/// end within the bound).
pub(crate) fn line_too_long(max: usize) -> String {
    format!(
        "line longer than {} (param `max_record_bytes`): `record` holds its start, at most {}",
        size_text(max),
        size_text(TEXT_MAX)
    )
}

/// A line longer than the bound whose end has not come yet: its bytes are dropped as they
/// arrive, up to its terminator; only its start is kept, for the reject.
#[derive(Debug)]
pub(crate) struct Skipping {
    /// 1-based line where the line starts.
    pub(crate) line: u64,
    /// File offset where it starts.
    start: u64,
    /// The start of its text, at most [`TEXT_MAX`] bytes (completed while it is dropped).
    prefix: Vec<u8>,
    /// File offset of the next byte to look at.
    pub(crate) pos: u64,
}

impl Skipping {
    /// Skipping the line that starts on line `line` at file offset `start` with `prefix`
    /// (the bytes up to `pos`, or their first [`TEXT_MAX`]), from file offset `pos` on.
    pub(crate) fn new(line: u64, start: u64, prefix: &[u8], pos: u64) -> Self {
        Skipping {
            line,
            start,
            prefix: prefix.get(..TEXT_MAX).unwrap_or(prefix).to_vec(),
            pos,
        }
    }

    /// Looks for the line's end in `bytes` (which start at [`Skipping::pos`]): with
    /// `cr_ends_lines` a `\r` ends it too. Returns the terminator's index, or `None` when all
    /// of `bytes` belongs to the line (and is dropped, but for what the prefix still takes).
    pub(crate) fn scan(&mut self, bytes: &[u8], cr_ends_lines: bool) -> Option<usize> {
        let found = if cr_ends_lines {
            memchr::memchr2(b'\n', b'\r', bytes)
        } else {
            memchr::memchr(b'\n', bytes)
        };
        let skipped = bytes.get(..found.unwrap_or(bytes.len())).unwrap_or(bytes);
        let room = TEXT_MAX.saturating_sub(self.prefix.len());
        self.prefix
            .extend_from_slice(skipped.get(..room).unwrap_or(skipped));
        self.pos += skipped.len() as u64;
        found
    }

    /// The line ended with `\r\n`: its text, when the prefix holds it all, leaves out the
    /// `\r` (as a line read whole does).
    pub(crate) fn drop_cr(&mut self) {
        if self.prefix.len() as u64 == self.pos - self.start && self.prefix.last() == Some(&b'\r') {
            self.prefix.pop();
        }
    }

    /// The reject for the skipped line.
    pub(crate) fn reject(&self, source: &str, max: usize) -> Rejected {
        Rejected {
            source: source.to_string(),
            line: self.line,
            reason: line_too_long(max),
            record: cut_text(&self.prefix),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_the_largest_whole_unit() {
        assert_eq!(size_text(DEFAULT_MAX_RECORD_BYTES), "1 MiB");
        assert_eq!(size_text(64 << 10), "64 KiB");
        assert_eq!(size_text(1000), "1000 bytes");
    }

    #[test]
    fn a_skipped_line_keeps_only_its_start_and_ends_at_its_terminator() {
        let long = vec![b'x'; 3 * TEXT_MAX];
        let mut s = Skipping::new(7, 98, b"ab", 100);
        assert_eq!(s.scan(&long, true), None);
        assert_eq!(s.pos, 100 + long.len() as u64);
        assert_eq!(s.scan(b"ab\rc\n", true), Some(2));
        let r = s.reject("in.csv", 1 << 20);
        assert_eq!((r.line, r.record.len()), (7, TEXT_MAX));
        assert!(r.record.starts_with("abxxx"));
        let mut s = Skipping::new(1, 0, b"", 0);
        assert_eq!(s.scan(b"ab\rc\r\n", false), Some(5));
        s.drop_cr();
        assert_eq!(s.reject("in.jsonl", 10).record, "ab\rc");
        assert!(
            r.reason.starts_with("line longer than 1 MiB"),
            "{}",
            r.reason
        );
    }
}
