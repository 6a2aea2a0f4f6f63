//! Records' values to rows, with the file reader's CSV and JSON Lines decoders: the values
//! of one poll are decoded together as the lines of one chunk, and each row and each reject
//! is traced back to its record (partition and offset).
//!
//! A JSON value's line breaks are blanks to JSON (they may stand only between tokens), so a
//! value is made one line (a value of several objects is then one undecodable line, rejected
//! whole, never read as its first object alone). A CSV value is records (no header; columns
//! in the type's order), usually one, whose quoted fields may hold line breaks: it spans as
//! many lines, and a value of several records gives a row each, all traced to it. A record
//! without a value (a tombstone) or with an empty one is no row: it is counted and skipped.
//! With a record-timestamp column, that column is not decoded but filled from each record's
//! Kafka timestamp.

use std::sync::Arc;

use arrow::array::{ArrayRef, StringArray, TimestampMillisecondArray};
use arrow::datatypes::{Schema, SchemaRef};
use arrow::record_batch::RecordBatch;

use crate::codec::{CodecError, CsvDecoder, CsvOptions, Decoded, JsonDecoder};

/// One record as polled.
#[derive(Debug, Clone)]
pub(crate) struct Polled {
    /// The index of its partition among the instance's.
    pub split: usize,
    /// Its offset.
    pub offset: i64,
    /// Its Kafka timestamp (epoch ms), if it has one.
    pub timestamp: Option<i64>,
    /// Its value.
    pub value: Option<Vec<u8>>,
}

/// A record that did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bad {
    /// The index of its partition among the instance's.
    pub split: usize,
    /// Its offset.
    pub offset: i64,
    /// Why.
    pub reason: String,
    /// Its value as text (lossy).
    pub record: String,
}

/// The rows of one poll.
#[derive(Debug, Default)]
pub(crate) struct Rows {
    /// The good rows, in the order polled.
    pub batch: Option<RecordBatch>,
    /// For each row, the index of the record it came from (into the polled slice).
    pub from: Vec<usize>,
    /// The records that did not decode.
    pub bad: Vec<Bad>,
    /// Records without a value, skipped.
    pub empty: u64,
}

/// The value format.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Format {
    /// One CSV record a value, columns in order.
    Csv {
        /// The field separator.
        delimiter: u8,
    },
    /// One JSON object a value.
    Json,
    /// The value itself, as the text of the one decoded column (Flink's `raw` format with a
    /// `STRING` column): not split, not trimmed; a record without a value gives a null, one
    /// that is not UTF-8 goes to the dead letters.
    Raw,
}

/// Decodes polled records into rows of the output schema.
pub(crate) struct RecordDecoder {
    format: Format,
    inner: Inner,
    /// The output schema.
    out: SchemaRef,
    /// The column filled from the record timestamp, if any.
    timestamp_column: Option<usize>,
}

enum Inner {
    Csv(Box<CsvDecoder>),
    Json(Box<JsonDecoder>),
    /// The schema of the one decoded column.
    Raw(SchemaRef),
}

impl RecordDecoder {
    /// A decoder of rows of `out`; `timestamp_column` is filled from record timestamps,
    /// `required_time` (a column of `out`) must not be null or the record is rejected.
    pub(crate) fn new(
        out: SchemaRef,
        format: Format,
        timestamp_column: Option<usize>,
        required_time: Option<usize>,
        max_record: usize,
    ) -> Self {
        let decoded_schema: SchemaRef = match timestamp_column {
            Some(c) => {
                let fields: Vec<_> = out
                    .fields()
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != c)
                    .map(|(_, f)| Arc::clone(f))
                    .collect();
                Arc::new(Schema::new(fields))
            }
            None => Arc::clone(&out),
        };
        // The event-time column among the decoded ones (none when it is the timestamp's).
        let required = required_time
            .filter(|r| Some(*r) != timestamp_column)
            .map(|r| match timestamp_column {
                Some(c) if r > c => r - 1,
                _ => r,
            });
        let inner = match format {
            Format::Csv { delimiter } => {
                let mut d = CsvDecoder::new(
                    decoded_schema,
                    CsvOptions {
                        delimiter,
                        has_header: false,
                    },
                )
                .with_max_record_bytes(max_record);
                if let Some(r) = required {
                    d = d.with_event_time(r);
                }
                d.record_lines();
                Inner::Csv(Box::new(d))
            }
            Format::Json => {
                let mut d = JsonDecoder::new(decoded_schema).with_max_record_bytes(max_record);
                if let Some(r) = required {
                    d = d.with_event_time(r);
                }
                Inner::Json(Box::new(d))
            }
            // Its one column is text: never the event time, which is then the record's.
            Format::Raw => Inner::Raw(decoded_schema),
        };
        Self {
            format,
            inner,
            out,
            timestamp_column,
        }
    }

    /// The rows of `polled`.
    pub(crate) fn decode(&mut self, polled: &[Polled]) -> Result<Rows, CodecError> {
        if let Inner::Raw(schema) = &self.inner {
            let rows = raw_rows(schema, polled)?;
            return self.stamped(rows, polled);
        }
        let mut text = Vec::new();
        // For each record with a value: its index and the line it starts on (1-based).
        let mut starts: Vec<(u64, usize)> = Vec::new();
        let mut line = 1u64;
        let mut empty = 0;
        for (i, p) in polled.iter().enumerate() {
            let value = p.value.as_deref().unwrap_or_default();
            let value = trim_line_end(value);
            if value.iter().all(u8::is_ascii_whitespace) {
                empty += 1;
                continue;
            }
            starts.push((line, i));
            match self.format {
                Format::Json => text.extend(value.iter().map(|b| {
                    if matches!(b, b'\n' | b'\r') {
                        b' '
                    } else {
                        *b
                    }
                })),
                // Raw values never reach here (decoded above); as text, like CSV.
                Format::Csv { .. } | Format::Raw => {
                    text.extend_from_slice(value);
                    line += memchr::memchr_iter(b'\n', value).count() as u64;
                }
            }
            text.push(b'\n');
            line += 1;
        }
        let mut rows = Rows {
            empty,
            ..Rows::default()
        };
        if starts.is_empty() {
            return Ok(rows);
        }
        let (first, second) = match &mut self.inner {
            Inner::Csv(d) => {
                d.start_file("kafka");
                (d.decode(&text)?, d.finish_file()?)
            }
            Inner::Json(d) => {
                d.start_file("kafka");
                (d.decode(&text)?, d.finish_file()?)
            }
            Inner::Raw(_) => return Ok(rows),
        };
        let record_at = |line: u64| -> usize {
            let k = starts.partition_point(|(s, _)| *s <= line);
            starts.get(k.saturating_sub(1)).map_or(0, |(_, i)| *i)
        };
        let mut batches = Vec::new();
        let mut bad_lines = Vec::new();
        for d in [first, second] {
            let Decoded {
                batch,
                rejected,
                lines,
            } = d;
            for r in rejected {
                let i = record_at(r.line);
                bad_lines.push(r.line);
                let p = polled.get(i);
                rows.bad.push(Bad {
                    split: p.map_or(0, |p| p.split),
                    offset: p.map_or(0, |p| p.offset),
                    reason: r.reason,
                    record: r.record,
                });
            }
            if let Some(b) = batch {
                if matches!(self.inner, Inner::Csv(_)) {
                    rows.from.extend(lines.iter().map(|l| record_at(*l)));
                }
                batches.push(b);
            }
        }
        if matches!(self.inner, Inner::Json(_)) {
            // Every line is a row or a reject, in order.
            rows.from = starts
                .iter()
                .filter(|(l, _)| !bad_lines.contains(l))
                .map(|(_, i)| *i)
                .collect();
        }
        let Some(first) = batches.first() else {
            return Ok(rows);
        };
        let batch = arrow::compute::concat_batches(&first.schema(), &batches)
            .map_err(|e| CodecError::internal("kafka", &e))?;
        rows.batch = Some(batch);
        self.stamped(rows, polled)
    }

    /// `rows` with the record-timestamp column filled in, when there is one.
    fn stamped(&self, mut rows: Rows, polled: &[Polled]) -> Result<Rows, CodecError> {
        if let (Some(c), Some(batch)) = (self.timestamp_column, &rows.batch) {
            rows.batch = Some(self.with_timestamps(batch, c, &rows.from, polled)?);
        }
        Ok(rows)
    }

    /// `batch` with column `c` inserted, the timestamps of the records the rows came from.
    fn with_timestamps(
        &self,
        batch: &RecordBatch,
        c: usize,
        from: &[usize],
        polled: &[Polled],
    ) -> Result<RecordBatch, CodecError> {
        let times: TimestampMillisecondArray = from
            .iter()
            .map(|i| polled.get(*i).and_then(|p| p.timestamp))
            .collect();
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        columns.insert(c.min(columns.len()), Arc::new(times));
        RecordBatch::try_new(Arc::clone(&self.out), columns)
            .map_err(|e| CodecError::internal("kafka", &e))
    }
}

/// The rows of `polled` in the `raw` format: each value as the text of `schema`'s one
/// column (null without a value); a value that is not UTF-8 is a reject.
fn raw_rows(schema: &SchemaRef, polled: &[Polled]) -> Result<Rows, CodecError> {
    let mut rows = Rows::default();
    let mut texts: Vec<Option<&str>> = Vec::with_capacity(polled.len());
    for (i, p) in polled.iter().enumerate() {
        match p.value.as_deref().map(std::str::from_utf8) {
            None => texts.push(None),
            Some(Ok(t)) => texts.push(Some(t)),
            Some(Err(e)) => {
                rows.bad.push(Bad {
                    split: p.split,
                    offset: p.offset,
                    reason: format!("format `raw`: the value is not UTF-8 text ({e})"),
                    record: String::from_utf8_lossy(p.value.as_deref().unwrap_or_default())
                        .into_owned(),
                });
                continue;
            }
        }
        rows.from.push(i);
    }
    if texts.is_empty() {
        return Ok(rows);
    }
    let column: ArrayRef = Arc::new(StringArray::from(texts));
    rows.batch = Some(
        RecordBatch::try_new(Arc::clone(schema), vec![column])
            .map_err(|e| CodecError::internal("kafka", &e))?,
    );
    Ok(rows)
}

/// `value` without one trailing line break.
fn trim_line_end(value: &[u8]) -> &[u8] {
    let v = value.strip_suffix(b"\n").unwrap_or(value);
    v.strip_suffix(b"\r").unwrap_or(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, TimeUnit};

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
            Field::new("v", DataType::Int64, true),
        ]))
    }

    fn rec(split: usize, offset: i64, value: &str) -> Polled {
        Polled {
            split,
            offset,
            timestamp: Some(1000 + offset),
            value: Some(value.as_bytes().to_vec()),
        }
    }

    #[test]
    fn json_rows_and_rejects_are_traced_to_their_records() {
        let mut d = RecordDecoder::new(schema(), Format::Json, None, None, 1 << 20);
        let polled = [
            rec(0, 5, "{\"ts\": 1, \"v\": 2}"),
            rec(1, 9, "{\"v\": \"x\"}"),
            Polled {
                value: None,
                ..rec(1, 10, "")
            },
            rec(0, 6, "{\n\"v\": 3}\n"),
        ];
        let rows = d.decode(&polled).expect("decodes");
        assert_eq!(rows.batch.as_ref().map(RecordBatch::num_rows), Some(2));
        assert_eq!(rows.from, [0, 3]);
        assert_eq!(rows.empty, 1);
        assert_eq!(rows.bad.len(), 1);
        assert_eq!((rows.bad[0].split, rows.bad[0].offset), (1, 9));
    }

    /// A NATS message or a Kafka record may hold several lines: every CSV record is read
    /// (each traced to the message), a JSON value with several objects is rejected whole,
    /// never read as its first object alone.
    #[test]
    fn a_value_with_several_records_gives_them_all_in_csv_and_is_rejected_whole_in_json() {
        let mut d = RecordDecoder::new(
            schema(),
            Format::Csv { delimiter: b',' },
            None,
            None,
            1 << 20,
        );
        let rows = d
            .decode(&[rec(0, 7, "1,1\n2,2\r\n3,3\n"), rec(0, 8, "4,4")])
            .expect("decodes");
        assert_eq!(rows.from, [0, 0, 0, 1]);
        assert!(rows.bad.is_empty(), "{:?}", rows.bad);
        let batch = rows.batch.expect("rows");
        let v = batch
            .column(1)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ints");
        assert_eq!(v.values().to_vec(), [1, 2, 3, 4]);

        let mut d = RecordDecoder::new(schema(), Format::Json, None, None, 1 << 20);
        let rows = d
            .decode(&[
                rec(0, 7, "{\"ts\":1,\"v\":1}\n{\"ts\":2,\"v\":2}"),
                rec(0, 8, "{\"ts\":4,\"v\":4}"),
            ])
            .expect("decodes");
        assert_eq!(rows.from, [1]);
        assert_eq!(rows.bad.len(), 1);
        assert_eq!(rows.bad[0].offset, 7);
        assert!(
            rows.bad[0].reason.contains("trailing characters"),
            "{:?}",
            rows.bad
        );
    }

    #[test]
    fn raw_values_are_the_text_of_one_column_whole_with_nulls_and_rejects() {
        let s = Arc::new(Schema::new(vec![
            Field::new("value", DataType::Utf8, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        ]));
        let mut d = RecordDecoder::new(s, Format::Raw, Some(1), Some(1), 1 << 20);
        let polled = [
            rec(0, 0, "a,b\n\"c\"\n"),
            Polled {
                value: None,
                ..rec(1, 1, "")
            },
            Polled {
                value: Some(vec![0x66, 0xff]),
                ..rec(0, 2, "")
            },
            rec(1, 3, ""),
        ];
        let rows = d.decode(&polled).expect("decodes");
        assert_eq!(rows.from, [0, 1, 3]);
        assert_eq!(rows.empty, 0);
        assert_eq!(rows.bad.len(), 1);
        assert_eq!((rows.bad[0].split, rows.bad[0].offset), (0, 2));
        assert!(rows.bad[0].reason.contains("not UTF-8"), "{:?}", rows.bad);
        let batch = rows.batch.expect("rows");
        let text = batch
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("text");
        assert_eq!(
            text.iter().collect::<Vec<_>>(),
            [Some("a,b\n\"c\"\n"), None, Some("")]
        );
        let ts = batch
            .column(1)
            .as_any()
            .downcast_ref::<TimestampMillisecondArray>()
            .expect("timestamps");
        assert_eq!(ts.values().to_vec(), [1000, 1001, 1003]);
    }

    #[test]
    fn csv_values_spanning_lines_and_the_record_timestamp_column() {
        let s = Arc::new(Schema::new(vec![
            Field::new("name", DataType::Utf8, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
            Field::new("v", DataType::Int64, true),
        ]));
        let mut d = RecordDecoder::new(s, Format::Csv { delimiter: b',' }, Some(1), Some(1), 4096);
        let polled = [
            rec(0, 0, "\"a\nb\",1"),
            rec(0, 1, "c,oops"),
            rec(0, 2, "d,4\n"),
        ];
        let rows = d.decode(&polled).expect("decodes");
        let batch = rows.batch.expect("rows");
        assert_eq!(rows.from, [0, 2]);
        assert_eq!(rows.bad.len(), 1);
        assert_eq!(rows.bad[0].offset, 1);
        let ts = batch
            .column(1)
            .as_any()
            .downcast_ref::<TimestampMillisecondArray>()
            .expect("timestamps");
        assert_eq!(ts.values().to_vec(), [1000, 1002]);
        let v = batch
            .column(2)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ints");
        assert_eq!(v.values().to_vec(), [1, 4]);
    }
}
