//! JSON Lines encoding of record batches.
//!
//! Each row becomes one object with every column, in schema order:
//! `{"ts":1700000000000,"sensor":3,"value":50.0}`. Nulls are `null`. NaN and infinite
//! floats, which JSON numbers cannot express, are the strings `"NaN"`, `"Infinity"` and
//! `"-Infinity"`, as Flink's JSON format writes them (Jackson's `WRITE_NAN_AS_STRINGS`, on
//! by default) and as [`JsonDecoder`](super::JsonDecoder) reads them back: never `null`,
//! which is SQL's NULL. Strings are escaped as serde_json does
//! (`\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, other control characters as `\u00XX`; non-ASCII
//! text is written as is). Numbers are formatted as by [`CsvEncoder`](super::CsvEncoder),
//! which is valid JSON for finite values. Timestamps follow [`TimestampFormat`]: a number, or
//! an RFC 3339 string. A list of those types (a pattern's `array_agg` measure) is a JSON
//! array of its items written so: `[1,2,null]`. Columns of other types are written as
//! strings of their Arrow display text.

use arrow::record_batch::RecordBatch;

use arrow::array::Array;

use super::encode_cells::{Cell, Cells, NumberBuf};
use super::timestamp::Rfc3339Writer;
use super::TimestampFormat;

/// Writes record batches as JSON Lines.
#[derive(Debug)]
pub struct JsonLinesEncoder {
    format: TimestampFormat,
    rfc3339: Rfc3339Writer,
    text: String,
}

impl JsonLinesEncoder {
    /// An encoder writing timestamps in `ts` format.
    pub fn new(ts: TimestampFormat) -> Self {
        JsonLinesEncoder {
            format: ts,
            rfc3339: Rfc3339Writer::default(),
            text: String::new(),
        }
    }

    /// Appends one line per row of `batch` to `out`.
    pub fn encode(&mut self, batch: &RecordBatch, out: &mut Vec<u8>) {
        // `{"name":` for the first column, `,"name":` for the others.
        let keys: Vec<Vec<u8>> = batch
            .schema_ref()
            .fields()
            .iter()
            .enumerate()
            .map(|(i, field)| {
                let mut key = vec![if i == 0 { b'{' } else { b',' }];
                write_json_string(field.name(), &mut key);
                key.push(b':');
                key
            })
            .collect();
        let columns: Vec<Cells<'_>> = batch.columns().iter().map(|a| Cells::new(a)).collect();
        let mut num: NumberBuf = [0; lexical_core::BUFFER_SIZE];
        let mut text = std::mem::take(&mut self.text);
        for row in 0..batch.num_rows() {
            if columns.is_empty() {
                out.push(b'{');
            }
            for (key, column) in keys.iter().zip(&columns) {
                out.extend_from_slice(key);
                if let Cells::List(list, items) = column {
                    if list.is_null(row) {
                        out.extend_from_slice(b"null");
                        continue;
                    }
                    out.push(b'[');
                    for (n, i) in Cells::items(list, row).enumerate() {
                        if n > 0 {
                            out.push(b',');
                        }
                        let cell =
                            items.get(i, self.format, &mut self.rfc3339, &mut num, &mut text);
                        write_cell(cell, out);
                    }
                    out.push(b']');
                    continue;
                }
                let cell = column.get(row, self.format, &mut self.rfc3339, &mut num, &mut text);
                write_cell(cell, out);
            }
            out.extend_from_slice(b"}\n");
        }
        self.text = text;
    }
}

/// Writes one cell's JSON value.
fn write_cell(cell: Cell<'_>, out: &mut Vec<u8>) {
    match cell {
        Cell::Null => out.extend_from_slice(b"null"),
        Cell::NonFinite(text) => out.extend_from_slice(non_finite(text)),
        Cell::Bare(bytes) => out.extend_from_slice(bytes),
        Cell::Rfc3339(bytes) => {
            out.push(b'"');
            out.extend_from_slice(bytes);
            out.push(b'"');
        }
        Cell::Text(s) => write_json_string(s, out),
    }
}

/// The JSON string for a non-finite float, from its text (lexical-core's `NaN`, `inf`,
/// `-inf`): `"NaN"`, `"Infinity"`, `"-Infinity"`, as Jackson writes them.
fn non_finite(text: &[u8]) -> &'static [u8] {
    match text {
        b"inf" => b"\"Infinity\"",
        b"-inf" => b"\"-Infinity\"",
        _ => b"\"NaN\"",
    }
}

/// For each byte, the character after `\` that escapes it (`u` for `\u00XX`), or 0.
static ESCAPES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// Writes `s` as a quoted, escaped JSON string.
pub(crate) fn write_json_string(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = ESCAPES[usize::from(b)];
        if escape == 0 {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        if escape == b'u' {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(&[b'\\', escape]);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray, TimestampMillisecondArray,
    };
    use proptest::prelude::*;

    use super::*;

    fn encode(format: TimestampFormat, batch: &RecordBatch) -> String {
        let mut out = Vec::new();
        JsonLinesEncoder::new(format).encode(batch, &mut out);
        String::from_utf8(out).expect("JSON output is UTF-8")
    }

    #[test]
    fn rows_become_objects_with_nulls_as_null_and_non_finite_floats_as_strings() {
        let batch = RecordBatch::try_from_iter([
            (
                "ts",
                Arc::new(TimestampMillisecondArray::from(vec![
                    Some(1_700_000_000_000),
                    None,
                ])) as ArrayRef,
            ),
            ("sensor", Arc::new(Int64Array::from(vec![Some(3), None]))),
            (
                "value",
                Arc::new(Float64Array::from(vec![Some(50.0), Some(f64::INFINITY)])),
            ),
            ("ok", Arc::new(BooleanArray::from(vec![Some(false), None]))),
            (
                "na\"me",
                Arc::new(StringArray::from(vec![Some("q\"\\\n\u{1}é"), None])),
            ),
        ])
        .expect("valid batch");
        assert_eq!(
            encode(TimestampFormat::EpochMillis, &batch),
            "{\"ts\":1700000000000,\"sensor\":3,\"value\":50.0,\"ok\":false,\"na\\\"me\":\"q\\\"\\\\\\n\\u0001é\"}\n\
             {\"ts\":null,\"sensor\":null,\"value\":\"Infinity\",\"ok\":null,\"na\\\"me\":null}\n"
        );
        let first = encode(
            TimestampFormat::Rfc3339,
            &batch.slice(0, 1).project(&[0]).expect("col"),
        );
        assert_eq!(first, "{\"ts\":\"2023-11-14T22:13:20.000Z\"}\n");
    }

    proptest! {
        #[test]
        fn string_escaping_matches_serde_json(s in "\\PC*|[\\x00-\\x1f\"\\\\]*") {
            let mut ours = Vec::new();
            write_json_string(&s, &mut ours);
            let theirs = serde_json::to_string(&s).expect("strings serialize");
            prop_assert_eq!(String::from_utf8(ours).expect("UTF-8"), theirs);
        }
    }
}
