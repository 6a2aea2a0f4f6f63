//! Data rows held until the control stream's event time passes them, in arrival order, and
//! their form in a checkpoint: a count inline, then per row its length (u32, little-endian)
//! and its values in Arrow's row format.

use std::io::{Read, Write};

use anduin_types::Watermark;
use arrow::array::BooleanArray;
use arrow::compute::{filter_record_batch, not};
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;

use crate::event_time::event_times;
use crate::keys::KeyEncoder;

/// Held rows: batches with the smallest event time among their rows.
pub(crate) struct Held {
    schema: SchemaRef,
    batches: Vec<(RecordBatch, i64)>,
}

impl Held {
    pub(crate) fn new(schema: SchemaRef) -> Self {
        Self {
            schema,
            batches: Vec::new(),
        }
    }

    /// How many rows are held.
    pub(crate) fn rows(&self) -> usize {
        self.batches.iter().map(|(b, _)| b.num_rows()).sum()
    }

    /// How much memory the held rows take.
    pub(crate) fn bytes(&self) -> usize {
        self.batches
            .iter()
            .map(|(b, _)| b.get_array_memory_size())
            .sum()
    }

    /// Takes out every held row, in arrival order.
    pub(crate) fn take_all(&mut self) -> Vec<RecordBatch> {
        std::mem::take(&mut self.batches)
            .into_iter()
            .map(|(b, _)| b)
            .collect()
    }

    /// Holds `batch` (the next [`Held::take_before`] looks at its event times).
    pub(crate) fn push(&mut self, batch: RecordBatch) {
        if batch.num_rows() > 0 {
            self.batches.push((batch, i64::MIN));
        }
    }

    /// Takes out, in arrival order, the rows whose event time (column `column`) is before
    /// `watermark` or missing: no change that applies to them can still come.
    pub(crate) fn take_before(
        &mut self,
        watermark: Watermark,
        column: usize,
    ) -> Result<Vec<RecordBatch>, ArrowError> {
        let mut ready = Vec::new();
        let mut kept = Vec::with_capacity(self.batches.len());
        for (batch, min) in std::mem::take(&mut self.batches) {
            if min >= watermark.0 {
                kept.push((batch, min));
                continue;
            }
            let times = event_times(&batch, column);
            let before: BooleanArray = times
                .iter()
                .map(|t| Some(t.is_none_or(|t| t < watermark.0)))
                .collect();
            match before.true_count() {
                0 => {
                    let min = times.iter().flatten().copied().min().unwrap_or(i64::MAX);
                    kept.push((batch, min));
                }
                n if n == batch.num_rows() => ready.push(batch),
                _ => {
                    ready.push(filter_record_batch(&batch, &before)?);
                    let rest = filter_record_batch(&batch, &not(&before)?)?;
                    let min = times
                        .iter()
                        .flatten()
                        .copied()
                        .filter(|t| *t >= watermark.0)
                        .min()
                        .unwrap_or(i64::MAX);
                    kept.push((rest, min));
                }
            }
        }
        self.batches = kept;
        Ok(ready)
    }

    /// Writes every held row (see the module's documentation).
    pub(crate) fn write(&self, out: &mut dyn Write) -> Result<(), ArrowError> {
        let encoder = self.encoder()?;
        for (batch, _) in &self.batches {
            let rows = encoder.encode(batch.columns())?;
            for row in rows.iter() {
                let bytes = row.as_ref();
                let len = u32::try_from(bytes.len()).map_err(|_| {
                    ArrowError::InvalidArgumentError("a held row of over 4 GiB".into())
                })?;
                out.write_all(&len.to_le_bytes())?;
                out.write_all(bytes)?;
            }
        }
        Ok(())
    }

    /// Reads back `count` rows written by [`Held::write`], held again as one batch.
    pub(crate) fn read(&mut self, input: &mut dyn Read, count: usize) -> Result<(), ArrowError> {
        let encoder = self.encoder()?;
        let parser = encoder.parser();
        let mut bytes: Vec<Vec<u8>> = Vec::with_capacity(count.min(1 << 20));
        for _ in 0..count {
            let mut len = [0u8; 4];
            input.read_exact(&mut len)?;
            let len = usize::try_from(u32::from_le_bytes(len)).unwrap_or(usize::MAX);
            let mut row = Vec::new();
            input.take(len as u64).read_to_end(&mut row)?;
            if row.len() != len {
                return Err(ArrowError::ParseError(format!(
                    "a held row is cut short: {} of {len} bytes",
                    row.len()
                )));
            }
            bytes.push(row);
        }
        let columns = encoder.decode(bytes.iter().map(|b| parser.parse(b)))?;
        let batch = RecordBatch::try_new(std::sync::Arc::clone(&self.schema), columns)?;
        self.batches.push((batch, i64::MIN));
        Ok(())
    }

    fn encoder(&self) -> Result<KeyEncoder, ArrowError> {
        KeyEncoder::new(self.schema.fields().iter().map(|f| f.data_type().clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("t", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]))
    }

    fn batch(times: Vec<Option<i64>>) -> RecordBatch {
        let names: Vec<Option<String>> = times.iter().map(|t| t.map(|t| format!("r{t}"))).collect();
        RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int64Array::from(times)),
                Arc::new(StringArray::from(names)),
            ],
        )
        .expect("valid")
    }

    fn times(batches: &[RecordBatch]) -> Vec<Option<i64>> {
        batches.iter().flat_map(|b| event_times(b, 0)).collect()
    }

    #[test]
    fn rows_leave_in_arrival_order_once_the_watermark_passes_them() {
        let mut held = Held::new(schema());
        held.push(batch(vec![Some(5), Some(1), None, Some(9)]));
        held.push(batch(vec![Some(2)]));
        let out = held.take_before(Watermark(5), 0).expect("split");
        assert_eq!(times(&out), vec![Some(1), None, Some(2)]);
        assert_eq!(held.rows(), 2);
        let out = held.take_before(Watermark(6), 0).expect("split");
        assert_eq!(times(&out), vec![Some(5)]);
        let out = held.take_before(Watermark::MAX, 0).expect("split");
        assert_eq!(times(&out), vec![Some(9)]);
        assert_eq!(held.rows(), 0);
    }

    #[test]
    fn held_rows_come_back_from_their_checkpoint_form() {
        let mut held = Held::new(schema());
        held.push(batch(vec![Some(7), None]));
        held.push(batch(vec![Some(3)]));
        let mut bytes = Vec::new();
        held.write(&mut bytes).expect("written");
        let mut back = Held::new(schema());
        back.read(&mut bytes.as_slice(), 3).expect("read");
        let out = back.take_before(Watermark::MAX, 0).expect("split");
        assert_eq!(times(&out), vec![Some(7), None, Some(3)]);
        let names = out[0]
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("text");
        assert_eq!(names.value(0), "r7");
        assert!(names.is_null(1));
    }

    #[test]
    fn a_cut_short_checkpoint_is_an_error() {
        let mut held = Held::new(schema());
        held.push(batch(vec![Some(7)]));
        let mut bytes = Vec::new();
        held.write(&mut bytes).expect("written");
        bytes.truncate(bytes.len() - 1);
        let mut back = Held::new(schema());
        assert!(back.read(&mut bytes.as_slice(), 1).is_err());
        assert!(back.read(&mut [].as_slice(), 1).is_err());
    }
}
