//! Result rows: window_start, window_end, keys, aggregates (cast to the stream's types).

use std::sync::Arc;

use arrow::array::{ArrayRef, TimestampMillisecondArray, UInt32Array};
use arrow::compute::{cast_with_options, CastOptions};
use arrow::record_batch::RecordBatch;
use arrow::row::Rows;

use super::keys::{arrow_error, KeyCodec};
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

    /// Adds the groups of one window in the order of their keys' values, whatever order
    /// they were numbered in (`keys` and `values` in group-id order).
    ///
    /// A window numbers its groups as their keys first come; a run restored from a
    /// checkpoint numbers them as it reads them back, in another order. Emitting in key
    /// order makes a window's rows come out in one order on every run, which a sink that
    /// names rows by their place needs (NATS exactly once: `anduin_connectors::nats::dedup`).
    pub(crate) fn add_in_key_order(
        &mut self,
        start: i64,
        end: i64,
        codec: &KeyCodec,
        keys: &Rows,
        values: Vec<ArrayRef>,
        operator: &str,
    ) -> Result<(), OperatorError> {
        let Some(order) = key_order(keys) else {
            let keys = codec.columns(keys.iter(), operator)?;
            self.add(start, end, keys, values);
            return Ok(());
        };
        let key_columns = codec.columns(
            order.values().iter().map(|i| keys.row(*i as usize)),
            operator,
        )?;
        let values = values
            .iter()
            .map(|v| arrow::compute::take(v, &order, None))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| arrow_error(operator, &e))?;
        self.add(start, end, key_columns, values);
        Ok(())
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

/// The group ids of `keys` in the order of their bytes (the order of the key values: Arrow's
/// row format compares as the values do), or `None` when they are in that order already.
fn key_order(keys: &Rows) -> Option<UInt32Array> {
    let n = keys.num_rows();
    if (1..n).all(|i| keys.row(i - 1) <= keys.row(i)) {
        return None;
    }
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by(|a, b| keys.row(*a as usize).cmp(&keys.row(*b as usize)));
    Some(UInt32Array::from(order))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    #[test]
    fn groups_numbered_in_any_order_come_out_in_key_order() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("n", DataType::Int64, false),
        ]));
        let codec = KeyCodec::new(schema).expect("utf8 and int64 keys encode");
        let key_columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![
                Some("b"),
                None,
                Some("a"),
                Some("b"),
            ])),
            Arc::new(Int64Array::from(vec![2, 7, 9, 1])),
        ];
        let keys = codec.rows(&key_columns, 4, "w").expect("encodes");
        let values: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(vec![20, 70, 90, 10]))];
        let mut results = Results::default();
        results
            .add_in_key_order(0, 10, &codec, &keys, values, "w")
            .expect("reorders");
        let k: Vec<Option<String>> = results.keys[0][0]
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("utf8")
            .iter()
            .map(|s| s.map(str::to_string))
            .collect();
        assert_eq!(
            k,
            [None, Some("a".into()), Some("b".into()), Some("b".into())]
        );
        let v = results.values[0][0]
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("int64");
        assert_eq!(v.values(), &[70, 90, 10, 20]);
        assert_eq!(results.starts, [0; 4]);
    }

    #[test]
    fn groups_already_in_key_order_are_not_reordered() {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        let codec = KeyCodec::new(schema).expect("int64 keys encode");
        let keys = codec
            .rows(
                &[Arc::new(Int64Array::from(vec![-3, 1, 5])) as ArrayRef],
                3,
                "w",
            )
            .expect("encodes");
        assert!(key_order(&keys).is_none());
    }
}
