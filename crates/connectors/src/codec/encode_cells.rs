//! Typed, row-addressable views of a batch's columns for the encoders.
//!
//! The encoders write row-major, so each column is downcast once per batch and each cell is
//! then a cheap match on [`Cells`] plus an index. A list of one of anduin's five types (a
//! pattern's `array_agg` measure) is written as Trino prints an array, `[1, 2, NULL]`
//! (its items as the encoders write cells, strings unquoted, NULL for a null item), by the
//! CSV encoder, and as a JSON array by the JSON encoder ([`Cells::List`]). Columns of other
//! types are not expected; they are still written, as text from Arrow's display formatter,
//! rather than dropped or panicked on.

use arrow::array::{
    Array, BooleanArray, Float64Array, Int64Array, ListArray, StringArray,
    TimestampMillisecondArray,
};
use arrow::datatypes::{DataType, TimeUnit};
use arrow::util::display::{ArrayFormatter, FormatOptions};

use super::timestamp::{Rfc3339Writer, TimestampFormat};

/// Room for any `i64` or `f64` lexical-core writes.
pub(crate) type NumberBuf = [u8; lexical_core::BUFFER_SIZE];

/// One column of a batch, ready for per-row access.
pub(crate) enum Cells<'a> {
    /// `Int64`.
    Int64(&'a Int64Array),
    /// `Float64`.
    Float64(&'a Float64Array),
    /// `Boolean`.
    Boolean(&'a BooleanArray),
    /// `Utf8`.
    Utf8(&'a StringArray),
    /// `Timestamp(Millisecond, _)`; values are UTC epoch milliseconds whatever the zone.
    TimestampMs(&'a TimestampMillisecondArray),
    /// `List` of one of the types above: the lists, and their items.
    List(&'a ListArray, Box<Cells<'a>>),
    /// Any other type, written as display text.
    Other(&'a dyn Array, ArrayFormatter<'a>),
    /// A type Arrow cannot display; written as null.
    Unprintable,
}

/// A single cell's value, borrowed from its column or formatted into a caller buffer.
pub(crate) enum Cell<'a> {
    /// Null.
    Null,
    /// Number text (int or finite float), `true` / `false`, or epoch milliseconds: never needs
    /// JSON escaping.
    Bare(&'a [u8]),
    /// An RFC 3339 timestamp: ASCII without quotes, backslashes or control characters, so it
    /// needs JSON quotes but no escaping.
    Rfc3339(&'a [u8]),
    /// A float that is NaN or infinite; `text` is lexical-core's `NaN` / `inf` / `-inf`.
    NonFinite(&'a [u8]),
    /// Text: a string value or a display-formatted value.
    Text(&'a str),
}

impl<'a> Cells<'a> {
    /// Views `array`.
    pub(crate) fn new(array: &'a dyn Array) -> Self {
        let any = array.as_any();
        let view = match array.data_type() {
            DataType::Int64 => any.downcast_ref().map(Cells::Int64),
            DataType::Float64 => any.downcast_ref().map(Cells::Float64),
            DataType::Boolean => any.downcast_ref().map(Cells::Boolean),
            DataType::Utf8 => any.downcast_ref().map(Cells::Utf8),
            DataType::Timestamp(TimeUnit::Millisecond, _) => {
                any.downcast_ref().map(Cells::TimestampMs)
            }
            DataType::List(item) if is_scalar(item.data_type()) => any
                .downcast_ref::<ListArray>()
                .map(|list| Cells::List(list, Box::new(Cells::new(list.values().as_ref())))),
            _ => None,
        };
        view.unwrap_or_else(
            || match ArrayFormatter::try_new(array, &FormatOptions::default()) {
                Ok(formatter) => Cells::Other(array, formatter),
                Err(_) => Cells::Unprintable,
            },
        )
    }

    /// The value at `row`. Numbers and RFC 3339 timestamps (from `rfc3339`) are written into
    /// `num`, display text into `text`.
    #[inline]
    pub(crate) fn get<'b>(
        &'b self,
        row: usize,
        format: TimestampFormat,
        rfc3339: &mut Rfc3339Writer,
        num: &'b mut NumberBuf,
        text: &'b mut String,
    ) -> Cell<'b> {
        match self {
            Cells::Int64(a) => {
                if a.is_null(row) {
                    Cell::Null
                } else {
                    Cell::Bare(lexical_core::write(a.value(row), num))
                }
            }
            Cells::Float64(a) => {
                if a.is_null(row) {
                    return Cell::Null;
                }
                let v = a.value(row);
                let written = lexical_core::write(v, num);
                if v.is_finite() {
                    Cell::Bare(written)
                } else {
                    Cell::NonFinite(written)
                }
            }
            Cells::Boolean(a) => match a.is_null(row) {
                true => Cell::Null,
                false if a.value(row) => Cell::Bare(b"true"),
                false => Cell::Bare(b"false"),
            },
            Cells::Utf8(a) => {
                if a.is_null(row) {
                    Cell::Null
                } else {
                    Cell::Text(a.value(row))
                }
            }
            Cells::TimestampMs(a) => {
                if a.is_null(row) {
                    return Cell::Null;
                }
                let ms = a.value(row);
                if format == TimestampFormat::Rfc3339 {
                    if let Some(formatted) = rfc3339.format(ms) {
                        let len = formatted.len();
                        num[..len].copy_from_slice(&formatted);
                        return Cell::Rfc3339(&num[..len]);
                    }
                }
                Cell::Bare(lexical_core::write(ms, num))
            }
            Cells::Other(array, formatter) => {
                if array.is_null(row) {
                    return Cell::Null;
                }
                text.clear();
                use std::fmt::Write;
                match write!(text, "{}", formatter.value(row)) {
                    Ok(()) => Cell::Text(text),
                    Err(_) => Cell::Null,
                }
            }
            Cells::List(list, items) => {
                if list.is_null(row) {
                    return Cell::Null;
                }
                text.clear();
                text.push('[');
                let mut item_num: NumberBuf = [0; lexical_core::BUFFER_SIZE];
                let mut item_text = String::new();
                for (n, i) in Self::items(list, row).enumerate() {
                    if n > 0 {
                        text.push_str(", ");
                    }
                    match items.get(i, format, rfc3339, &mut item_num, &mut item_text) {
                        Cell::Null => text.push_str("NULL"),
                        Cell::Bare(b) | Cell::Rfc3339(b) | Cell::NonFinite(b) => {
                            text.push_str(std::str::from_utf8(b).unwrap_or_default())
                        }
                        Cell::Text(s) => text.push_str(s),
                    }
                }
                text.push(']');
                Cell::Text(text)
            }
            Cells::Unprintable => Cell::Null,
        }
    }

    /// The rows of a list column's items that the list at `row` holds.
    pub(crate) fn items(list: &ListArray, row: usize) -> std::ops::Range<usize> {
        let offsets = list.value_offsets();
        let start = offsets
            .get(row)
            .map_or(0, |o| usize::try_from(*o).unwrap_or(0));
        let end = offsets
            .get(row + 1)
            .map_or(start, |o| usize::try_from(*o).unwrap_or(start));
        start..end
    }
}

/// Whether `t` is one of the types the encoders write themselves (as a list's item type).
fn is_scalar(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int64
            | DataType::Float64
            | DataType::Boolean
            | DataType::Utf8
            | DataType::Timestamp(TimeUnit::Millisecond, _)
    )
}
