//! Splitting CSV bytes into records and fields, the first stage of CSV decoding.
//!
//! Two splitters produce the same [`Block`] shape:
//!
//! * [`split_plain`] handles a run of complete lines that contains no quote character. Fields
//!   are then plain byte ranges of the input, so it only looks for delimiters and line
//!   terminators and copies nothing. This is the hot path for machine-written files.
//! * [`CoreSplitter`] wraps `csv_core::Reader` for everything else (quoted fields, fields
//!   with embedded newlines, records split across `decode` calls). It copies unescaped field
//!   bytes into its own buffer.
//!
//! Both follow the same rules, which are csv-core's: `\n`, `\r` and `\r\n` end a record,
//! empty lines are skipped, `"` quotes, `""` inside quotes is a literal quote.

use std::ops::Range;

use csv_core::{ReadRecordResult, Reader, ReaderBuilder};

/// One record found by a splitter.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordMeta {
    /// Index of the record's first field in [`Block::fields`].
    pub(crate) first: usize,
    /// Number of fields.
    pub(crate) nfields: usize,
    /// File offset where scanning for the record began; leading `\r`/`\n` bytes (skipped
    /// blank lines) may precede its first byte.
    pub(crate) raw_start: u64,
    /// File offset just past the record's last byte, excluding its line terminator.
    pub(crate) raw_end: u64,
    /// For a record of [`split_plain`]: how many `\n` precede it in the data split, so that
    /// the lines of records follow from the line of one without counting again; `u32::MAX`
    /// for a record of the csv-core splitter, which may span lines.
    pub(crate) newlines_before: u32,
}

/// Records and their field byte ranges; the ranges index a buffer owned by the splitter that
/// produced the block.
#[derive(Debug, Default)]
pub(crate) struct Block {
    /// Records in file order.
    pub(crate) records: Vec<RecordMeta>,
    /// Field byte ranges, `nfields` consecutive entries per record.
    pub(crate) fields: Vec<Range<usize>>,
}

impl Block {
    pub(crate) fn clear(&mut self) {
        self.records.clear();
        self.fields.clear();
    }

    /// The bytes of field `index` of `record`, where `buf` is the splitter's buffer.
    #[inline]
    pub(crate) fn field<'b>(&self, buf: &'b [u8], record: &RecordMeta, index: usize) -> &'b [u8] {
        &buf[self.fields[record.first + index].clone()]
    }
}

/// Splits `data`, which must hold only complete lines (its last byte is `\r` or `\n`) and no
/// quote character. `base` is the file offset of `data[0]`. Field ranges index `data`.
pub(crate) fn split_plain(data: &[u8], base: u64, delimiter: u8, block: &mut Block) {
    let mut record_start = 0;
    let mut field_start = 0;
    let mut first = block.fields.len();
    let mut newlines = 0u32;
    // memchr's vectorised search skips the bytes of long fields (URLs, free text) many at a
    // time; a byte-by-byte loop spent 2.5 times as long on Nexmark's bids.
    for i in memchr::memchr3_iter(delimiter, b'\n', b'\r', data) {
        let b = data[i];
        if b == delimiter {
            block.fields.push(field_start..i);
            field_start = i + 1;
        } else {
            if i > record_start {
                block.fields.push(field_start..i);
                block.records.push(RecordMeta {
                    first,
                    nfields: block.fields.len() - first,
                    raw_start: base + record_start as u64,
                    raw_end: base + i as u64,
                    newlines_before: newlines,
                });
                first = block.fields.len();
            }
            newlines += u32::from(b == b'\n');
            record_start = i + 1;
            field_start = i + 1;
        }
    }
    debug_assert_eq!(record_start, data.len(), "split_plain needs complete lines");
}

/// Whether `data` can go to [`split_plain`]: no quote character anywhere.
#[inline]
pub(crate) fn is_plain(data: &[u8]) -> bool {
    memchr::memchr(b'"', data).is_none()
}

/// csv-core based splitter; keeps the state of a record that continues in the next chunk.
#[derive(Debug)]
pub(crate) struct CoreSplitter {
    reader: Reader,
    delimiter: u8,
    /// Unescaped field bytes; `out[..out_len]` is in use, the rest is scratch capacity.
    pub(crate) out: Vec<u8>,
    out_len: usize,
    /// Field ends of the current record, relative to its start in `out`.
    ends: Vec<usize>,
    ends_len: usize,
    /// Where the current record starts in `out`.
    record_out: usize,
    /// File offset where scanning for the current record began.
    record_raw_start: u64,
    /// Whether csv-core has consumed bytes of a record it has not yet returned.
    in_record: bool,
}

/// How a [`CoreSplitter::split`] call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SplitProgress {
    /// Input bytes consumed.
    pub(crate) consumed: usize,
    /// File offset just past the last complete record (its terminator included), if any
    /// record was completed.
    pub(crate) record_end: Option<u64>,
    /// The record in progress grew longer than the bound before it ended: the split stopped
    /// there, and the splitter must be [`CoreSplitter::reset`] before it splits again.
    pub(crate) too_long: bool,
}

/// How the input of a [`CoreSplitter`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finished {
    /// No record was in progress.
    Nothing,
    /// The record in progress was completed and added to the block.
    Record,
    /// The input ended inside a quoted field: a quote that is never closed.
    UnclosedQuote,
}

impl CoreSplitter {
    pub(crate) fn new(delimiter: u8) -> Self {
        CoreSplitter {
            reader: ReaderBuilder::new().delimiter(delimiter).build(),
            delimiter,
            out: vec![0; 1 << 16],
            out_len: 0,
            ends: vec![0; 64],
            ends_len: 0,
            record_out: 0,
            record_raw_start: 0,
            in_record: false,
        }
    }

    /// Forgets all state; the next record starts at file offset `offset`.
    pub(crate) fn reset(&mut self, offset: u64) {
        self.reader = ReaderBuilder::new().delimiter(self.delimiter).build();
        self.out_len = 0;
        self.ends_len = 0;
        self.record_out = 0;
        self.record_raw_start = offset;
        self.in_record = false;
    }

    /// Whether a record has started but not ended (its rest is in later input).
    pub(crate) fn in_record(&self) -> bool {
        self.in_record
    }

    /// Tells an idle splitter that the input before `offset` was handled elsewhere.
    pub(crate) fn resume_at(&mut self, offset: u64) {
        debug_assert!(!self.in_record);
        self.record_raw_start = offset;
    }

    /// Drops the field bytes of records already handed out in blocks, keeping a partial one.
    pub(crate) fn compact(&mut self) {
        if self.record_out > 0 {
            self.out.copy_within(self.record_out..self.out_len, 0);
            self.out_len -= self.record_out;
            self.record_out = 0;
        }
    }

    /// Splits records from `input` (file offset `base`) into `block` until a record ends at
    /// or after input position `stop`, the input runs out, or the record in progress grows
    /// longer than `max_record` bytes (counted from where scanning for it began), which it
    /// sees after at most one byte past that bound. Field ranges index [`CoreSplitter::out`].
    pub(crate) fn split(
        &mut self,
        input: &[u8],
        base: u64,
        stop: usize,
        max_record: u64,
        block: &mut Block,
    ) -> SplitProgress {
        let mut pos = 0;
        let mut record_end = None;
        loop {
            if !self.in_record {
                // Blank lines before a record are not part of it: the bound counts the
                // record's own bytes, as `split_plain` does, however the input is cut.
                let blank = input[pos..]
                    .iter()
                    .take_while(|b| matches!(b, b'\r' | b'\n'))
                    .count();
                pos += blank;
                self.record_raw_start = base + pos as u64;
            }
            let used = (base + pos as u64).saturating_sub(self.record_raw_start);
            if used > max_record {
                return SplitProgress {
                    consumed: pos,
                    record_end,
                    too_long: true,
                };
            }
            // Hand csv-core at most one byte past the bound, so that the record cannot grow
            // (nor its unescaped bytes be buffered) much beyond it.
            let room = usize::try_from((max_record - used).saturating_add(1)).unwrap_or(usize::MAX);
            let end = input.len().min(pos.saturating_add(room));
            if self.out.len() - self.out_len < 256 {
                let grown = (self.out.len() * 2).max(1 << 16);
                self.out.resize(grown, 0);
            }
            if self.ends_len == self.ends.len() {
                let grown = self.ends.len() * 2;
                self.ends.resize(grown, 0);
            }
            let (result, nin, nout, nend) = self.reader.read_record(
                &input[pos..end],
                &mut self.out[self.out_len..],
                &mut self.ends[self.ends_len..],
            );
            pos += nin;
            self.out_len += nout;
            self.ends_len += nend;
            match result {
                ReadRecordResult::InputEmpty => {
                    self.in_record |= nin > 0;
                    if end == input.len() {
                        break;
                    }
                }
                ReadRecordResult::OutputFull | ReadRecordResult::OutputEndsFull => {
                    self.in_record |= nin > 0;
                }
                ReadRecordResult::Record => {
                    let end = base + pos as u64;
                    // The last consumed byte is the record's terminator.
                    self.push_record(block, end - 1);
                    self.record_raw_start = end;
                    record_end = Some(end);
                    if pos >= stop {
                        break;
                    }
                }
                ReadRecordResult::End => break,
            }
        }
        SplitProgress {
            consumed: pos,
            record_end,
            too_long: false,
        }
    }

    /// End of input: completes a final record that has no terminator, unless the input
    /// ends inside a quoted field (then the splitter must be [`CoreSplitter::reset`]). `end`
    /// is the file offset of the end of the input.
    pub(crate) fn finish(&mut self, end: u64, block: &mut Block) -> Finished {
        if !self.in_record {
            return Finished::Nothing;
        }
        if self.out_len == self.out.len() {
            self.out.push(0);
        }
        if self.ends_len == self.ends.len() {
            self.ends.push(0);
        }
        // A line end completes the record, but inside a quoted field it is more of the field
        // (and after blank lines only, one more blank line).
        let (result, _, nout, nend) = self.reader.read_record(
            b"\n",
            &mut self.out[self.out_len..],
            &mut self.ends[self.ends_len..],
        );
        self.ends_len += nend;
        match result {
            ReadRecordResult::Record => {
                self.push_record(block, end);
                self.record_raw_start = end;
                Finished::Record
            }
            _ if nout > 0 => Finished::UnclosedQuote,
            _ => {
                self.in_record = false;
                Finished::Nothing
            }
        }
    }

    /// Turns the current record's relative field ends into a [`RecordMeta`].
    fn push_record(&mut self, block: &mut Block, raw_end: u64) {
        let first = block.fields.len();
        let mut start = self.record_out;
        for &end in &self.ends[..self.ends_len] {
            let end = self.record_out + end;
            block.fields.push(start..end);
            start = end;
        }
        block.records.push(RecordMeta {
            first,
            nfields: self.ends_len,
            raw_start: self.record_raw_start,
            raw_end,
            newlines_before: u32::MAX,
        });
        self.ends_len = 0;
        self.record_out = self.out_len;
        self.in_record = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields_of(block: &Block, buf: &[u8]) -> Vec<Vec<String>> {
        block
            .records
            .iter()
            .map(|r| {
                (0..r.nfields)
                    .map(|i| String::from_utf8_lossy(block.field(buf, r, i)).into_owned())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn plain_split_skips_blank_lines_and_handles_crlf() {
        let data = b"a,b\r\n\r\n,c\n\nd\n";
        let mut block = Block::default();
        split_plain(data, 100, b',', &mut block);
        assert_eq!(
            fields_of(&block, data),
            [vec!["a", "b"], vec!["", "c"], vec!["d"]]
        );
        let spans: Vec<_> = block
            .records
            .iter()
            .map(|r| (r.raw_start, r.raw_end))
            .collect();
        assert_eq!(spans, [(100, 103), (107, 109), (111, 112)]);
    }

    #[test]
    fn core_split_matches_plain_split_on_unquoted_input() {
        let data = b"a,b\r\n\r\n,c\n\nd\n";
        let mut plain = Block::default();
        split_plain(data, 0, b',', &mut plain);
        let mut core = Block::default();
        let mut splitter = CoreSplitter::new(b',');
        let progress = splitter.split(data, 0, data.len(), u64::MAX, &mut core);
        assert_eq!(progress.consumed, data.len());
        assert_eq!(fields_of(&core, &splitter.out), fields_of(&plain, data));
        let ends = |b: &Block| b.records.iter().map(|r| r.raw_end).collect::<Vec<_>>();
        assert_eq!(ends(&core), ends(&plain));
    }

    #[test]
    fn core_split_keeps_a_partial_record_for_the_next_chunk() {
        let mut splitter = CoreSplitter::new(b',');
        let mut block = Block::default();
        let p = splitter.split(b"x,\"multi\nli", 0, usize::MAX, u64::MAX, &mut block);
        assert_eq!(p.record_end, None);
        assert!(splitter.in_record());
        splitter.compact();
        let p = splitter.split(b"ne\",y\nz", 11, usize::MAX, u64::MAX, &mut block);
        assert_eq!(p.record_end, Some(17));
        assert_eq!(splitter.finish(18, &mut block), Finished::Record);
        assert_eq!(
            fields_of(&block, &splitter.out),
            [vec!["x", "multi\nline", "y"], vec!["z"]]
        );
        assert_eq!(block.records[1].raw_start, 17);
        assert_eq!(block.records[1].raw_end, 18);
    }

    #[test]
    fn a_record_longer_than_the_bound_stops_the_split_with_a_bounded_buffer() {
        let max = 1000;
        let mut splitter = CoreSplitter::new(b',');
        let mut block = Block::default();
        let mut input = b"1,2\n3,\"stray\n".to_vec();
        input.extend(b"4,5\n".repeat(100_000));
        let p = splitter.split(&input, 0, usize::MAX, max, &mut block);
        assert!(p.too_long);
        assert_eq!(
            p.record_end,
            Some(4),
            "the record before the long one is whole"
        );
        assert_eq!(p.consumed, 4 + max as usize + 1, "one byte past the bound");
        assert_eq!(block.records.len(), 1);
        assert!(splitter.out.len() <= 1 << 16, "{}", splitter.out.len());
    }

    #[test]
    fn blank_lines_before_a_record_do_not_count_toward_its_bound() {
        let mut splitter = CoreSplitter::new(b',');
        let mut block = Block::default();
        let input = b"1,2\n\r\r\r\n4,\"5\"\n";
        let p = splitter.split(input, 0, usize::MAX, 5, &mut block);
        assert!(!p.too_long, "`4,\"5\"` is 5 bytes: {p:?}");
        assert_eq!(block.records.len(), 2);
        assert_eq!(
            block.records[1].raw_start, 8,
            "the record starts after the blank lines"
        );
    }

    #[test]
    fn an_input_that_ends_inside_quotes_is_told_from_one_that_does_not() {
        for (input, finished, fields) in [
            (&b"1,\"ab"[..], Finished::UnclosedQuote, 0),
            (b"1,\"a\"\"b\nc", Finished::UnclosedQuote, 0),
            (b"1,\"ab\"", Finished::Record, 2),
            (b"1,ab\"", Finished::Record, 2),
            (b"1,ab", Finished::Record, 2),
            (b"1,", Finished::Record, 2),
            (b"\n\n", Finished::Nothing, 0),
        ] {
            let mut block = Block::default();
            let mut splitter = CoreSplitter::new(b',');
            let _ = splitter.split(input, 0, usize::MAX, u64::MAX, &mut block);
            let end = input.len() as u64;
            let text = String::from_utf8_lossy(input);
            assert_eq!(splitter.finish(end, &mut block), finished, "{text:?}");
            let got = block.records.first().map_or(0, |r| r.nfields);
            assert_eq!(got, fields, "{text:?}");
        }
    }
}
