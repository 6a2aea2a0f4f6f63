//! Growable output columns shared by the decoders, with a keep-mask so that rejected rows can
//! be dropped in one filter pass at the end.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, BinaryBuilder, BooleanArray, BooleanBuilder,
    Float64Builder, Int64Builder, PrimitiveBuilder, StringArray, TimestampMillisecondBuilder,
};
use arrow::compute::FilterBuilder;
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::record_batch::{RecordBatch, RecordBatchOptions};

use super::column::{ColumnInfo, ColumnKind};
use super::CodecError;

/// A builder for one output column.
#[derive(Debug)]
pub(crate) enum ColumnBuilder {
    /// `Int64` values.
    Int64(Int64Builder),
    /// `Float64` values.
    Float64(Float64Builder),
    /// `Boolean` values.
    Boolean(BooleanBuilder),
    /// `Utf8` values, gathered as bytes: a decoder checks a block's text for UTF-8 once
    /// instead of field by field, and [`ColumnBuilder::finish`] checks the column's bytes in
    /// one pass when it makes them a string array.
    Utf8(BinaryBuilder),
    /// `Timestamp(Millisecond, None)` values.
    TimestampMs(TimestampMillisecondBuilder),
}

impl ColumnBuilder {
    fn new(kind: ColumnKind) -> Self {
        match kind {
            ColumnKind::Int64 => ColumnBuilder::Int64(Int64Builder::new()),
            ColumnKind::Float64 => ColumnBuilder::Float64(Float64Builder::new()),
            ColumnKind::Boolean => ColumnBuilder::Boolean(BooleanBuilder::new()),
            ColumnKind::Utf8 => ColumnBuilder::Utf8(BinaryBuilder::new()),
            ColumnKind::TimestampMs => {
                ColumnBuilder::TimestampMs(TimestampMillisecondBuilder::new())
            }
        }
    }

    /// Appends a null (also used as the placeholder for a rejected row).
    pub(crate) fn append_null(&mut self) {
        match self {
            ColumnBuilder::Int64(b) => b.append_null(),
            ColumnBuilder::Float64(b) => b.append_null(),
            ColumnBuilder::Boolean(b) => b.append_null(),
            ColumnBuilder::Utf8(b) => b.append_null(),
            ColumnBuilder::TimestampMs(b) => b.append_null(),
        }
    }

    /// The column built so far; the builder starts again empty, with room for as many values
    /// (and string bytes) as this column had, so that the next batch does not grow its buffers
    /// by copying them again and again.
    fn finish(&mut self) -> Result<ArrayRef, ArrowError> {
        Ok(match self {
            ColumnBuilder::Int64(b) => finish_primitive(b),
            ColumnBuilder::Float64(b) => finish_primitive(b),
            ColumnBuilder::Boolean(b) => Arc::new(b.finish()),
            ColumnBuilder::Utf8(b) => {
                let bytes = b.finish();
                *b = BinaryBuilder::with_capacity(bytes.len(), bytes.value_data().len());
                Arc::new(StringArray::try_from_binary(bytes)?)
            }
            ColumnBuilder::TimestampMs(b) => finish_primitive(b),
        })
    }
}

/// [`ColumnBuilder::finish`] of a primitive column.
fn finish_primitive<T: ArrowPrimitiveType>(b: &mut PrimitiveBuilder<T>) -> ArrayRef {
    let array = b.finish();
    *b = PrimitiveBuilder::with_capacity(array.len());
    Arc::new(array)
}

/// All output columns of a decoder plus which rows survive.
///
/// Every row is appended to every column (a rejected row as nulls), so the columns stay
/// aligned; [`BatchBuilder::finish`] drops the rejected rows with Arrow's filter kernel, and
/// only when there are some.
#[derive(Debug)]
pub(crate) struct BatchBuilder {
    schema: SchemaRef,
    /// One builder per schema column.
    pub(crate) columns: Vec<ColumnBuilder>,
    /// Per appended row: `true` to keep it.
    keep: Vec<bool>,
    /// Number of `false` entries in `keep`.
    dropped: usize,
}

impl BatchBuilder {
    pub(crate) fn new(schema: SchemaRef, columns: &[ColumnInfo]) -> Self {
        BatchBuilder {
            schema,
            columns: columns.iter().map(|c| ColumnBuilder::new(c.kind)).collect(),
            keep: Vec::new(),
            dropped: 0,
        }
    }

    /// Records the fate of rows just appended to every column.
    pub(crate) fn extend_keep(&mut self, rows_ok: &[bool]) {
        self.dropped += rows_ok.iter().filter(|ok| !**ok).count();
        self.keep.extend_from_slice(rows_ok);
    }

    /// Records the fate of one row just appended to every column.
    pub(crate) fn push_keep(&mut self, ok: bool) {
        self.dropped += usize::from(!ok);
        self.keep.push(ok);
    }

    /// Discards every appended row.
    pub(crate) fn clear(&mut self) {
        for column in &mut self.columns {
            // Nothing of it is kept: a column that would not build is dropped all the same.
            drop(column.finish());
        }
        self.keep.clear();
        self.dropped = 0;
    }

    /// Builds the batch of kept rows, `None` when there are none, and resets for the next call.
    pub(crate) fn finish(&mut self, file: &str) -> Result<Option<RecordBatch>, CodecError> {
        let rows = self.keep.len();
        let arrays = self
            .columns
            .iter_mut()
            .map(ColumnBuilder::finish)
            .collect::<Result<Vec<_>, _>>();
        let keep = std::mem::take(&mut self.keep);
        let dropped = std::mem::replace(&mut self.dropped, 0);
        // Only a decoder's bug makes a column fail (a string that is not UTF-8 it let through).
        let arrays = arrays.map_err(|e| CodecError::internal(file, &e))?;
        if rows == dropped {
            return Ok(None);
        }
        let arrays = if dropped == 0 {
            arrays
        } else {
            // Filter the columns before building the batch: the rejected rows' placeholder
            // nulls would fail validation of non-nullable fields.
            let mask = BooleanArray::from(keep);
            let predicate = FilterBuilder::new(&mask).optimize().build();
            arrays
                .iter()
                .map(|a| predicate.filter(a))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| CodecError::internal(file, &e))?
        };
        let options = RecordBatchOptions::new().with_row_count(Some(rows - dropped));
        RecordBatch::try_new_with_options(Arc::clone(&self.schema), arrays, &options)
            .map(Some)
            .map_err(|e| CodecError::internal(file, &e))
    }
}
