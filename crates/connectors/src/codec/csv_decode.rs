//! CSV decoding into Arrow batches with per-record error isolation.
//!
//! Bytes arrive in arbitrary chunks through [`CsvDecoder::decode`]; every complete record is
//! decoded at once, and an incomplete trailing record waits for the next chunk (or for
//! [`CsvDecoder::finish_file`]). A record that does not fit the schema is reported as a
//! [`Rejected`] entry with its exact line number and never stops decoding.
//!
//! # Rules
//!
//! * With `has_header`, the first record of each file names the columns; schema columns are
//!   found by (trimmed) name, extra file columns are ignored, and a schema column absent from
//!   the header is a fatal [`CodecError::MissingColumn`]. Without a header, columns are taken
//!   by position.
//! * A record with a field count other than the header's (or the schema's) is rejected.
//! * An empty field, quoted or not, is null, except in a `Utf8` column, where it is the empty
//!   string. A null in a non-nullable column rejects the record.
//! * `Int64`: optional sign and digits. `Float64`: decimal / exponent / `NaN` / `inf`.
//!   `Boolean`: `true` / `false` / `1` / `0`, any case. `Utf8`: valid UTF-8, kept verbatim
//!   (no trimming). Timestamps: see [`super::timestamp`].
//! * `\n`, `\r\n` and `\r` end records; empty lines are skipped; `"` quotes, `""` escapes a
//!   quote inside quotes. A UTF-8 byte-order mark at the start of a file is skipped.
//! * A record longer than the bound ([`CsvDecoder::with_max_record_bytes`], 1 MiB by
//!   default), and a record that the end of its file cuts inside a quoted field, are rejected
//!   from their first line on: decoding resumes on the line after their start, so that a
//!   quote that is never closed costs one line, not the rest of the file (see
//!   [`super::long_record`]). The decoder never buffers much more than the bound.
//!
//! # How it is fast
//!
//! Input is handled in blocks of about 64 KiB. A block of complete lines without any
//! `"` is split by a plain delimiter scan that copies nothing; other blocks go through
//! csv-core. Each block is then parsed column by column into Arrow builders, and bad rows are
//! only marked; if any row of a call was bad, one filter pass drops them all at the end.

use std::borrow::Cow;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;

use super::batch_builder::BatchBuilder;
use super::bom::{BomSkipper, BomStep};
use super::column::{resolve_columns, ColumnInfo, ColumnKind};
use super::csv_columns::{decode_column, text_is_utf8, Rows, Verdicts};
use super::csv_split::{is_plain, split_plain, Block, CoreSplitter, Finished, RecordMeta};
use super::long_record::{cut_text, line_too_long, Skipping, DEFAULT_MAX_RECORD_BYTES};
use super::window::{LineCursor, Window};
use super::{CodecError, Decoded, Rejected};

mod long_records;

/// Input bytes handled per block (a cache-friendly unit; not a limit on record size).
const BLOCK_BYTES: usize = 64 * 1024;

/// CSV dialect options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CsvOptions {
    /// Field delimiter, usually `b','`. Must not be `"`, `\r` or `\n`.
    pub delimiter: u8,
    /// Whether the first record of each file is a header naming the columns.
    pub has_header: bool,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            delimiter: b',',
            has_header: true,
        }
    }
}

/// Decodes CSV files, fed in chunks, into batches of a fixed schema.
#[derive(Debug)]
pub struct CsvDecoder {
    options: CsvOptions,
    columns: Vec<ColumnInfo>,
    /// Set when the schema or options are unusable; returned by every call.
    setup_error: Option<CodecError>,
    source: String,
    file: FileState,
    splitter: CoreSplitter,
    block: Block,
    output: BatchBuilder,
    verdicts: Verdicts,
    /// The longest record kept, in bytes.
    max_record: usize,
    /// The lines of decoded rows, when asked for ([`CsvDecoder::record_lines`]).
    lines: Option<RowLines>,
}

/// Lines of rows, for [`CsvDecoder::record_lines`].
#[derive(Debug, Default)]
struct RowLines {
    /// The line of each kept row since the last output.
    kept: Vec<u64>,
    /// The line of each record of the block being decoded.
    of_block: Vec<u64>,
}

/// Where the decoder stands within the current file.
#[derive(Debug, Default)]
struct FileState {
    bom: BomSkipper,
    /// File offset before which every record has been decoded.
    consumed: u64,
    /// File bytes from `consumed` on that were scanned but are not yet a complete record.
    carry: Vec<u8>,
    lines: LineCursor,
    /// How file fields map to schema columns; `None` until the header has been read.
    layout: Option<Layout>,
    /// A fatal error for this file, repeated by every later call.
    failed: Option<CodecError>,
    /// A line too long to keep, being dropped up to its end (the decoder stands at its
    /// start: `consumed` is where it begins).
    skipping: Option<Skipping>,
}

/// The field layout of a file.
#[derive(Debug)]
struct Layout {
    /// For each schema column, the index of its file field.
    field_of: Vec<usize>,
    /// Number of fields every record must have.
    fields: usize,
}

impl CsvDecoder {
    /// A decoder for `schema`, positioned at the start of an unnamed file (see
    /// [`CsvDecoder::start_file`]). A schema column of an unsupported type, or a reserved
    /// delimiter, makes every later call return [`CodecError::UnsupportedType`] or
    /// [`CodecError::InvalidDelimiter`].
    pub fn new(schema: SchemaRef, options: CsvOptions) -> Self {
        let (columns, mut setup_error) = match resolve_columns(&schema) {
            Ok(columns) => (columns, None),
            Err(err) => (Vec::new(), Some(err)),
        };
        if matches!(options.delimiter, b'"' | b'\r' | b'\n') {
            setup_error = Some(CodecError::InvalidDelimiter {
                delimiter: options.delimiter,
            });
        }
        let output = BatchBuilder::new(schema, &columns);
        let mut decoder = CsvDecoder {
            options,
            columns,
            setup_error,
            source: String::new(),
            file: FileState::default(),
            splitter: CoreSplitter::new(options.delimiter),
            block: Block::default(),
            output,
            verdicts: Verdicts::default(),
            max_record: DEFAULT_MAX_RECORD_BYTES,
            lines: None,
        };
        decoder.start_file("");
        decoder
    }

    /// Bounds a record to `max` bytes (at least 1): a longer one is rejected from its first
    /// line on and decoding resumes on the next line. The default is 1 MiB.
    #[must_use]
    pub fn with_max_record_bytes(mut self, max: usize) -> Self {
        self.max_record = max.max(1);
        self
    }

    /// Records the line each decoded row starts on ([`Decoded::lines`]), so that a row an
    /// operator rejects later names its input line. Costs a count of the newlines between
    /// records, which the decoder otherwise makes only for rejected records.
    pub fn record_lines(&mut self) {
        self.lines.get_or_insert_with(RowLines::default);
    }

    /// Makes schema column `column` the event time: a record where it is empty is rejected
    /// ("event-time column `ts` is empty"), even if the column is nullable.
    #[must_use]
    pub fn with_event_time(mut self, column: usize) -> Self {
        if let Some(c) = self.columns.get_mut(column) {
            c.event_time = true;
        }
        self
    }

    /// Starts a new file/stream named `source` (used in rejects and errors); resets header
    /// state, line counter, and byte offset. Anything left of the previous file (a record
    /// without its end) is dropped, so call [`CsvDecoder::finish_file`] first.
    pub fn start_file(&mut self, source: &str) {
        source.clone_into(&mut self.source);
        self.file = FileState::default();
        if !self.options.has_header {
            self.file.layout = Some(Layout {
                field_of: (0..self.columns.len()).collect(),
                fields: self.columns.len(),
            });
        }
        self.splitter.reset(0);
        self.output.clear();
        if let Some(lines) = &mut self.lines {
            lines.kept.clear();
        }
    }

    /// Feeds the next bytes of the current file. Decodes every complete record; an
    /// incomplete trailing record is kept internally and completed by later bytes.
    pub fn decode(&mut self, bytes: &[u8]) -> Result<Decoded, CodecError> {
        self.check()?;
        let mut rejected = Vec::new();
        self.feed(bytes, &mut rejected)?;
        self.output_with(rejected)
    }

    /// End of the current file: decodes a last record that has no trailing newline. A record
    /// that the end cuts inside a quoted field is rejected from its first line on, and the
    /// lines after that are decoded again.
    pub fn finish_file(&mut self) -> Result<Decoded, CodecError> {
        self.check()?;
        let mut rejected = Vec::new();
        let held = self.file.bom.finish();
        if !held.is_empty() {
            self.feed_text(Cow::Owned(held), &mut rejected)?;
        }
        loop {
            if let Some(skip) = self.file.skipping.take() {
                // The line too long to keep runs to the end of the file.
                rejected.push(skip.reject(&self.source, self.max_record));
                self.file.consumed = skip.pos;
                self.file.lines.jump(skip.pos, skip.line);
                self.splitter.reset(skip.pos);
                break;
            }
            let carry = std::mem::take(&mut self.file.carry);
            let window = Window {
                carry: &carry,
                start: self.file.consumed,
                chunk: &[],
            };
            self.block.clear();
            match self.splitter.finish(window.end(), &mut self.block) {
                Finished::Nothing => {}
                Finished::Record => {
                    self.decode_block(BlockSource::Splitter, &window, &mut rejected)?;
                }
                Finished::UnclosedQuote => {
                    let rest = self.cut_unclosed_quote(&window, &mut rejected);
                    self.feed_text(Cow::Owned(rest), &mut rejected)?;
                    continue;
                }
            }
            self.file.consumed = window.end();
            self.splitter.reset(self.file.consumed);
            break;
        }
        self.output_with(rejected)
    }

    /// Bytes of the current file consumed by complete records so far (a resume position for
    /// later checkpointing): every record before this offset has been returned (as a row or
    /// a reject), none after it. It only advances at record boundaries, so decoding the file
    /// from here yields exactly the remaining records (with a header-less layout; see
    /// `the_consumed_offset_is_a_resume_point`).
    pub fn consumed_offset(&self) -> u64 {
        self.file.consumed
    }

    /// Whether the file's columns are known (its header was read, or it has none).
    pub(crate) fn has_layout(&self) -> bool {
        self.file.layout.is_some()
    }

    /// Stands at `offset` of the current file, a record boundary on line `line`, without
    /// reading the bytes before it (a split of a file read in parallel starts there): they
    /// are someone else's. Its header must have been fed already (see
    /// [`CsvDecoder::has_layout`]), unless nothing before `offset` holds it.
    pub(crate) fn jump_to(&mut self, offset: u64, line: u64) {
        self.file.bom.finish();
        self.file.carry.clear();
        self.file.skipping = None;
        self.file.consumed = offset;
        self.file.lines.jump(offset, line);
        self.splitter.reset(offset);
    }

    /// The bytes the decoder holds for records in progress (its carried input and the
    /// splitter's field buffer), to test that they stay bounded.
    #[cfg(test)]
    pub(crate) fn buffered_bytes(&self) -> usize {
        self.file.carry.capacity() + self.splitter.out.capacity()
    }

    fn check(&self) -> Result<(), CodecError> {
        match self.setup_error.as_ref().or(self.file.failed.as_ref()) {
            Some(err) => Err(err.clone()),
            None => Ok(()),
        }
    }

    fn output_with(&mut self, rejected: Vec<Rejected>) -> Result<Decoded, CodecError> {
        let batch = self.output.finish(&self.source)?;
        let mut lines = self
            .lines
            .as_mut()
            .map(|l| {
                let capacity = l.kept.capacity();
                std::mem::replace(&mut l.kept, Vec::with_capacity(capacity))
            })
            .unwrap_or_default();
        if lines.len() != batch.as_ref().map_or(0, RecordBatch::num_rows) {
            // Not every row's line is known (a bug): better none than wrong ones.
            lines.clear();
        }
        Ok(Decoded {
            batch,
            rejected,
            lines,
        })
    }

    /// Splits and decodes every complete record of `bytes`, carrying the rest.
    fn feed(&mut self, bytes: &[u8], rejected: &mut Vec<Rejected>) -> Result<(), CodecError> {
        let chunk = match self.file.bom.feed(bytes) {
            BomStep::Wait => return Ok(()),
            BomStep::Pass { bytes, skipped } => {
                if skipped > 0 {
                    self.file.consumed += skipped;
                    self.splitter.resume_at(self.file.consumed);
                }
                bytes
            }
        };
        self.feed_text(chunk, rejected)
    }

    /// Splits and decodes every complete record of `chunk`, carrying the rest; returns the
    /// bytes to decode again when a record grew too long.
    fn split_and_decode(
        &mut self,
        chunk: &[u8],
        rejected: &mut Vec<Rejected>,
    ) -> Result<Option<Vec<u8>>, CodecError> {
        let carry = std::mem::take(&mut self.file.carry);
        let window = Window {
            carry: &carry,
            start: self.file.consumed,
            chunk,
        };
        let base = window.chunk_start();
        let mut pos = 0;
        let mut too_long_at = None;
        while pos < chunk.len() {
            self.block.clear();
            if !self.splitter.in_record() {
                if let Some(len) = plain_lines(&chunk[pos..]) {
                    let region = &chunk[pos..pos + len];
                    split_plain(
                        region,
                        base + pos as u64,
                        self.options.delimiter,
                        &mut self.block,
                    );
                    self.decode_block(BlockSource::Input(region), &window, rejected)?;
                    pos += len;
                    self.file.consumed = base + pos as u64;
                    self.splitter.resume_at(self.file.consumed);
                    continue;
                }
            }
            let progress = self.splitter.split(
                &chunk[pos..],
                base + pos as u64,
                BLOCK_BYTES,
                self.max_record as u64,
                &mut self.block,
            );
            self.decode_block(BlockSource::Splitter, &window, rejected)?;
            self.splitter.compact();
            pos += progress.consumed;
            if let Some(end) = progress.record_end {
                self.file.consumed = end;
            }
            if progress.too_long {
                too_long_at = Some(base + pos as u64);
                break;
            }
            if progress.consumed == 0 {
                break;
            }
        }
        if let Some(scanned) = too_long_at {
            return Ok(Some(self.cut_long_record(&window, scanned, rejected)));
        }
        self.file.lines.advance(&window, self.file.consumed);
        let carry_start = window.start;
        // Keep the unconsumed tail. When a long record spans many chunks, its start is
        // already in `carry`: extend in place rather than copy it again on every call.
        let mut carry = carry;
        match usize::try_from(self.file.consumed.saturating_sub(base)) {
            Ok(0) => {
                let done = usize::try_from(self.file.consumed - carry_start).unwrap_or(0);
                carry.drain(..done.min(carry.len()));
                carry.extend_from_slice(chunk);
            }
            Ok(done) => {
                carry.clear();
                carry.extend_from_slice(chunk.get(done..).unwrap_or_default());
            }
            Err(_) => carry.clear(),
        }
        self.file.carry = carry;
        Ok(None)
    }

    /// Decodes the records of `self.block` into the output builders.
    fn decode_block(
        &mut self,
        source: BlockSource<'_>,
        window: &Window<'_>,
        rejected: &mut Vec<Rejected>,
    ) -> Result<(), CodecError> {
        let buf = match source {
            BlockSource::Input(region) => region,
            BlockSource::Splitter => &self.splitter.out[..],
        };
        let mut records = &self.block.records[..];
        let max = self.max_record as u64;
        if self.file.layout.is_none() {
            // A header line longer than the bound is a record like any other (as it is when
            // the splitter sees it): rejected, and the next line is the header.
            while let Some((long, rest)) = records
                .split_first()
                .filter(|(r, _)| r.raw_end - r.raw_start > max)
            {
                let start = window.skip_terminators(long.raw_start, long.raw_end);
                rejected.push(Rejected {
                    source: self.source.clone(),
                    line: self.file.lines.advance(window, start),
                    reason: line_too_long(self.max_record),
                    record: cut_text(&window.bytes(start, long.raw_end)),
                });
                records = rest;
            }
        }
        let layout = match &self.file.layout {
            Some(layout) => layout,
            None => {
                let Some((header, rest)) = records.split_first() else {
                    return Ok(());
                };
                records = rest;
                let layout = read_header(&self.block, buf, header, &self.columns).map_err(
                    |(names, problem)| {
                        let start = window.skip_terminators(header.raw_start, header.raw_end);
                        let file = self.source.clone();
                        let line = self.file.lines.advance(window, start);
                        match problem {
                            HeaderProblem::Missing(missing) => CodecError::MissingColumn {
                                file,
                                line,
                                header: names,
                                missing,
                            },
                            HeaderProblem::Twice(column) => {
                                CodecError::DuplicateColumn { file, line, column }
                            }
                        }
                    },
                );
                match layout {
                    Ok(layout) => self.file.layout.insert(layout),
                    Err(err) => {
                        self.file.failed = Some(err.clone());
                        return Err(err);
                    }
                }
            }
        };
        let verdicts = &mut self.verdicts;
        verdicts.ok.clear();
        verdicts.reasons.clear();
        for (row, record) in records.iter().enumerate() {
            // Only a line of a plain block can be too long here: the splitter stops before.
            let reason = if record.raw_end - record.raw_start > max {
                Some(line_too_long(self.max_record))
            } else if record.nfields != layout.fields {
                Some(format!(
                    "expected {} fields, found {}",
                    layout.fields, record.nfields
                ))
            } else {
                None
            };
            verdicts.ok.push(reason.is_none());
            verdicts.reasons.extend(reason.map(|r| (row, r)));
        }
        let has_text = self.columns.iter().any(|c| c.kind == ColumnKind::Utf8);
        let rows = Rows {
            block: &self.block,
            records,
            buf,
            utf8: has_text && text_is_utf8(&self.block, buf),
        };
        for ((column, builder), &field) in self
            .columns
            .iter()
            .zip(&mut self.output.columns)
            .zip(&layout.field_of)
        {
            decode_column(rows, field, column, builder, verdicts);
        }
        if let Some(lines) = &mut self.lines {
            lines.of_block.clear();
            let mut plain: Option<(u64, u32)> = None;
            for (record, ok) in records.iter().zip(&verdicts.ok) {
                let line = match plain {
                    // A plain block's records are single lines: the line follows from the
                    // newlines between them, counted by the split.
                    Some((line, newlines)) if record.newlines_before != u32::MAX => {
                        line + u64::from(record.newlines_before - newlines)
                    }
                    _ => {
                        let start = window.skip_terminators(record.raw_start, record.raw_end);
                        let line = self.file.lines.advance(window, start);
                        if record.newlines_before != u32::MAX {
                            plain = Some((line, record.newlines_before));
                        }
                        line
                    }
                };
                lines.of_block.push(line);
                if *ok {
                    lines.kept.push(line);
                }
            }
        }
        verdicts.reasons.sort_by_key(|(row, _)| *row);
        for (row, reason) in verdicts.reasons.drain(..) {
            let record = &records[row];
            let start = window.skip_terminators(record.raw_start, record.raw_end);
            let text = window.bytes(start, record.raw_end);
            let line = match &self.lines {
                Some(lines) => lines.of_block[row],
                None => self.file.lines.advance(window, start),
            };
            rejected.push(Rejected {
                source: self.source.clone(),
                line,
                reason,
                record: if text.len() > self.max_record {
                    cut_text(&text)
                } else {
                    String::from_utf8_lossy(&text).into_owned()
                },
            });
        }
        self.output.extend_keep(&verdicts.ok);
        Ok(())
    }
}

/// Which buffer the field ranges of the current block index.
#[derive(Clone, Copy)]
enum BlockSource<'a> {
    /// The input region given to `split_plain`.
    Input(&'a [u8]),
    /// The csv-core splitter's output buffer.
    Splitter,
}

/// Length of the run of complete lines at the start of `input` (at most about a block) that
/// `split_plain` can take, or `None` if that run is empty or contains a quote.
fn plain_lines(input: &[u8]) -> Option<usize> {
    let window = &input[..input.len().min(BLOCK_BYTES)];
    let last = memchr::memrchr2(b'\n', b'\r', window)?;
    let region = &input[..=last];
    is_plain(region).then_some(last + 1)
}

/// Why a header cannot be mapped to the schema.
enum HeaderProblem {
    /// A schema column is not in the header.
    Missing(String),
    /// A schema column is in the header twice: which one is meant is unclear.
    Twice(String),
}

/// Maps schema columns to header fields by trimmed name; on failure returns the header names
/// and the first problem.
fn read_header(
    block: &Block,
    buf: &[u8],
    header: &RecordMeta,
    columns: &[ColumnInfo],
) -> Result<Layout, (Vec<String>, HeaderProblem)> {
    let names: Vec<String> = (0..header.nfields)
        .map(|i| {
            String::from_utf8_lossy(block.field(buf, header, i))
                .trim()
                .to_owned()
        })
        .collect();
    let mut field_of = Vec::with_capacity(columns.len());
    for column in columns {
        match names.iter().position(|n| *n == column.name) {
            Some(_) if names.iter().filter(|n| **n == column.name).count() > 1 => {
                return Err((names, HeaderProblem::Twice(column.name.clone())));
            }
            Some(i) => field_of.push(i),
            None => return Err((names, HeaderProblem::Missing(column.name.clone()))),
        }
    }
    Ok(Layout {
        field_of,
        fields: header.nfields,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::StringArray;
    use arrow::compute::concat_batches;
    use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
    use arrow::record_batch::RecordBatch;
    use arrow::util::pretty::pretty_format_batches;

    use proptest::prelude::*;

    use super::*;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
            Field::new("sensor", DataType::Int64, true),
            Field::new("value", DataType::Float64, true),
            Field::new("ok", DataType::Boolean, true),
            Field::new("name", DataType::Utf8, true),
        ]))
    }

    fn decoder(has_header: bool) -> CsvDecoder {
        let mut d = CsvDecoder::new(
            schema(),
            CsvOptions {
                delimiter: b',',
                has_header,
            },
        );
        d.start_file("in.csv");
        d
    }

    /// Feeds `chunks` then finishes the file; returns all good rows and all rejects.
    fn run(d: &mut CsvDecoder, chunks: &[&[u8]]) -> (RecordBatch, Vec<Rejected>) {
        let mut batches = Vec::new();
        let mut rejected = Vec::new();
        for chunk in chunks {
            let out = d.decode(chunk).expect("decode");
            batches.extend(out.batch);
            rejected.extend(out.rejected);
        }
        let out = d.finish_file().expect("finish");
        batches.extend(out.batch);
        rejected.extend(out.rejected);
        let batch = concat_batches(&schema(), &batches).expect("same schema");
        (batch, rejected)
    }

    fn table(batch: &RecordBatch) -> String {
        pretty_format_batches(std::slice::from_ref(batch))
            .expect("printable")
            .to_string()
    }

    fn lines_and_reasons(rejected: &[Rejected]) -> Vec<(u64, &str, &str)> {
        rejected
            .iter()
            .map(|r| (r.line, r.reason.as_str(), r.record.as_str()))
            .collect()
    }

    const TRICKY: &[u8] = b"ts,sensor,value,ok,name\r\n\
        1700000000000,1,0.5,true,plain\r\n\
        1700000000001,2,1.5,false,\"two\r\nlines\"\r\n\
        \r\n\
        1700000000002,x,2.5,1,bad int\r\n\
        2023-11-14T22:13:20.123Z,4,3.5,0,\"quoted, \"\"comma\"\"\"\r\n\
        1700000000004,5,4.5\r\n\
        yesterday,6,5.5,TRUE,bad ts\n\
        \n\
        2023-11-14 22:13:20,7,,,\n\
        1700000000008,8,8.5,maybe,\"multi\nline\nbad bool\"\n\
        1700000000009,9,9.5,false,last";

    #[test]
    fn a_schema_column_named_twice_in_the_header_is_an_error() {
        let mut d = CsvDecoder::new(schema(), CsvOptions::default());
        d.start_file("dup.csv");
        let err = d
            .decode(b"ts,sensor,value,value,ok,name\n1,2,3,4,true,x\n")
            .expect_err("ambiguous");
        assert_eq!(
            err.to_string(),
            "dup.csv: line 1: header has column `value` twice: which one to read is unclear"
        );
    }

    #[test]
    fn bad_records_are_rejected_with_exact_lines_after_multiline_fields_and_crlf() {
        let (batch, rejected) = run(&mut decoder(true), &[TRICKY]);
        assert_eq!(
            lines_and_reasons(&rejected),
            [
                (
                    6,
                    "column `sensor`: `x` is not an int",
                    "1700000000002,x,2.5,1,bad int"
                ),
                (8, "expected 5 fields, found 3", "1700000000004,5,4.5"),
                (
                    9,
                    "column `ts`: `yesterday` is not a timestamp",
                    "yesterday,6,5.5,TRUE,bad ts"
                ),
                (
                    12,
                    "column `ok`: `maybe` is not a boolean",
                    "1700000000008,8,8.5,maybe,\"multi\nline\nbad bool\""
                ),
            ]
        );
        assert!(rejected.iter().all(|r| r.source == "in.csv"));
        let names = batch
            .column(4)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("Utf8 column");
        let names: Vec<_> = names.iter().map(|n| n.expect("no null names")).collect();
        assert_eq!(
            names,
            ["plain", "two\r\nlines", "quoted, \"comma\"", "", "last"]
        );
        let expected = "\
+-------------------------+--------+-------+-------+
| ts                      | sensor | value | ok    |
+-------------------------+--------+-------+-------+
| 2023-11-14T22:13:20     | 1      | 0.5   | true  |
| 2023-11-14T22:13:20.001 | 2      | 1.5   | false |
| 2023-11-14T22:13:20.123 | 4      | 3.5   | false |
| 2023-11-14T22:13:20     | 7      |       |       |
| 2023-11-14T22:13:20.009 | 9      | 9.5   | false |
+-------------------------+--------+-------+-------+";
        let batch = batch.project(&[0, 1, 2, 3]).expect("columns exist");
        assert_eq!(table(&batch), expected);
    }

    /// Rows whose `sensor` is the line they start on, among blank lines, CRLF, quoted fields
    /// over several lines, bad records and a record too long to keep.
    fn self_numbered(rows: u64) -> Vec<u8> {
        let mut text = String::from("ts,sensor,value,ok,name\n");
        let mut line = 2;
        for i in 0..rows {
            let (record, lines) = match i % 11 {
                0 => (format!("1,{line},1.5,true,\"two\nlines\""), 2),
                3 => (format!("1,{line},1.5,true,crlf\r\n"), 1),
                5 => ("\n\n".to_string(), 2),
                7 => (format!("1,{line},oops,true,bad"), 1),
                9 => (format!("1,{line},1.5,true,\"{}\"", "x".repeat(300)), 1),
                _ => (format!("1,{line},1.5,true,plain"), 1),
            };
            text.push_str(&record);
            if !record.ends_with('\n') {
                text.push('\n');
            }
            line += lines;
        }
        text.into_bytes()
    }

    #[test]
    fn recorded_lines_are_the_lines_rows_start_on_however_the_input_is_cut() {
        let input = self_numbered(500);
        for chunk in [1, 7, 64, 1000, input.len()] {
            let mut d = decoder(true).with_max_record_bytes(200);
            d.record_lines();
            let mut lines = Vec::new();
            let mut sensors = Vec::new();
            let mut take = |out: Decoded| {
                if let Some(b) = &out.batch {
                    let s = b
                        .column(1)
                        .as_any()
                        .downcast_ref::<arrow::array::Int64Array>()
                        .expect("ints");
                    sensors.extend(s.values().iter().map(|v| *v as u64));
                    assert_eq!(out.lines.len(), b.num_rows());
                }
                lines.extend(out.lines);
            };
            for piece in input.chunks(chunk) {
                take(d.decode(piece).expect("decode"));
            }
            take(d.finish_file().expect("finish"));
            assert!(sensors.len() > 300, "{}", sensors.len());
            assert_eq!(lines, sensors, "chunks of {chunk}");
        }
    }

    #[test]
    fn splitting_the_input_at_any_byte_gives_the_same_result_as_one_call() {
        let (whole, whole_rejected) = run(&mut decoder(true), &[TRICKY]);
        for cut in 0..=TRICKY.len() {
            let (batch, rejected) = run(&mut decoder(true), &[&TRICKY[..cut], &TRICKY[cut..]]);
            assert_eq!(batch, whole, "cut at {cut}");
            assert_eq!(rejected, whole_rejected, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = TRICKY.chunks(1).collect();
        let (batch, rejected) = run(&mut decoder(true), &bytes);
        assert_eq!(batch, whole);
        assert_eq!(rejected, whole_rejected);
    }

    #[test]
    fn many_blocks_of_mixed_plain_and_quoted_lines_decode_like_small_chunks() {
        let mut input = b"ts,sensor,value,ok,name\n".to_vec();
        for i in 0..40_000u64 {
            let line = match i % 997 {
                0 => format!("{i},{i},1.5,true,\"quoted\nnewline\"\r\n"),
                1 => format!("{i},oops,1.5,true,x\n"),
                2 => "\n\r\n".to_owned(),
                _ => format!(
                    "{},{i},{}.25,false,name{i}\n",
                    1_700_000_000_000 + i,
                    i % 100
                ),
            };
            input.extend_from_slice(line.as_bytes());
        }
        let (whole, whole_rejected) = run(&mut decoder(true), &[&input]);
        let chunks: Vec<&[u8]> = input.chunks(4093).collect();
        let (batch, rejected) = run(&mut decoder(true), &chunks);
        assert_eq!(batch, whole);
        assert_eq!(rejected, whole_rejected);
        assert_eq!(whole_rejected.len(), 41);
        // Line of input item i: after the header, one line per item, plus one more per
        // two-line quoted record before it and per pair of blank lines before it.
        let line_of = |i: u64| 2 + i + i.div_ceil(997) + (i + 994) / 997;
        assert_eq!(whole_rejected[0].line, line_of(1));
        assert_eq!(whole_rejected[40].line, line_of(39_881));
        assert_eq!(whole.num_rows(), 40_000 - 41 - 41);
    }

    #[test]
    fn header_columns_are_mapped_by_trimmed_name_and_extra_columns_are_ignored() {
        let input = b" name ,extra,value, ts ,ok,sensor\nn1,zzz,2.5,7,true,3\n";
        let (batch, rejected) = run(&mut decoder(true), &[input]);
        assert!(rejected.is_empty());
        let expected = "\
+-------------------------+--------+-------+------+------+
| ts                      | sensor | value | ok   | name |
+-------------------------+--------+-------+------+------+
| 1970-01-01T00:00:00.007 | 3      | 2.5   | true | n1   |
+-------------------------+--------+-------+------+------+";
        assert_eq!(table(&batch), expected);
    }

    #[test]
    fn a_header_missing_a_schema_column_is_a_fatal_error() {
        let mut d = decoder(true);
        let err = d
            .decode(b"ts,sensor,name,ok\n1,2,x,true\n")
            .expect_err("value is missing");
        assert_eq!(
            err.to_string(),
            "in.csv: line 1: header has no column `value` (header columns: ts, sensor, name, ok)"
        );
        assert!(d.decode(b"1,2,x,true\n").is_err(), "the file stays failed");
        d.start_file("next.csv");
        let out = d
            .decode(b"ts,sensor,value,ok,name\n1,2,3,true,x\n")
            .expect("new file");
        assert_eq!(out.num_rows(), 1);
    }

    #[test]
    fn without_a_header_columns_are_taken_by_position() {
        let (batch, rejected) = run(&mut decoder(false), &[b"5,6,7.5,false,x\n5,6\n"]);
        assert_eq!(batch.num_rows(), 1);
        assert_eq!(
            lines_and_reasons(&rejected),
            [(2, "expected 5 fields, found 2", "5,6")]
        );
    }

    #[test]
    fn empty_fields_are_null_except_for_strings() {
        let (batch, _) = run(&mut decoder(false), &[b",,,,\n\"\",\"\",\"\",\"\",\"\"\n"]);
        assert_eq!(batch.num_rows(), 2);
        for column in &batch.columns()[..4] {
            assert_eq!(column.null_count(), 2);
        }
        assert_eq!(batch.column(4).null_count(), 0);
    }

    #[test]
    fn a_last_record_without_newline_waits_for_finish_file() {
        let mut d = decoder(false);
        let out = d.decode(b"1,2,3,true,a\n4,5,6,false,b").expect("decode");
        assert_eq!(out.num_rows(), 1);
        assert_eq!(d.consumed_offset(), 13);
        let out = d.finish_file().expect("finish");
        assert_eq!(out.num_rows(), 1);
        assert_eq!(d.consumed_offset(), 26);
    }

    #[test]
    fn blank_lines_are_skipped_not_rejected() {
        let (batch, rejected) = run(
            &mut decoder(true),
            &[b"\n\r\nts,sensor,value,ok,name\n\n\n1,2,3,true,a\r\n\r\n\r\n1,x,3,true,a\n\n"],
        );
        assert_eq!(batch.num_rows(), 1);
        assert_eq!(
            lines_and_reasons(&rejected),
            [(9, "column `sensor`: `x` is not an int", "1,x,3,true,a")]
        );
    }

    #[test]
    fn the_consumed_offset_is_a_resume_point() {
        let input = b"ts,sensor,value,ok,name\n1,1,1,true,a\n2,2,2,true,\"b\nb\"\n3,3,3,true,c\n";
        let mut d = decoder(true);
        let first = d.decode(&input[..50]).expect("decode");
        let offset = usize::try_from(d.consumed_offset()).expect("small");
        assert_eq!(&input[..offset], b"ts,sensor,value,ok,name\n1,1,1,true,a\n");
        assert_eq!(first.num_rows(), 1);
        let mut resumed = decoder(false);
        let (rest, rejected) = run(&mut resumed, &[&input[offset..]]);
        assert!(rejected.is_empty());
        assert_eq!(rest.num_rows(), 2);
    }

    #[test]
    fn a_byte_order_mark_before_the_header_is_skipped() {
        let input = b"\xef\xbb\xbfts,sensor,value,ok,name\n1,1,1,true,a\n";
        let (batch, rejected) = run(
            &mut decoder(true),
            &[&input[..1], &input[1..2], &input[2..]],
        );
        assert!(rejected.is_empty());
        assert_eq!(batch.num_rows(), 1);
    }

    #[test]
    fn invalid_utf8_in_a_string_column_rejects_the_record() {
        let (batch, rejected) = run(&mut decoder(false), &[b"1,1,1,true,a\xffb\n"]);
        assert_eq!(batch.num_rows(), 0);
        assert_eq!(
            rejected[0].reason,
            "column `name`: `a\u{fffd}b` is not valid UTF-8"
        );
    }

    #[test]
    fn a_null_in_a_non_nullable_column_rejects_the_record() {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
        let mut d = CsvDecoder::new(schema, CsvOptions::default());
        let out = d.decode(b"a\n1\n\"\"\n3\n").expect("decode");
        assert_eq!(out.num_rows(), 2);
        assert_eq!(out.rejected[0].line, 3);
        assert_eq!(
            out.rejected[0].reason,
            "column `a`: null in a non-nullable column"
        );
    }

    #[test]
    fn an_unsupported_schema_type_fails_every_call() {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, true)]));
        let mut d = CsvDecoder::new(schema, CsvOptions::default());
        assert!(matches!(
            d.decode(b"a\n1\n"),
            Err(CodecError::UnsupportedType { .. })
        ));
        assert!(d.finish_file().is_err());
    }

    #[test]
    fn a_field_spanning_many_chunks_is_decoded_whole() {
        let big = "ab\n\"".repeat(250_000);
        let input = format!(
            "1,1,1,true,\"{}\"\n2,x,2,true,after",
            big.replace('"', "\"\"")
        );
        let chunks: Vec<&[u8]> = input.as_bytes().chunks(997).collect();
        let mut d = decoder(false).with_max_record_bytes(4 << 20);
        let (batch, rejected) = run(&mut d, &chunks);
        let names = batch
            .column(4)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("Utf8 column");
        assert_eq!(names.value(0), big);
        assert_eq!(rejected.len(), 1);
        assert_eq!(rejected[0].line, 250_002);
        assert_eq!(rejected[0].record, "2,x,2,true,after");
    }

    #[test]
    fn a_reserved_delimiter_fails_every_call() {
        let options = CsvOptions {
            delimiter: b'"',
            has_header: false,
        };
        let mut d = CsvDecoder::new(schema(), options);
        assert!(matches!(
            d.decode(b"1\n"),
            Err(CodecError::InvalidDelimiter { delimiter: b'"' })
        ));
    }

    #[test]
    fn other_delimiters_work_and_commas_are_then_data() {
        let mut d = CsvDecoder::new(
            schema(),
            CsvOptions {
                delimiter: b';',
                has_header: false,
            },
        );
        let (batch, rejected) = run(&mut d, &[b"1;2;3.5;true;a,b\n"]);
        assert!(rejected.is_empty());
        assert!(table(&batch).contains("| a,b  |"));
    }

    proptest! {
        #[test]
        fn any_bytes_decode_the_same_however_they_are_chunked(
            input in proptest::collection::vec(
                prop_oneof![
                    Just(b'1'), Just(b'x'), Just(b','), Just(b'"'), Just(b'\r'), Just(b'\n'),
                    Just(b' '), Just(0xff), Just(b't'), Just(b'-'),
                ],
                0..120,
            ),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
            has_header in any::<bool>(),
        ) {
            let schema = Arc::new(Schema::new(vec![
                Field::new("1", DataType::Int64, true),
                Field::new("x", DataType::Utf8, true),
            ]));
            let run = |chunks: &[&[u8]]| {
                let mut d = CsvDecoder::new(Arc::clone(&schema), CsvOptions { delimiter: b',', has_header });
                d.start_file("fuzz");
                let mut rows = Vec::new();
                let mut rejected = Vec::new();
                for chunk in chunks {
                    match d.decode(chunk) {
                        Ok(out) => {
                            rows.extend(out.batch);
                            rejected.extend(out.rejected);
                        }
                        Err(err) => return Err(err.to_string()),
                    }
                }
                let out = d.finish_file().map_err(|e| e.to_string())?;
                rows.extend(out.batch);
                rejected.extend(out.rejected);
                let batch = concat_batches(&schema, &rows).map_err(|e| e.to_string())?;
                Ok((batch, rejected, d.consumed_offset()))
            };
            let whole = run(&[&input]);
            let mut positions: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
            positions.sort_unstable();
            let mut chunks = Vec::new();
            let mut start = 0;
            for p in positions {
                chunks.push(&input[start..p]);
                start = p;
            }
            chunks.push(&input[start..]);
            prop_assert_eq!(run(&chunks), whole);
        }

        /// A block's text is checked for UTF-8 once; a field is valid on its own only when
        /// it does not cut a character. Here the delimiter is a UTF-8 continuation byte, so a
        /// line that is valid UTF-8 can still hold fields that are not: each line must be
        /// kept exactly when both its fields are valid UTF-8 by themselves.
        #[test]
        fn a_string_is_kept_exactly_when_it_is_utf8_by_itself(
            input in proptest::collection::vec(
                prop_oneof![
                    Just(b'a'), Just(b'\n'), Just(0xa9), Just(0xc3), Just(0xe2), Just(0x80),
                ],
                0..200,
            ),
        ) {
            let schema = Arc::new(Schema::new(vec![
                Field::new("a", DataType::Utf8, true),
                Field::new("b", DataType::Utf8, true),
            ]));
            let mut d = CsvDecoder::new(
                Arc::clone(&schema),
                CsvOptions { delimiter: 0xa9, has_header: false },
            );
            d.start_file("fuzz");
            let mut input = input;
            input.push(b'\n');
            let out = d.decode(&input).expect("no quote, no reserved delimiter");
            let mut batches: Vec<RecordBatch> = out.batch.into_iter().collect();
            batches.extend(d.finish_file().expect("finish").batch);
            let batch = concat_batches(&schema, &batches).expect("same schema");
            let decoded: Vec<(String, String)> = (0..batch.num_rows())
                .map(|row| {
                    let text = |column: usize| {
                        arrow::array::as_string_array(batch.column(column)).value(row).to_owned()
                    };
                    (text(0), text(1))
                })
                .collect();
            let expected: Vec<(String, String)> = input
                .split(|b| *b == b'\n')
                .filter(|line| !line.is_empty())
                .filter_map(|line| {
                    let fields: Vec<&[u8]> = line.split(|b| *b == 0xa9).collect();
                    match fields[..] {
                        [a, b] => Some((
                            std::str::from_utf8(a).ok()?.to_owned(),
                            std::str::from_utf8(b).ok()?.to_owned(),
                        )),
                        _ => None,
                    }
                })
                .collect();
            prop_assert_eq!(decoded, expected);
        }
    }
}
