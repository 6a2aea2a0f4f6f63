//! CSV encoding of record batches.
//!
//! Output rules, chosen so that [`CsvDecoder`](super::CsvDecoder) reads every batch back
//! exactly (a `Utf8` null comes back as the empty string, per the decoding rules):
//!
//! * One header line (the field names) before the first batch's rows, if enabled; rows end
//!   with `\n`.
//! * Null: an empty field. The empty string: `""`. A row that would be an empty line (one
//!   column holding null) is written as `""`, so it is not skipped as a blank line.
//! * Text is quoted only when it contains the delimiter, `"`, `\r` or `\n`; quotes inside are
//!   doubled.
//! * `Int64`: decimal. `Float64`: shortest text that parses back to the same value, from
//!   lexical-core: whole numbers keep a fraction (`50.0`), large and small magnitudes use an
//!   exponent (`1.0e20`, `5.0e-324`), and non-finite values are `NaN`, `inf`, `-inf`.
//! * `Boolean`: `true` / `false`. Timestamps: see [`TimestampFormat`].
//! * A list of those types (a pattern's `array_agg` measure): as Trino prints an array,
//!   `[1, 2, NULL]`, its items written as above (strings unquoted) and NULL for a null item;
//!   a field that holds the delimiter is quoted as any text (`"[1, 2, NULL]"`). Not read
//!   back as a list.
//! * Columns of other types are written as Arrow display text.

use arrow::record_batch::RecordBatch;

use super::encode_cells::{Cell, Cells, NumberBuf};
use super::timestamp::Rfc3339Writer;
use super::TimestampFormat;

/// Writes record batches as CSV.
#[derive(Debug)]
pub struct CsvEncoder {
    delimiter: u8,
    header: bool,
    format: TimestampFormat,
    rfc3339: Rfc3339Writer,
    wrote_header: bool,
    /// Whether the delimiter can occur in number, boolean or timestamp text, which then needs
    /// the quoting check too.
    check_bare: bool,
    text: String,
}

impl CsvEncoder {
    /// An encoder writing `delimiter`-separated fields (not `"`, `\r` or `\n`), a header line
    /// first if `header`, and timestamps in `ts` format.
    pub fn new(delimiter: u8, header: bool, ts: TimestampFormat) -> Self {
        CsvEncoder {
            delimiter,
            header,
            format: ts,
            rfc3339: Rfc3339Writer::default(),
            wrote_header: false,
            check_bare: delimiter.is_ascii_alphanumeric() || b"+-.:".contains(&delimiter),
            text: String::new(),
        }
    }

    /// Appends the rows of `batch` to `out` (after the header line, on the first call).
    pub fn encode(&mut self, batch: &RecordBatch, out: &mut Vec<u8>) {
        if self.header && !self.wrote_header {
            self.wrote_header = true;
            let start = out.len();
            for (i, field) in batch.schema_ref().fields().iter().enumerate() {
                if i > 0 {
                    out.push(self.delimiter);
                }
                self.write_text(field.name(), out);
            }
            if out.len() == start {
                out.extend_from_slice(b"\"\"");
            }
            out.push(b'\n');
        }
        let columns: Vec<Cells<'_>> = batch.columns().iter().map(|a| Cells::new(a)).collect();
        let mut num: NumberBuf = [0; lexical_core::BUFFER_SIZE];
        let mut text = std::mem::take(&mut self.text);
        for row in 0..batch.num_rows() {
            let start = out.len();
            for (i, column) in columns.iter().enumerate() {
                if i > 0 {
                    out.push(self.delimiter);
                }
                match column.get(row, self.format, &mut self.rfc3339, &mut num, &mut text) {
                    Cell::Null => {}
                    Cell::Bare(bytes) | Cell::NonFinite(bytes) | Cell::Rfc3339(bytes) => {
                        if self.check_bare {
                            self.write_bytes(bytes, out);
                        } else {
                            out.extend_from_slice(bytes);
                        }
                    }
                    Cell::Text(s) => self.write_text(s, out),
                }
            }
            if out.len() == start {
                out.extend_from_slice(b"\"\"");
            }
            out.push(b'\n');
        }
        self.text = text;
    }

    fn write_text(&self, s: &str, out: &mut Vec<u8>) {
        if s.is_empty() {
            out.extend_from_slice(b"\"\"");
        } else {
            self.write_bytes(s.as_bytes(), out);
        }
    }

    /// Writes a field, quoting it if it holds the delimiter, a quote, `\r` or `\n`.
    fn write_bytes(&self, bytes: &[u8], out: &mut Vec<u8>) {
        let d = self.delimiter;
        if !bytes
            .iter()
            .any(|&b| b == d || b == b'"' || b == b'\n' || b == b'\r')
        {
            out.extend_from_slice(bytes);
            return;
        }
        out.push(b'"');
        let mut start = 0;
        for quote in memchr::memchr_iter(b'"', bytes) {
            out.extend_from_slice(&bytes[start..=quote]);
            out.push(b'"');
            start = quote + 1;
        }
        out.extend_from_slice(&bytes[start..]);
        out.push(b'"');
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, StringArray,
        TimestampMillisecondArray,
    };

    use super::*;

    fn batch() -> RecordBatch {
        RecordBatch::try_from_iter([
            (
                "ts",
                Arc::new(TimestampMillisecondArray::from(vec![
                    Some(1_700_000_000_123),
                    None,
                ])) as ArrayRef,
            ),
            ("sensor", Arc::new(Int64Array::from(vec![Some(-3), None]))),
            (
                "value",
                Arc::new(Float64Array::from(vec![Some(50.0), Some(f64::NAN)])),
            ),
            ("ok", Arc::new(BooleanArray::from(vec![Some(true), None]))),
            (
                "name",
                Arc::new(StringArray::from(vec![Some("a,\"b\"\nc"), Some("")])),
            ),
        ])
        .expect("valid batch")
    }

    fn encode(encoder: &mut CsvEncoder, batch: &RecordBatch) -> String {
        let mut out = Vec::new();
        encoder.encode(batch, &mut out);
        String::from_utf8(out).expect("CSV output is UTF-8")
    }

    #[test]
    fn rows_follow_one_header_and_quote_only_when_needed() {
        let mut encoder = CsvEncoder::new(b',', true, TimestampFormat::EpochMillis);
        assert_eq!(
            encode(&mut encoder, &batch()),
            "ts,sensor,value,ok,name\n1700000000123,-3,50.0,true,\"a,\"\"b\"\"\nc\"\n,,NaN,,\"\"\n"
        );
        assert_eq!(
            encode(&mut encoder, &batch().slice(1, 1)),
            ",,NaN,,\"\"\n",
            "the header is written once"
        );
    }

    #[test]
    fn rfc3339_timestamps_use_milliseconds_and_z() {
        let mut encoder = CsvEncoder::new(b';', false, TimestampFormat::Rfc3339);
        assert_eq!(
            encode(&mut encoder, &batch()),
            "2023-11-14T22:13:20.123Z;-3;50.0;true;a,\"b\"\nc\n;;NaN;;\"\"\n"
                .replace("a,\"b\"\nc", "\"a,\"\"b\"\"\nc\"")
        );
    }

    #[test]
    fn a_delimiter_that_occurs_in_numbers_forces_quoting_them() {
        let mut encoder = CsvEncoder::new(b'-', false, TimestampFormat::Rfc3339);
        let out = encode(
            &mut encoder,
            &batch().slice(0, 1).project(&[0, 1]).expect("cols"),
        );
        assert_eq!(out, "\"2023-11-14T22:13:20.123Z\"-\"-3\"\n");
    }

    #[test]
    fn a_single_null_column_row_is_not_an_empty_line() {
        let batch = RecordBatch::try_from_iter([(
            "a",
            Arc::new(Int64Array::from(vec![None, Some(1)])) as ArrayRef,
        )])
        .expect("valid batch");
        let mut encoder = CsvEncoder::new(b',', false, TimestampFormat::EpochMillis);
        assert_eq!(encode(&mut encoder, &batch), "\"\"\n1\n");
    }

    #[test]
    fn other_column_types_are_written_as_display_text() {
        let batch = RecordBatch::try_from_iter([(
            "a",
            Arc::new(Int32Array::from(vec![Some(7), None])) as ArrayRef,
        )])
        .expect("valid batch");
        let mut encoder = CsvEncoder::new(b',', true, TimestampFormat::EpochMillis);
        assert_eq!(encode(&mut encoder, &batch), "a\n7\n\"\"\n");
    }
}
