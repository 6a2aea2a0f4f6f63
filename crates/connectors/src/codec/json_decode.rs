//! JSON Lines decoding into Arrow batches, one line at a time with serde_json, so that a bad
//! line is rejected alone, with its line number and a reason naming the column.
//!
//! Each line holds one JSON object. Members are matched to schema columns by exact name;
//! unknown members are ignored; a missing member or `null` is null. Blank (whitespace-only)
//! lines are skipped, `\r\n` endings are accepted, and a UTF-8 byte-order mark at the start of
//! a file is skipped. Values must have their column's JSON type; nothing is coerced:
//!
//! * `Int64`: a whole number within `i64`, also written with an exponent (`1e3`); `4.5` and
//!   `"3"` are rejected.
//! * `Float64`: any number (integers included), parsed exactly (correctly rounded); and
//!   the strings `"NaN"`, `"Infinity"`, `"-Infinity"`, which JSON numbers cannot express,
//!   as anduin's and Flink's JSON writers write non-finite values (no other string).
//! * `Boolean`: `true` / `false`.
//! * `Utf8`: a string.
//! * Timestamps: a whole number (epoch milliseconds) or an RFC 3339 / ISO 8601 string (see
//!   [`super::timestamp`]).
//!
//! A line is rejected when it is not valid UTF-8, not valid JSON (serde_json's strict
//! grammar; nesting deeper than 128 levels included; `NaN`, `Infinity` and numbers too large
//! for a float, such as `1e400`, included), not an object, has a value of the wrong type, or
//! a null in a non-nullable column or the event-time column. A line longer than the bound
//! ([`JsonDecoder::with_max_record_bytes`], 1 MiB by default) is rejected without being
//! buffered whole: only its start is kept, for the reject.

use arrow::datatypes::SchemaRef;
use serde_json::Value;

use super::batch_builder::{BatchBuilder, ColumnBuilder};
use super::bom::{BomSkipper, BomStep};
use super::column::{resolve_columns, ColumnInfo, ColumnKind};
use super::long_record::{cut_text, line_too_long, Skipping, DEFAULT_MAX_RECORD_BYTES, TEXT_MAX};
use super::timestamp::parse_datetime_ms;
use super::{CodecError, Decoded, Rejected};

/// Decodes JSON Lines files, fed in chunks, into batches of a fixed schema.
#[derive(Debug)]
pub struct JsonDecoder {
    columns: Vec<ColumnInfo>,
    /// The output columns of the current call.
    builder: BatchBuilder,
    /// Set when the schema has an unsupported type; returned by every call.
    schema_error: Option<CodecError>,
    source: String,
    file: FileState,
    /// The longest line kept, in bytes.
    max_line: usize,
}

/// Where the decoder stands within the current file.
#[derive(Debug, Default)]
struct FileState {
    bom: BomSkipper,
    /// File offset just past the last complete line.
    consumed: u64,
    /// The start of an incomplete line.
    carry: Vec<u8>,
    /// Number of complete lines seen.
    lines: u64,
    /// A line too long to keep, being dropped up to its end (it starts at `consumed`).
    skipping: Option<Skipping>,
}

/// A non-blank line of the current call.
#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    /// 1-based line number in the file.
    number: u64,
    /// The line without its `\n` or `\r\n`.
    text: &'a [u8],
}

impl JsonDecoder {
    /// A decoder for `schema`, positioned at the start of an unnamed file (see
    /// [`JsonDecoder::start_file`]). A schema column of an unsupported type makes every later
    /// call return [`CodecError::UnsupportedType`].
    pub fn new(schema: SchemaRef) -> Self {
        let (columns, schema_error) = match resolve_columns(&schema) {
            Ok(columns) => (columns, None),
            Err(err) => (Vec::new(), Some(err)),
        };
        JsonDecoder {
            builder: BatchBuilder::new(schema, &columns),
            columns,
            schema_error,
            source: String::new(),
            file: FileState::default(),
            max_line: DEFAULT_MAX_RECORD_BYTES,
        }
    }

    /// Bounds a line to `max` bytes (at least 1, without its terminator): a longer one is
    /// rejected, and never buffered whole. The default is 1 MiB.
    #[must_use]
    pub fn with_max_record_bytes(mut self, max: usize) -> Self {
        self.max_line = max.max(1);
        self
    }

    /// Makes schema column `column` the event time: a line where it is null or missing is
    /// rejected ("event-time column `ts` is null or missing"), even if the column is nullable.
    #[must_use]
    pub fn with_event_time(mut self, column: usize) -> Self {
        if let Some(c) = self.columns.get_mut(column) {
            c.event_time = true;
        }
        self
    }

    /// Starts a new file/stream named `source` (used in rejects); resets the line counter and
    /// byte offset. An incomplete last line of the previous file is dropped, so call
    /// [`JsonDecoder::finish_file`] first.
    pub fn start_file(&mut self, source: &str) {
        source.clone_into(&mut self.source);
        self.file = FileState::default();
    }

    /// Feeds the next bytes of the current file. Decodes every complete line; an incomplete
    /// trailing line is kept internally and completed by later bytes.
    pub fn decode(&mut self, bytes: &[u8]) -> Result<Decoded, CodecError> {
        self.check()?;
        match self.file.bom.feed(bytes) {
            BomStep::Wait => Ok(Decoded::default()),
            BomStep::Pass { bytes, skipped } => {
                self.file.consumed += skipped;
                self.decode_chunk(&bytes, false)
            }
        }
    }

    /// End of the current file: decodes a last line that has no trailing newline.
    pub fn finish_file(&mut self) -> Result<Decoded, CodecError> {
        self.check()?;
        let held = self.file.bom.finish();
        self.decode_chunk(&held, true)
    }

    /// Bytes of the current file consumed by complete lines so far (a resume position for
    /// later checkpointing).
    pub fn consumed_offset(&self) -> u64 {
        self.file.consumed
    }

    /// Stands at `offset` of the current file, the start of line `line`, without reading the
    /// bytes before it (a split of a file read in parallel starts there).
    pub(crate) fn jump_to(&mut self, offset: u64, line: u64) {
        self.file.bom.finish();
        self.file.carry.clear();
        self.file.skipping = None;
        self.file.consumed = offset;
        self.file.lines = line.saturating_sub(1);
    }

    /// The bytes the decoder holds for a line in progress, to test that they stay bounded.
    #[cfg(test)]
    pub(crate) fn buffered_bytes(&self) -> usize {
        self.file.carry.capacity()
    }

    fn check(&self) -> Result<(), CodecError> {
        match &self.schema_error {
            Some(err) => Err(err.clone()),
            None => Ok(()),
        }
    }

    /// Decodes the complete lines that `chunk` ends, together with the carried start of the
    /// first one; at the end of the file, also the unterminated last line.
    fn decode_chunk(&mut self, chunk: &[u8], at_end: bool) -> Result<Decoded, CodecError> {
        let mut rejected = Vec::new();
        let mut rest = chunk;
        if let Some(skip) = self.file.skipping.as_mut() {
            let (after, terminated) = match skip.scan(rest, false) {
                Some(i) => (i + 1, true),
                None if at_end => (rest.len(), false),
                None => return Ok(Decoded::default()),
            };
            rest = &rest[after..];
            rejected.push(self.end_skip(terminated));
        }
        let mut head = Vec::new();
        if !self.file.carry.is_empty() {
            let end = match memchr::memchr(b'\n', rest) {
                Some(newline) => newline + 1,
                None if at_end => rest.len(),
                None => {
                    self.carry_or_skip(rest);
                    return Ok(Decoded {
                        batch: None,
                        rejected,
                        lines: Vec::new(),
                    });
                }
            };
            head = std::mem::take(&mut self.file.carry);
            head.extend_from_slice(&rest[..end]);
            rest = &rest[end..];
        }
        let mut lines = Vec::new();
        self.split_lines(&head, at_end, &mut lines);
        let used = self.split_lines(rest, at_end, &mut lines);
        self.carry_or_skip(&rest[used..]);
        let mut decoded = self.decode_lines(&lines)?;
        rejected.append(&mut decoded.rejected);
        decoded.rejected = rejected;
        Ok(decoded)
    }

    /// Keeps `tail`, the start of a line, after the carried start; or, when that makes the
    /// line longer than the bound, starts dropping it.
    fn carry_or_skip(&mut self, tail: &[u8]) {
        let carry = &mut self.file.carry;
        if carry.len() + tail.len() <= self.max_line {
            carry.extend_from_slice(tail);
            return;
        }
        let seen = (carry.len() + tail.len()) as u64;
        let mut prefix = std::mem::take(carry);
        prefix.truncate(TEXT_MAX);
        let room = TEXT_MAX - prefix.len();
        prefix.extend_from_slice(tail.get(..room).unwrap_or(tail));
        self.file.skipping = Some(Skipping::new(
            self.file.lines + 1,
            self.file.consumed,
            &prefix,
            self.file.consumed + seen,
        ));
    }

    /// The line too long to keep has ended (at its `\n` if `terminated`, else at the end of
    /// the file): its reject.
    fn end_skip(&mut self, terminated: bool) -> Rejected {
        let mut skip = self
            .file
            .skipping
            .take()
            .expect("called while skipping a line");
        if terminated {
            skip.drop_cr();
        }
        self.file.lines += 1;
        self.file.consumed = skip.pos + u64::from(terminated);
        skip.reject(&self.source, self.max_line)
    }

    /// Appends the non-blank lines of `bytes` (which starts at a line start) to `lines`:
    /// every `\n`-terminated one, and the unterminated rest too if `at_end`. Returns the
    /// number of bytes consumed.
    fn split_lines<'a>(
        &mut self,
        bytes: &'a [u8],
        at_end: bool,
        lines: &mut Vec<Line<'a>>,
    ) -> usize {
        let mut start = 0;
        let mut push = |file: &mut FileState, raw: &'a [u8]| {
            file.lines += 1;
            let text = raw.strip_suffix(b"\r").unwrap_or(raw);
            if !text.iter().all(u8::is_ascii_whitespace) {
                lines.push(Line {
                    number: file.lines,
                    text,
                });
            }
        };
        for newline in memchr::memchr_iter(b'\n', bytes) {
            push(&mut self.file, &bytes[start..newline]);
            start = newline + 1;
        }
        if at_end && start < bytes.len() {
            push(&mut self.file, &bytes[start..]);
            start = bytes.len();
        }
        self.file.consumed += start as u64;
        start
    }

    /// Decodes `lines` into one batch of the good ones plus a reject for each bad one.
    fn decode_lines(&mut self, lines: &[Line<'_>]) -> Result<Decoded, CodecError> {
        let mut rejected = Vec::new();
        let mut kept = Vec::new();
        let mut cells = Vec::with_capacity(self.columns.len());
        for line in lines {
            cells.clear();
            if line.text.len() > self.max_line {
                rejected.push(Rejected {
                    source: self.source.clone(),
                    line: line.number,
                    reason: line_too_long(self.max_line),
                    record: cut_text(line.text),
                });
                continue;
            }
            match self.decode_line(line.text, &mut cells) {
                Ok(()) => {
                    for (builder, cell) in self.builder.columns.iter_mut().zip(&cells) {
                        cell.append_to(builder);
                    }
                    self.builder.push_keep(true);
                    kept.push(line.number);
                }
                Err(reason) => rejected.push(Rejected {
                    source: self.source.clone(),
                    line: line.number,
                    reason,
                    record: String::from_utf8_lossy(line.text).into_owned(),
                }),
            }
        }
        let batch = self.builder.finish(&self.source)?;
        Ok(Decoded {
            batch,
            rejected,
            lines: kept,
        })
    }

    /// Parses one line into one cell per column, or says why the line is rejected.
    fn decode_line(&self, text: &[u8], cells: &mut Vec<Cell>) -> Result<(), String> {
        let text = std::str::from_utf8(text)
            .map_err(|e| format!("invalid UTF-8 at byte {}", e.valid_up_to() + 1))?;
        let value: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
        let Value::Object(object) = value else {
            return Err(format!(
                "expected a JSON object, found {}",
                json_kind(&value)
            ));
        };
        for column in &self.columns {
            let cell = match object.get(&column.name) {
                None | Some(Value::Null) => Cell::Null,
                Some(v) => cell(column.kind, v)
                    .map_err(|problem| format!("column `{}`: {problem}", column.name))?,
            };
            if matches!(cell, Cell::Null) && column.event_time {
                return Err(format!(
                    "event-time column `{}` is null or missing",
                    column.name
                ));
            }
            if matches!(cell, Cell::Null) && !column.nullable {
                return Err(format!(
                    "column `{}`: null or missing, but the column is not nullable",
                    column.name
                ));
            }
            cells.push(cell);
        }
        Ok(())
    }
}

/// One decoded value, before it is appended to its column.
#[derive(Debug, Clone)]
enum Cell {
    Null,
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
}

impl Cell {
    fn append_to(&self, builder: &mut ColumnBuilder) {
        match (builder, self) {
            (ColumnBuilder::Int64(b), Cell::Int(v)) => b.append_value(*v),
            (ColumnBuilder::TimestampMs(b), Cell::Int(v)) => b.append_value(*v),
            (ColumnBuilder::Float64(b), Cell::Float(v)) => b.append_value(*v),
            (ColumnBuilder::Boolean(b), Cell::Bool(v)) => b.append_value(*v),
            (ColumnBuilder::Utf8(b), Cell::Str(v)) => b.append_value(v),
            (builder, _) => builder.append_null(),
        }
    }
}

/// The cell of a column of `kind` for the JSON value `v`, or what is wrong with `v`.
fn cell(kind: ColumnKind, v: &Value) -> Result<Cell, String> {
    let wrong = || {
        format!(
            "expected {}, found {} {}",
            kind.noun(),
            json_kind(v),
            excerpt(v)
        )
    };
    match (kind, v) {
        (ColumnKind::Int64 | ColumnKind::TimestampMs, Value::Number(n)) => {
            // A whole number written with an exponent (`1.7e12`) is still a whole number.
            const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
            match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => Ok(Cell::Int(i)),
                // Exclusive at -2^63 too: a whole number below the range that is not an i64
                // reaches here rounded, and the numbers just below -2^63 round to it.
                (None, Some(f)) if f.fract() == 0.0 && f > -LIMIT && f < LIMIT => {
                    Ok(Cell::Int(f as i64))
                }
                // Beyond u64, the number was read as a float: it is shown as one, not as
                // its rounded digits (probe40 L10: `99999999999999999999` read `1e+20`).
                (None, Some(f)) if f.fract() == 0.0 => Err(match n.as_u64() {
                    Some(u) => format!("{u} is out of range for {}", kind.noun()),
                    None => format!(
                        "a number of about {f:e} is out of range for {}",
                        kind.noun()
                    ),
                }),
                _ => Err(format!(
                    "{n} is not a whole number, as {} must be",
                    kind.noun()
                )),
            }
        }
        (ColumnKind::TimestampMs, Value::String(s)) => parse_datetime_ms(s)
            .map(Cell::Int)
            .ok_or_else(|| format!("{} is not an RFC 3339 timestamp", excerpt(v))),
        (ColumnKind::Float64, Value::Number(n)) => n.as_f64().map(Cell::Float).ok_or_else(wrong),
        (ColumnKind::Float64, Value::String(s)) => match s.as_str() {
            "NaN" => Ok(Cell::Float(f64::NAN)),
            "Infinity" => Ok(Cell::Float(f64::INFINITY)),
            "-Infinity" => Ok(Cell::Float(f64::NEG_INFINITY)),
            _ => Err(wrong()),
        },
        (ColumnKind::Boolean, Value::Bool(b)) => Ok(Cell::Bool(*b)),
        (ColumnKind::Utf8, Value::String(s)) => Ok(Cell::Str(s.clone())),
        _ => Err(wrong()),
    }
}

/// "an array", "a string", … for messages.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The value as JSON, cut to a readable length.
fn excerpt(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 40 {
        let head: String = text.chars().take(37).collect();
        format!("{head}...")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Float64Array, Int64Array};
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

    fn decoder() -> JsonDecoder {
        let mut d = JsonDecoder::new(schema());
        d.start_file("in.jsonl");
        d
    }

    fn run(d: &mut JsonDecoder, chunks: &[&[u8]]) -> (RecordBatch, Vec<Rejected>) {
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
        (
            concat_batches(&schema(), &batches).expect("same schema"),
            rejected,
        )
    }

    fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> &'a T {
        batch
            .column_by_name(name)
            .expect("schema column")
            .as_any()
            .downcast_ref::<T>()
            .expect("column type")
    }

    const INPUT: &[u8] =
        br#"{"ts": 1700000000000, "sensor": 1, "value": 0.5, "ok": true, "name": "a"}
{"ts": "2023-11-14T22:13:20.123Z", "sensor": 2, "extra": {"x": [1, 2]}, "name": "b\"\u00e9"}
{"ts": 1700000000002, "sensor": "3"}

   
{"sensor": 4.5}
[1, 2]
{"sensor": 5, "value": 7}
{"sensor": 6,
{"ts": "yesterday"}
{"ok": 1}
{"name": 5}
{"sensor": 99999999999999999999}
{"sensor": null, "value": null, "ok": false, "name": null, "ts": null}
{"sensor": 7}
{"sensor": 8} {"sensor": 9}
{"sensor": 1, "value": 2,}
nonsense
"text""#;

    #[test]
    fn a_whole_number_just_below_the_int_range_is_out_of_range_not_clamped() {
        let input = "{\"sensor\": -9223372036854775808}\n\
            {\"sensor\": -9223372036854775809}\n\
            {\"sensor\": -9223372036854776808}\n\
            {\"sensor\": 9223372036854775808}\n";
        let (batch, rejected) = run(&mut decoder(), &[input.as_bytes()]);
        let sensors: Vec<i64> = column::<Int64Array>(&batch, "sensor")
            .iter()
            .map(|v| v.expect("a value"))
            .collect();
        assert_eq!(sensors, vec![i64::MIN]);
        let lines: Vec<u64> = rejected.iter().map(|r| r.line).collect();
        assert_eq!(lines, vec![2, 3, 4]);
        assert!(
            rejected.iter().all(|r| r.reason.contains("out of range")),
            "{rejected:?}"
        );
    }

    #[test]
    fn bad_lines_are_rejected_with_line_numbers_and_reasons_naming_the_column() {
        let (batch, rejected) = run(&mut decoder(), &[INPUT]);
        let got: Vec<_> = rejected
            .iter()
            .map(|r| (r.line, r.reason.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (3, "column `sensor`: expected an int, found a string \"3\""),
                (
                    6,
                    "column `sensor`: 4.5 is not a whole number, as an int must be"
                ),
                (7, "expected a JSON object, found an array"),
                (
                    9,
                    "invalid JSON: EOF while parsing a value at line 1 column 13"
                ),
                (
                    10,
                    "column `ts`: \"yesterday\" is not an RFC 3339 timestamp"
                ),
                (11, "column `ok`: expected a boolean, found a number 1"),
                (12, "column `name`: expected a string, found a number 5"),
                (
                    13,
                    "column `sensor`: a number of about 1e20 is out of range for an int"
                ),
                (16, "invalid JSON: trailing characters at line 1 column 15"),
                (17, "invalid JSON: trailing comma at line 1 column 26"),
                (18, "invalid JSON: expected ident at line 1 column 2"),
                (19, "expected a JSON object, found a string"),
            ]
        );
        assert_eq!(rejected[2].record, "[1, 2]");
        assert!(rejected.iter().all(|r| r.source == "in.jsonl"));
        let expected = "\
+-------------------------+--------+-------+-------+------+
| ts                      | sensor | value | ok    | name |
+-------------------------+--------+-------+-------+------+
| 2023-11-14T22:13:20     | 1      | 0.5   | true  | a    |
| 2023-11-14T22:13:20.123 | 2      |       |       | b\"é  |
|                         | 5      | 7.0   |       |      |
|                         |        |       | false |      |
|                         | 7      |       |       |      |
+-------------------------+--------+-------+-------+------+";
        let table = pretty_format_batches(&[batch])
            .expect("printable")
            .to_string();
        assert_eq!(table, expected);
    }

    #[test]
    fn splitting_the_input_at_any_byte_gives_the_same_result_as_one_call() {
        let (whole, whole_rejected) = run(&mut decoder(), &[INPUT]);
        for cut in 0..=INPUT.len() {
            let (batch, rejected) = run(&mut decoder(), &[&INPUT[..cut], &INPUT[cut..]]);
            assert_eq!(batch, whole, "cut at {cut}");
            assert_eq!(rejected, whole_rejected, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = INPUT.chunks(1).collect();
        let (batch, rejected) = run(&mut decoder(), &bytes);
        assert_eq!(batch, whole);
        assert_eq!(rejected, whole_rejected);
    }

    #[test]
    fn each_bad_line_among_many_good_ones_is_found_and_the_good_ones_keep_their_order() {
        let last = 3000u64;
        let bad = [1, 2, 50, 51, 99, 137, 1024, 1025, 2049, last];
        let input: String = (1..=last)
            .map(|n| match n {
                _ if !bad.contains(&n) => format!("{{\"sensor\": {n}}}\n"),
                137 | 1025 => "{\"sensor\": 1,\n".to_owned(),
                _ if n % 2 == 0 => format!("{{\"sensor\": {n}, \"ok\": \"yes\"}}\n"),
                _ => format!("{{\"sensor\": {n}, \"ts\": 1e300}}\n"),
            })
            .collect();
        let (batch, rejected) = run(&mut decoder(), &[input.as_bytes()]);
        let lines: Vec<u64> = rejected.iter().map(|r| r.line).collect();
        assert_eq!(lines, bad);
        assert_eq!(
            rejected[0].reason,
            "column `ts`: a number of about 1e300 is out of range for a timestamp"
        );
        assert_eq!(
            rejected[1].reason,
            "column `ok`: expected a boolean, found a string \"yes\""
        );
        let sensors: Vec<i64> = column::<Int64Array>(&batch, "sensor")
            .iter()
            .map(|v| v.expect("every good line has a sensor"))
            .collect();
        let good: Vec<i64> = (1..=last)
            .filter(|n| !bad.contains(n))
            .map(|n| i64::try_from(n).expect("small"))
            .collect();
        assert_eq!(sensors, good);
    }

    #[test]
    fn crlf_endings_and_a_last_line_without_newline_are_handled() {
        let mut d = decoder();
        let out = d
            .decode(b"{\"sensor\": 1}\r\n\r\n{\"sensor\": x}\r\n{\"sensor\": 3}")
            .expect("decode");
        assert_eq!(out.num_rows(), 1);
        assert_eq!(out.rejected.len(), 1);
        assert_eq!(out.rejected[0].line, 3);
        assert_eq!(out.rejected[0].record, "{\"sensor\": x}");
        assert_eq!(d.consumed_offset(), 32);
        let out = d.finish_file().expect("finish");
        assert_eq!(out.num_rows(), 1);
        assert_eq!(d.consumed_offset(), 45);
    }

    #[test]
    fn a_bom_at_the_start_of_a_file_is_skipped_and_counted_in_the_offset() {
        let mut d = decoder();
        let out = d.decode(b"\xef\xbb").expect("decode");
        assert_eq!(out.num_rows(), 0);
        let out = d.decode(b"\xbf{\"sensor\": 1}\n").expect("decode");
        assert_eq!((out.num_rows(), out.rejected.len()), (1, 0));
        assert_eq!(d.consumed_offset(), 17);
    }

    #[test]
    fn non_finite_floats_are_read_from_the_strings_flink_writes_and_no_other() {
        let (batch, rejected) = run(
            &mut decoder(),
            &[b"{\"value\": \"NaN\"}\n{\"value\": \"Infinity\"}\n{\"value\": \"-Infinity\"}\n{\"value\": \"3.5\"}\n{\"value\": \"nan\"}\n"],
        );
        let values = column::<Float64Array>(&batch, "value");
        assert_eq!(values.len(), 3);
        assert!(values.value(0).is_nan());
        assert_eq!(values.value(1), f64::INFINITY);
        assert_eq!(values.value(2), f64::NEG_INFINITY);
        assert_eq!(rejected.len(), 2, "{rejected:?}");
    }

    #[test]
    fn floats_are_parsed_exactly_and_accept_integers() {
        let (batch, rejected) = run(
            &mut decoder(),
            &[b"{\"value\": 0.30000000000000004}\n{\"value\": 5}\n{\"value\": 2.2250738585072014e-308}\n{\"value\": 9007199254740993}\n"],
        );
        assert!(rejected.is_empty());
        let values = column::<Float64Array>(&batch, "value");
        assert_eq!(
            values.values().as_ref(),
            [
                0.30000000000000004,
                5.0,
                2.2250738585072014e-308,
                9007199254740992.0
            ]
        );
    }

    #[test]
    fn timestamps_are_epoch_milliseconds_or_rfc_3339_text() {
        let (batch, rejected) = run(
            &mut decoder(),
            &[br#"{"ts": 1.7e12}
{"ts": "2023-11-14T22:13:20.001Z"}
{"ts": "2023-11-14 22:13:20.002"}
{"ts": -1}
{"ts": "1700000000000"}
"#],
        );
        let ts: Vec<_> = batch
            .column_by_name("ts")
            .expect("ts")
            .as_any()
            .downcast_ref::<arrow::array::TimestampMillisecondArray>()
            .expect("timestamps")
            .iter()
            .collect();
        assert_eq!(
            ts,
            [
                Some(1_700_000_000_000),
                Some(1_700_000_000_001),
                Some(1_700_000_000_002),
                Some(-1)
            ]
        );
        assert_eq!(
            rejected.len(),
            1,
            "a number in a string is not a timestamp: {rejected:?}"
        );
        assert_eq!(rejected[0].line, 5);
    }

    #[test]
    fn a_null_in_a_non_nullable_column_rejects_the_line() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("b", DataType::Utf8, false),
        ]));
        let mut d = JsonDecoder::new(Arc::clone(&schema));
        let out = d
            .decode(b"{\"a\": 1, \"b\": \"x\"}\n{}\n{\"a\": null, \"b\": \"y\"}\n{\"a\": 4, \"b\": \"z\"}\n{\"a\": 5}\n")
            .expect("decode");
        let batch = out.batch.expect("two good rows");
        assert_eq!(batch.schema(), schema);
        assert_eq!(batch.num_rows(), 2);
        let got: Vec<_> = out.rejected.iter().map(|r| r.line).collect();
        assert_eq!(got, [2, 3, 5]);
        assert_eq!(
            out.rejected[2].reason,
            "column `b`: null or missing, but the column is not nullable"
        );
    }

    #[test]
    fn invalid_utf8_rejects_the_line() {
        let (_, rejected) = run(
            &mut decoder(),
            &[b"{\"name\": \"a\xffb\"}\n{\"sensor\": 1, \"x\": \"\xc3\"}\n\xff\n"],
        );
        let got: Vec<_> = rejected
            .iter()
            .map(|r| (r.line, r.reason.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (1, "invalid UTF-8 at byte 12"),
                (2, "invalid UTF-8 at byte 21"),
                (3, "invalid UTF-8 at byte 1"),
            ]
        );
        assert_eq!(rejected[0].record, "{\"name\": \"a\u{fffd}b\"}");
    }

    #[test]
    fn a_huge_value_is_cut_in_the_reason_but_kept_in_the_record() {
        let line = format!("{{\"sensor\": [{}1]}}\n", "1, ".repeat(1000));
        let (_, rejected) = run(&mut decoder(), &[line.as_bytes()]);
        let reason = &rejected[0].reason;
        assert!(
            reason.starts_with("column `sensor`: expected an int, found an array [1,1,1,")
                && reason.ends_with("...")
                && reason.len() < 100,
            "{reason}"
        );
        assert_eq!(rejected[0].record.len(), line.len() - 1);
    }

    #[test]
    fn deep_nesting_is_rejected_without_overflowing_the_stack() {
        let nest = |depth: usize| format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let input = format!(
            "{{\"sensor\": {}}}\n{{\"x\": {}, \"sensor\": 2}}\n",
            nest(100_000),
            nest(100),
        );
        let (batch, rejected) = run(&mut decoder(), &[input.as_bytes()]);
        assert_eq!(rejected.len(), 1);
        assert_eq!(rejected[0].line, 1);
        assert!(
            rejected[0].reason.contains("recursion limit exceeded"),
            "{}",
            rejected[0].reason
        );
        let sensors: Vec<_> = column::<Int64Array>(&batch, "sensor").iter().collect();
        assert_eq!(sensors, [Some(2)]);
    }

    #[test]
    fn an_unsupported_schema_type_fails_every_call() {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, true)]));
        let mut d = JsonDecoder::new(schema);
        assert!(matches!(
            d.decode(b"{}\n"),
            Err(CodecError::UnsupportedType { .. })
        ));
        assert!(matches!(
            d.finish_file(),
            Err(CodecError::UnsupportedType { .. })
        ));
    }

    proptest! {
        #[test]
        fn any_bytes_decode_the_same_however_they_are_chunked(
            input in r#"([{}\[\]:," \n\r]|"sensor"|"name"|"ts"|12|-3\.5|true|null|"x\\"y"){0,40}"#,
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
        ) {
            let input = input.as_bytes();
            let whole = run(&mut decoder(), &[input]);
            let mut positions: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
            positions.sort_unstable();
            let mut chunks = Vec::new();
            let mut start = 0;
            for p in positions {
                chunks.push(&input[start..p]);
                start = p;
            }
            chunks.push(&input[start..]);
            prop_assert_eq!(run(&mut decoder(), &chunks), whole);
        }

        #[test]
        fn every_non_blank_line_is_either_a_row_or_a_reject(
            input in r#"([{}\[\]:," \n]|"sensor"|"name"|"ts"|12|-3\.5|true|null){0,40}"#,
        ) {
            let (batch, rejected) = run(&mut decoder(), &[input.as_bytes()]);
            let lines = input.lines().filter(|l| !l.trim().is_empty()).count();
            prop_assert_eq!(batch.num_rows() + rejected.len(), lines);
            prop_assert!(rejected.windows(2).all(|w| w[0].line < w[1].line));
        }
    }
}
