//! Rows to record values and keys, one record a row, with the writer's encoders.

use arrow::array::{Array, StringArray};
use arrow::record_batch::RecordBatch;

use crate::codec::{CsvEncoder, JsonLinesEncoder, TimestampFormat};

use super::decode::Format;

/// Encodes one row at a time.
pub(crate) struct RowEncoder {
    format: Format,
    ts: TimestampFormat,
}

impl RowEncoder {
    /// An encoder of `format` writing timestamps as `ts`.
    pub(crate) fn new(format: Format, ts: TimestampFormat) -> Self {
        Self { format, ts }
    }

    /// Each row of `batch` as one value: a CSV record without header, or a JSON object,
    /// without a line break.
    pub(crate) fn rows(&self, batch: &RecordBatch) -> Vec<Vec<u8>> {
        (0..batch.num_rows())
            .map(|i| {
                let row = batch.slice(i, 1);
                let mut out = Vec::new();
                match self.format {
                    Format::Csv { delimiter } => {
                        CsvEncoder::new(delimiter, false, self.ts).encode(&row, &mut out)
                    }
                    Format::Json => JsonLinesEncoder::new(self.ts).encode(&row, &mut out),
                    // Sinks refuse `raw` when bound (a null has no value to be); its value is
                    // the text of the row's first column.
                    Format::Raw => {
                        if let Some(t) = row
                            .columns()
                            .first()
                            .and_then(|c| c.as_any().downcast_ref::<StringArray>())
                            .filter(|t| t.is_valid(0))
                        {
                            out.extend_from_slice(t.value(0).as_bytes());
                        }
                        return out;
                    }
                }
                if out.last() == Some(&b'\n') {
                    out.pop();
                }
                if out.last() == Some(&b'\r') {
                    out.pop();
                }
                out
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    #[test]
    fn each_row_is_one_value_without_a_line_break() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("v", DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(vec!["a", "b,c"])),
                Arc::new(Int64Array::from(vec![1, 2])),
            ],
        )
        .expect("batch");
        let csv = RowEncoder::new(
            Format::Csv { delimiter: b',' },
            TimestampFormat::EpochMillis,
        );
        assert_eq!(csv.rows(&batch), [b"a,1".to_vec(), b"\"b,c\",2".to_vec()]);
        let json = RowEncoder::new(Format::Json, TimestampFormat::EpochMillis);
        assert_eq!(json.rows(&batch)[0], b"{\"k\":\"a\",\"v\":1}".to_vec());
    }
}
