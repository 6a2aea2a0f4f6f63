//! CSV and JSON Lines codecs for anduin streams.
//!
//! This module turns bytes into Arrow [`RecordBatch`](arrow::record_batch::RecordBatch)es and
//! back, for the five column types anduin streams use: `Int64`, `Float64`, `Boolean`, `Utf8`
//! and `Timestamp(Millisecond, None)`, all nullable.
//!
//! * Decoders ([`CsvDecoder`], [`JsonDecoder`]) are fed chunks of a file and return, per
//!   chunk, a batch of the good records plus a [`Rejected`] entry for every bad one, with its
//!   line number. A bad record never fails the stream; only file-level problems (a header
//!   missing a column, an unsupported schema) are [`CodecError`]s. Each decoder reports the
//!   byte offset up to which it has consumed whole records, a resume point for checkpoints.
//! * Encoders ([`CsvEncoder`], [`JsonLinesEncoder`]) append rows to a `Vec<u8>`, in a form the
//!   decoders read back exactly.
//!
//! It is not an I/O layer: reading files, naming them and storing offsets belong to the
//! source and sink operators that use it.
//!
//! # Example
//!
//! ```
//! # use std::sync::Arc;
//! # use arrow::datatypes::{DataType, Field, Schema};
//! # use anduin_connectors::codec::{CsvDecoder, CsvEncoder, CsvOptions, JsonLinesEncoder, TimestampFormat};
//! let schema = Arc::new(Schema::new(vec![
//!     Field::new("sensor", DataType::Int64, true),
//!     Field::new("value", DataType::Float64, true),
//! ]));
//! let mut decoder = CsvDecoder::new(schema, CsvOptions::default());
//! decoder.start_file("events.csv");
//! let out = decoder.decode(b"value,sensor\n1.5,7\nabc,8\n2.5,")?;
//! assert_eq!(out.batch.map(|b| b.num_rows()), Some(1));
//! assert_eq!(out.rejected[0].line, 3);
//! assert_eq!(out.rejected[0].reason, "column `value`: `abc` is not a float");
//! let last = decoder.finish_file()?; // the record "2.5," had no newline
//! let last = last.batch.expect("one good row");
//!
//! let mut json = Vec::new();
//! JsonLinesEncoder::new(TimestampFormat::Rfc3339).encode(&last, &mut json);
//! assert_eq!(json, b"{\"sensor\":null,\"value\":2.5}\n");
//! let mut csv = Vec::new();
//! CsvEncoder::new(b',', true, TimestampFormat::Rfc3339).encode(&last, &mut csv);
//! assert_eq!(csv, b"sensor,value\n,2.5\n");
//! # Ok::<(), anduin_connectors::codec::CodecError>(())
//! ```

mod batch_builder;
mod bom;
mod column;
mod csv_columns;
mod csv_decode;
mod csv_encode;
mod csv_split;
mod decoded;
mod encode_cells;
mod error;
mod json_decode;
mod json_encode;
#[cfg(test)]
mod list_encode_tests;
mod long_record;
#[cfg(test)]
mod long_record_tests;
#[cfg(test)]
mod roundtrip_tests;
mod text_value;
mod timestamp;
mod window;

pub use csv_decode::{CsvDecoder, CsvOptions};
pub use csv_encode::CsvEncoder;
pub use decoded::{Decoded, Rejected};
pub use error::CodecError;
pub use json_decode::JsonDecoder;
pub use json_encode::JsonLinesEncoder;
pub(crate) use long_record::row_beginning;
pub use long_record::DEFAULT_MAX_RECORD_BYTES;
pub use timestamp::TimestampFormat;
