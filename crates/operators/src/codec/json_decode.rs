//! JSON Lines decoding into Arrow batches with per-line error isolation.
//!
//! Each line holds one JSON object. Members are matched to schema columns by exact name;
//! unknown members are ignored; a missing member or `null` is null. A line is rejected, with
//! its line number and a reason, when it is not valid JSON, is not an object, or has a value
//! of the wrong type for its column:
//!
//! * `Int64`: an integer number within `i64` (`1.0` and `"1"` are rejected).
//! * `Float64`: any number, parsed exactly (correctly rounded).
//! * `Boolean`: `true` / `false`.
//! * `Utf8`: a string.
//! * Timestamps: an integer (epoch milliseconds) or an RFC 3339 / ISO 8601 string (see
//!   [`super::timestamp`]).
//!
//! Blank (whitespace-only) lines are skipped, `\r\n` endings are accepted, and a UTF-8
//! byte-order mark at the start of a file is skipped. Lines are scanned by a small validating
//! scanner ([`super::json_scan`]) that allocates nothing per line.

use arrow::datatypes::SchemaRef;

use super::batch_builder::{BatchBuilder, ColumnBuilder};
use super::bom::{BomSkipper, BomStep};
use super::column::{excerpt, resolve_columns, ColumnInfo, ColumnKind};
use super::json_scan::{scan_object, JsonValue};
use super::timestamp::parse_datetime_ms;
use super::{CodecError, Decoded, Rejected};

/// Decodes JSON Lines files, fed in chunks, into batches of a fixed schema.
#[derive(Debug)]
pub struct JsonDecoder {
    columns: Vec<ColumnInfo>,
    /// Set when the schema has an unsupported type; returned by every call.
    schema_error: Option<CodecError>,
    source: String,
    file: FileState,
    output: BatchBuilder,
    /// Per column, the value found on the current line.
    slots: Vec<JsonValue>,
    /// Decoded text of escaped strings on the current line.
    scratch: String,
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
            output: BatchBuilder::new(schema, &columns),
            slots: vec![JsonValue::Absent; columns.len()],
            columns,
            schema_error,
            source: String::new(),
            file: FileState::default(),
            scratch: String::new(),
        }
    }

    /// Starts a new file/stream named `source` (used in rejects); resets the line counter and
    /// byte offset. An incomplete last line of the previous file is dropped, so call
    /// [`JsonDecoder::finish_file`] first.
    pub fn start_file(&mut self, source: &str) {
        source.clone_into(&mut self.source);
        self.file = FileState::default();
        self.output.clear();
    }

    /// Feeds the next bytes of the current file. Decodes every complete line; an incomplete
    /// trailing line is kept internally and completed by later bytes.
    pub fn decode(&mut self, bytes: &[u8]) -> Result<Decoded, CodecError> {
        self.check()?;
        let mut rejected = Vec::new();
        self.feed(bytes, &mut rejected);
        self.output_with(rejected)
    }

    /// End of the current file: decodes a last line that has no trailing newline.
    pub fn finish_file(&mut self) -> Result<Decoded, CodecError> {
        self.check()?;
        let mut rejected = Vec::new();
        let held = self.file.bom.finish();
        if !held.is_empty() {
            self.feed(&held, &mut rejected);
        }
        let last = std::mem::take(&mut self.file.carry);
        if !last.is_empty() {
            self.decode_line(&last, &mut rejected);
            self.file.consumed += last.len() as u64;
        }
        self.output_with(rejected)
    }

    /// Bytes of the current file consumed by complete lines so far (a resume position for
    /// later checkpointing).
    pub fn consumed_offset(&self) -> u64 {
        self.file.consumed
    }

    fn check(&self) -> Result<(), CodecError> {
        match &self.schema_error {
            Some(err) => Err(err.clone()),
            None => Ok(()),
        }
    }

    fn output_with(&mut self, rejected: Vec<Rejected>) -> Result<Decoded, CodecError> {
        let batch = self.output.finish(&self.source)?;
        Ok(Decoded { batch, rejected })
    }

    fn feed(&mut self, bytes: &[u8], rejected: &mut Vec<Rejected>) {
        let chunk = match self.file.bom.feed(bytes) {
            BomStep::Wait => return,
            BomStep::Pass { bytes, skipped } => {
                self.file.consumed += skipped;
                bytes
            }
        };
        let mut rest = &chunk[..];
        if !self.file.carry.is_empty() {
            let Some(newline) = memchr::memchr(b'\n', rest) else {
                self.file.carry.extend_from_slice(rest);
                return;
            };
            let mut line = std::mem::take(&mut self.file.carry);
            line.extend_from_slice(&rest[..newline]);
            self.decode_line(&line, rejected);
            self.file.consumed += line.len() as u64 + 1;
            rest = &rest[newline + 1..];
        }
        let mut start = 0;
        for newline in memchr::memchr_iter(b'\n', rest) {
            self.decode_line(&rest[start..newline], rejected);
            start = newline + 1;
        }
        self.file.consumed += start as u64;
        self.file.carry.extend_from_slice(&rest[start..]);
    }

    /// Decodes one line (without its `\n`) into the output, or rejects it.
    fn decode_line(&mut self, raw: &[u8], rejected: &mut Vec<Rejected>) {
        self.file.lines += 1;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let mut reject = |reason: String| {
            rejected.push(Rejected {
                source: self.source.clone(),
                line: self.file.lines,
                reason,
                record: String::from_utf8_lossy(line).into_owned(),
            });
        };
        let text = match std::str::from_utf8(line) {
            Ok(text) => text,
            Err(err) => {
                return reject(format!("invalid UTF-8 at byte {}", err.valid_up_to() + 1));
            }
        };
        if !text.trim_start().starts_with('{') {
            return reject(non_object_reason(text));
        }
        self.slots.fill(JsonValue::Absent);
        self.scratch.clear();
        let columns = &self.columns;
        let lookup = |key: &str| columns.iter().position(|c| c.name == key);
        if let Err(err) = scan_object(text, &mut self.slots, &mut self.scratch, lookup) {
            return reject(format!(
                "invalid JSON at column {}: {}",
                err.at + 1,
                err.message
            ));
        }
        let mut first_error = None;
        for ((column, builder), &value) in self
            .columns
            .iter()
            .zip(&mut self.output.columns)
            .zip(&self.slots)
        {
            let value = Value {
                json: value,
                line: text,
                scratch: &self.scratch,
            };
            if let Err(reason) = append(builder, column, value) {
                builder.append_null();
                first_error.get_or_insert(reason);
            }
        }
        self.output.push_keep(first_error.is_none());
        if let Some(reason) = first_error {
            reject(reason);
        }
    }
}

/// The reject reason for a line that does not start with `{`.
fn non_object_reason(text: &str) -> String {
    let found = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Array(_)) => "an array",
        Ok(serde_json::Value::String(_)) => "a string",
        Ok(serde_json::Value::Number(_)) => "a number",
        Ok(serde_json::Value::Bool(_)) => "a boolean",
        Ok(serde_json::Value::Null) => "null",
        Ok(serde_json::Value::Object(_)) | Err(_) => "invalid JSON",
    };
    format!("expected a JSON object, found {found}")
}

/// A scanned value with the buffers its ranges point into.
#[derive(Clone, Copy)]
struct Value<'a> {
    json: JsonValue,
    line: &'a str,
    scratch: &'a str,
}

impl<'a> Value<'a> {
    fn number_text(&self, start: usize, end: usize) -> &'a str {
        &self.line[start..end]
    }

    fn str_text(&self, start: usize, end: usize, escaped: bool) -> &'a str {
        if escaped {
            &self.scratch[start..end]
        } else {
            &self.line[start..end]
        }
    }

    /// Describes the value for a type-mismatch reason.
    fn describe(&self) -> String {
        match self.json {
            JsonValue::Absent | JsonValue::Null => "null".to_owned(),
            JsonValue::Bool(b) => format!("boolean `{b}`"),
            JsonValue::Number { start, end, .. } => {
                format!(
                    "number `{}`",
                    excerpt(self.number_text(start, end).as_bytes())
                )
            }
            JsonValue::Str {
                start,
                end,
                escaped,
            } => {
                let text = self.str_text(start, end, escaped);
                format!("string {:?}", excerpt(text.as_bytes()))
            }
            JsonValue::Nested(kind) => kind.to_owned(),
        }
    }
}

/// Appends `value` to `builder` as `column`'s type; on a mismatch appends nothing and returns
/// the reject reason.
fn append(
    builder: &mut ColumnBuilder,
    column: &ColumnInfo,
    value: Value<'_>,
) -> Result<(), String> {
    let mismatch = || {
        format!(
            "column `{}`: expected {}, found {}",
            column.name,
            column.kind.noun(),
            value.describe()
        )
    };
    let out_of_range = |text: &str| {
        format!(
            "column `{}`: `{}` is out of range for {}",
            column.name,
            excerpt(text.as_bytes()),
            column.kind.noun()
        )
    };
    if let JsonValue::Absent | JsonValue::Null = value.json {
        if !column.nullable {
            return Err(format!(
                "column `{}`: null in a non-nullable column",
                column.name
            ));
        }
        builder.append_null();
        return Ok(());
    }
    match (builder, value.json) {
        (
            ColumnBuilder::Int64(b),
            JsonValue::Number {
                start,
                end,
                integer: true,
            },
        ) => {
            let text = value.number_text(start, end);
            let v = lexical_core::parse::<i64>(text.as_bytes()).map_err(|_| out_of_range(text))?;
            b.append_value(v);
        }
        (ColumnBuilder::Float64(b), JsonValue::Number { start, end, .. }) => {
            let text = value.number_text(start, end);
            let v = lexical_core::parse::<f64>(text.as_bytes()).map_err(|_| out_of_range(text))?;
            b.append_value(v);
        }
        (ColumnBuilder::Boolean(b), JsonValue::Bool(v)) => b.append_value(v),
        (
            ColumnBuilder::Utf8(b),
            JsonValue::Str {
                start,
                end,
                escaped,
            },
        ) => {
            b.append_value(value.str_text(start, end, escaped));
        }
        (
            ColumnBuilder::TimestampMs(b),
            JsonValue::Number {
                start,
                end,
                integer: true,
            },
        ) => {
            let text = value.number_text(start, end);
            let v = lexical_core::parse::<i64>(text.as_bytes()).map_err(|_| out_of_range(text))?;
            b.append_value(v);
        }
        (
            ColumnBuilder::TimestampMs(b),
            JsonValue::Str {
                start,
                end,
                escaped,
            },
        ) => {
            let text = value.str_text(start, end, escaped);
            let v = parse_datetime_ms(text).ok_or_else(|| {
                format!(
                    "column `{}`: `{}` is not {}",
                    column.name,
                    excerpt(text.as_bytes()),
                    ColumnKind::TimestampMs.noun()
                )
            })?;
            b.append_value(v);
        }
        _ => return Err(mismatch()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

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
nonsense
"text""#;

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
                (3, "column `sensor`: expected an int, found string \"3\""),
                (6, "column `sensor`: expected an int, found number `4.5`"),
                (7, "expected a JSON object, found an array"),
                (9, "invalid JSON at column 14: unexpected end of line"),
                (10, "column `ts`: `yesterday` is not a timestamp"),
                (11, "column `ok`: expected a boolean, found number `1`"),
                (12, "column `name`: expected a string, found number `5`"),
                (
                    13,
                    "column `sensor`: `99999999999999999999` is out of range for an int"
                ),
                (16, "expected a JSON object, found invalid JSON"),
                (17, "expected a JSON object, found a string"),
            ]
        );
        assert_eq!(rejected[2].record, "[1, 2]");
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
    fn floats_are_parsed_exactly_and_accept_integers() {
        let (batch, rejected) = run(
            &mut decoder(),
            &[b"{\"value\": 0.30000000000000004}\n{\"value\": 5}\n{\"value\": 2.2250738585072014e-308}\n"],
        );
        assert!(rejected.is_empty());
        let values = batch
            .column(2)
            .as_any()
            .downcast_ref::<arrow::array::Float64Array>()
            .expect("Float64");
        assert_eq!(
            values.values().as_ref(),
            [0.30000000000000004, 5.0, 2.2250738585072014e-308]
        );
    }

    #[test]
    fn a_null_in_a_non_nullable_column_rejects_the_line() {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
        let mut d = JsonDecoder::new(schema);
        let out = d
            .decode(b"{\"a\": 1}\n{}\n{\"a\": null}\n")
            .expect("decode");
        assert_eq!(out.num_rows(), 1);
        let lines: Vec<_> = out.rejected.iter().map(|r| r.line).collect();
        assert_eq!(lines, [2, 3]);
    }

    #[test]
    fn invalid_utf8_rejects_the_line() {
        let (_, rejected) = run(&mut decoder(), &[b"{\"name\": \"a\xffb\"}\n"]);
        assert_eq!(rejected[0].reason, "invalid UTF-8 at byte 12");
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
    }
}
