//! Result rows: window_start, window_end, keys, aggregates (cast to the stream's types).

use std::sync::Arc;

use arrow::array::{ArrayRef, TimestampMillisecondArray};
use arrow::compute::{cast_with_options, CastOptions};
use arrow::record_batch::RecordBatch;

use super::keys::arrow_error;
use super::WindowSetup;
use anduin_operator_api::OperatorError;

/// Results of windows, gathered column by column.
#[derive(Default)]
pub(crate) struct Results {
    starts: Vec<i64>,
    ends: Vec<i64>,
    keys: Vec<Vec<ArrayRef>>,
    values: Vec<Vec<ArrayRef>>,
}

impl Results {
    /// Adds the groups of one window: `keys` and `values` have one row per group.
    pub(crate) fn add(&mut self, start: i64, end: i64, keys: Vec<ArrayRef>, values: Vec<ArrayRef>) {
        let n = values.first().map_or(0, |v| v.len());
        self.starts.extend(std::iter::repeat_n(start, n));
        self.ends.extend(std::iter::repeat_n(end, n));
        self.keys.push(keys);
        self.values.push(values);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// One batch of every result added.
    pub(crate) fn finish(self, setup: &WindowSetup) -> Result<Option<RecordBatch>, OperatorError> {
        if self.starts.is_empty() {
            return Ok(None);
        }
        let err = |e: arrow::error::ArrowError| arrow_error(&setup.name, &e);
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(TimestampMillisecondArray::from(self.starts)),
            Arc::new(TimestampMillisecondArray::from(self.ends)),
        ];
        let nkeys = setup.key_columns.len();
        for k in 0..nkeys {
            let parts: Vec<&dyn arrow::array::Array> =
                self.keys.iter().map(|w| w[k].as_ref()).collect();
            columns.push(arrow::compute::concat(&parts).map_err(err)?);
        }
        let options = CastOptions {
            safe: false,
            ..Default::default()
        };
        for (a, field) in setup.schema.fields().iter().skip(2 + nkeys).enumerate() {
            let parts: Vec<&dyn arrow::array::Array> =
                self.values.iter().map(|w| w[a].as_ref()).collect();
            let col = arrow::compute::concat(&parts).map_err(err)?;
            let col = if col.data_type() == field.data_type() {
                col
            } else {
                cast_with_options(&col, field.data_type(), &options).map_err(err)?
            };
            columns.push(col);
        }
        RecordBatch::try_new(Arc::clone(&setup.schema), columns)
            .map(Some)
            .map_err(err)
    }
}
