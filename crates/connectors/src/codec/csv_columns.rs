//! The second stage of CSV decoding: turning one column of a split [`Block`] at a time into
//! Arrow values, marking rows whose text does not parse.
//!
//! Working column by column keeps each inner loop monomorphic (one parser, one builder), which
//! is what makes the decoder fast; a bad value only flips the row's entry in `rows_ok` and
//! records a reason, and the row is dropped later by a single filter pass.

use super::batch_builder::ColumnBuilder;
use super::column::{excerpt, ColumnInfo, ColumnKind};
use super::csv_split::{Block, RecordMeta};
use super::text_value::{float_overflows, parse_bool, parse_float, parse_int};
use super::timestamp::parse_timestamp_ms;

/// The records of a block to decode, and the buffer their field ranges index.
#[derive(Clone, Copy)]
pub(crate) struct Rows<'a> {
    pub(crate) block: &'a Block,
    pub(crate) records: &'a [RecordMeta],
    pub(crate) buf: &'a [u8],
    /// Whether the bytes all of the block's fields lie in are valid UTF-8 ([`text_is_utf8`]).
    pub(crate) utf8: bool,
}

/// Whether the bytes from the block's first field to its last are valid UTF-8: checked once
/// per block, vectorised, instead of field by field (which took a sixth of a plain query's
/// time on Nexmark's bids). A field of such bytes that begins and ends with an ASCII byte is
/// then valid UTF-8 on its own; any other goes through `from_utf8` alone.
pub(crate) fn text_is_utf8(block: &Block, buf: &[u8]) -> bool {
    let start = block.fields.iter().map(|f| f.start).min().unwrap_or(0);
    let end = block.fields.iter().map(|f| f.end).max().unwrap_or(0);
    buf.get(start..end)
        .is_some_and(|text| simdutf8::basic::from_utf8(text).is_ok())
}

/// `text` as UTF-8 bytes, or `None` if it is not UTF-8; `utf8` says that the bytes around it
/// are valid UTF-8 ([`text_is_utf8`]).
#[inline]
fn utf8_field(text: &[u8], utf8: bool) -> Option<&[u8]> {
    let ascii_edges = match (text.first(), text.last()) {
        (Some(first), Some(last)) => first.is_ascii() && last.is_ascii(),
        _ => true,
    };
    if utf8 && ascii_edges {
        Some(text)
    } else {
        std::str::from_utf8(text).ok().map(str::as_bytes)
    }
}

/// Per-block verdicts: `ok[r]` says whether row `r` is still good; `reasons` holds
/// `(row, reason)` for each row turned bad, at most one per row.
#[derive(Debug, Default)]
pub(crate) struct Verdicts {
    pub(crate) ok: Vec<bool>,
    pub(crate) reasons: Vec<(usize, String)>,
}

impl Verdicts {
    fn reject(&mut self, row: usize, reason: String) {
        self.ok[row] = false;
        self.reasons.push((row, reason));
    }
}

/// Appends file field `field` of every row to `builder`, parsed as `column`'s type. Rows
/// already bad get a placeholder null.
pub(crate) fn decode_column(
    rows: Rows<'_>,
    field: usize,
    column: &ColumnInfo,
    builder: &mut ColumnBuilder,
    verdicts: &mut Verdicts,
) {
    match builder {
        ColumnBuilder::Int64(b) => decode_with(rows, field, column, verdicts, parse_int, |v| {
            b.append_option(v)
        }),
        ColumnBuilder::Float64(b) => decode_with(rows, field, column, verdicts, parse_float, |v| {
            b.append_option(v)
        }),
        ColumnBuilder::Boolean(b) => decode_with(rows, field, column, verdicts, parse_bool, |v| {
            b.append_option(v)
        }),
        ColumnBuilder::TimestampMs(b) => {
            decode_with(rows, field, column, verdicts, parse_timestamp_ms, |v| {
                b.append_option(v)
            })
        }
        ColumnBuilder::Utf8(b) => decode_with(
            rows,
            field,
            column,
            verdicts,
            |text| utf8_field(text, rows.utf8),
            |v| b.append_option(v),
        ),
    }
}

/// The loop behind [`decode_column`], instantiated once per column type.
#[inline(always)]
fn decode_with<'b, T>(
    rows: Rows<'b>,
    field: usize,
    column: &ColumnInfo,
    verdicts: &mut Verdicts,
    parse: impl Fn(&'b [u8]) -> Option<T>,
    mut push: impl FnMut(Option<T>),
) {
    // An empty field is null, except for strings, where it is the empty string.
    let empty_is_null = column.kind != ColumnKind::Utf8;
    for (row, record) in rows.records.iter().enumerate() {
        if !verdicts.ok[row] {
            push(None);
            continue;
        }
        let text = rows.block.field(rows.buf, record, field);
        if text.is_empty() && empty_is_null {
            if column.event_time {
                verdicts.reject(row, format!("event-time column `{}` is empty", column.name));
            } else if !column.nullable {
                verdicts.reject(
                    row,
                    format!("column `{}`: null in a non-nullable column", column.name),
                );
            }
            push(None);
            continue;
        }
        match parse(text) {
            Some(value) => push(Some(value)),
            None => {
                verdicts.reject(row, bad_value_reason(column, text));
                push(None);
            }
        }
    }
}

fn bad_value_reason(column: &ColumnInfo, text: &[u8]) -> String {
    match column.kind {
        ColumnKind::Float64 if float_overflows(text) => format!(
            "column `{}`: `{}` is out of range for a float (beyond ±1.8e308)",
            column.name,
            excerpt(text)
        ),
        ColumnKind::Utf8 => format!(
            "column `{}`: `{}` is not valid UTF-8",
            column.name,
            excerpt(text)
        ),
        kind => format!(
            "column `{}`: `{}` is not {}",
            column.name,
            excerpt(text),
            kind.noun()
        ),
    }
}
