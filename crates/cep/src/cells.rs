//! Rows of Arrow batches as cells for the matcher, and cells back to Arrow columns (a
//! measure's lists to a list column).

use std::sync::Arc;

use anduin_types::ColumnType;
use arrow::array::{
    Array, ArrayRef, BooleanArray, BooleanBuilder, Float64Array, Float64Builder, Int64Array,
    Int64Builder, ListArray, StringArray, StringBuilder, TimestampMillisecondArray,
    TimestampMillisecondBuilder, UInt32Array,
};
use arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::compute::{cast, take};
use arrow::datatypes::{DataType, Field};

use super::value::Value;

/// A column of a batch, read cell by cell as rows are built (no column of cells is made
/// first: at cep_q0's rates that copy was a batch-sized allocation per batch).
pub(crate) enum ColumnCells {
    Int(Int64Array),
    Timestamp(TimestampMillisecondArray),
    Double(Float64Array),
    Bool(BooleanArray),
    String(StringArray),
}

impl ColumnCells {
    /// Column `c` of the stream type `t` (cast to `t`'s Arrow type if it is another).
    pub(crate) fn new(c: &ArrayRef, t: ColumnType) -> Result<Self, String> {
        let c = if *c.data_type() == t.arrow_type() {
            Arc::clone(c)
        } else {
            cast(c, &t.arrow_type()).map_err(|e| e.to_string())?
        };
        let wrong = || format!("a column of type {} holds {}", t.name(), c.data_type());
        let any = c.as_any();
        Ok(match t {
            ColumnType::Int => {
                ColumnCells::Int(any.downcast_ref::<Int64Array>().ok_or_else(wrong)?.clone())
            }
            ColumnType::Timestamp => ColumnCells::Timestamp(
                any.downcast_ref::<TimestampMillisecondArray>()
                    .ok_or_else(wrong)?
                    .clone(),
            ),
            ColumnType::Double => ColumnCells::Double(
                any.downcast_ref::<Float64Array>()
                    .ok_or_else(wrong)?
                    .clone(),
            ),
            ColumnType::Bool => ColumnCells::Bool(
                any.downcast_ref::<BooleanArray>()
                    .ok_or_else(wrong)?
                    .clone(),
            ),
            ColumnType::String => {
                ColumnCells::String(any.downcast_ref::<StringArray>().ok_or_else(wrong)?.clone())
            }
            _ => {
                return Err(format!(
                    "the column type {} is not supported by `pattern`",
                    t.name()
                ))
            }
        })
    }

    /// The cell of row `i`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Value {
        fn at<A: Array, T>(
            a: &A,
            i: usize,
            get: impl Fn(&A, usize) -> T,
            wrap: impl Fn(T) -> Value,
        ) -> Value {
            if a.is_null(i) {
                Value::Null
            } else {
                wrap(get(a, i))
            }
        }
        match self {
            ColumnCells::Int(a) => at(a, i, |a, i| a.value(i), Value::Int),
            ColumnCells::Timestamp(a) => at(a, i, |a, i| a.value(i), Value::Int),
            ColumnCells::Double(a) => at(a, i, |a, i| a.value(i), Value::Float),
            ColumnCells::Bool(a) => at(a, i, |a, i| a.value(i), Value::Bool),
            ColumnCells::String(a) => at(a, i, |a, i| Arc::<str>::from(a.value(i)), Value::Str),
        }
    }
}

/// The kept columns (`Setup::cells_of`, in its order) of one input batch, shared by its rows
/// while they wait for the watermark: a waiting row is a reference to these and its index,
/// and becomes cells only when it is released.
///
/// At a million events per second of event time a Nexmark run holds 4 s of rows waiting
/// (≈ 3.7 M). As cells each was a boxed slice of 24-byte values (7 for cep_q3's bids, 168
/// bytes in a 192-byte block) and a block per string (`channel`, `url`, `extra`: three more
/// allocations, ≈ 200 bytes): more than twice what the Arrow columns hold, all of it fresh
/// memory for the kernel to zero. The columns are freed when the last row of the batch is
/// released.
pub(crate) struct BatchCells(Vec<ColumnCells>);

impl BatchCells {
    /// The columns `kept` (in order) of `batch`, of the stream types `types` (by input column).
    pub(crate) fn new(
        batch: &arrow::record_batch::RecordBatch,
        kept: &[usize],
        types: &[ColumnType],
    ) -> Result<Self, String> {
        let columns = kept
            .iter()
            .map(|c| ColumnCells::new(&tight(batch.column(*c))?, types[*c]))
            .collect::<Result<_, _>>()?;
        Ok(Self(columns))
    }

    /// Rows of cells (each as many as `types`, of those types) as columns: the rows waiting
    /// for the watermark that a restore read back.
    pub(crate) fn of_rows<'a>(
        rows: impl Iterator<Item = &'a [Value]> + Clone,
        types: &[ColumnType],
    ) -> Result<Self, String> {
        let columns = types
            .iter()
            .enumerate()
            .map(|(c, t)| {
                let values = rows.clone().map(|r| r.get(c).unwrap_or(&Value::Null));
                ColumnCells::new(&cells_to_column(values, *t), *t)
            })
            .collect::<Result<_, _>>()?;
        Ok(Self(columns))
    }

    /// The cell `c` of row `i`.
    #[inline]
    pub(crate) fn cell(&self, c: usize, i: usize) -> Value {
        self.0.get(c).map_or(Value::Null, |col| col.get(i))
    }

    /// The first `n` cells of row `i` (all of them if `n` is more).
    pub(crate) fn cells(&self, i: usize, n: usize) -> Box<[Value]> {
        self.0.iter().take(n).map(|col| col.get(i)).collect()
    }

    /// The cells of row `i` from cell `from` on.
    pub(crate) fn cells_from(&self, i: usize, from: usize) -> impl Iterator<Item = Value> + '_ {
        self.0.iter().skip(from).map(move |col| col.get(i))
    }

    /// How many cells a row has.
    pub(crate) fn width(&self) -> usize {
        self.0.len()
    }
}

/// Column `c`, or a copy of it in buffers of its size where its own hold much more: the
/// builders of a batch grow their buffers by doubling (a Nexmark batch's `url` and `extra`
/// strings have up to twice the room they use), and a waiting row holds its batch's buffers
/// for seconds.
fn tight(c: &ArrayRef) -> Result<ArrayRef, String> {
    let data = c.to_data();
    let used = data.get_slice_memory_size().map_err(|e| e.to_string())?;
    if data.get_buffer_memory_size() <= used + used / 4 {
        return Ok(Arc::clone(c));
    }
    let rows = u32::try_from(c.len()).map_err(|_| format!("a batch of {} rows", c.len()))?;
    take(c, &UInt32Array::from_iter_values(0..rows), None).map_err(|e| e.to_string())
}

pub(crate) fn column_to_cells(c: &ArrayRef, t: ColumnType) -> Result<Vec<Value>, String> {
    fn collect<A: Array, T>(
        a: &A,
        get: impl Fn(&A, usize) -> T,
        wrap: impl Fn(T) -> Value,
    ) -> Vec<Value> {
        (0..a.len())
            .map(|i| {
                if a.is_null(i) {
                    Value::Null
                } else {
                    wrap(get(a, i))
                }
            })
            .collect()
    }
    if *c.data_type() != t.arrow_type() {
        let c = cast(c, &t.arrow_type()).map_err(|e| e.to_string())?;
        return column_to_cells(&c, t);
    }
    let wrong = || format!("a column of type {} holds {}", t.name(), c.data_type());
    Ok(match t {
        ColumnType::Int => {
            let a = c.as_any().downcast_ref::<Int64Array>().ok_or_else(wrong)?;
            collect(a, |a, i| a.value(i), Value::Int)
        }
        ColumnType::Timestamp => {
            let a = c
                .as_any()
                .downcast_ref::<TimestampMillisecondArray>()
                .ok_or_else(wrong)?;
            collect(a, |a, i| a.value(i), Value::Int)
        }
        ColumnType::Double => {
            let a = c
                .as_any()
                .downcast_ref::<Float64Array>()
                .ok_or_else(wrong)?;
            collect(a, |a, i| a.value(i), Value::Float)
        }
        ColumnType::Bool => {
            let a = c
                .as_any()
                .downcast_ref::<BooleanArray>()
                .ok_or_else(wrong)?;
            collect(a, |a, i| a.value(i), Value::Bool)
        }
        ColumnType::String => {
            let a = c.as_any().downcast_ref::<StringArray>().ok_or_else(wrong)?;
            collect(a, |a, i| Arc::<str>::from(a.value(i)), Value::Str)
        }
        _ => {
            return Err(format!(
                "the column type {} is not supported by `pattern`",
                t.name()
            ))
        }
    })
}

/// One column of type `t` from `values`.
pub(crate) fn cells_to_column<'a>(
    values: impl Iterator<Item = &'a Value>,
    t: ColumnType,
) -> ArrayRef {
    match t {
        ColumnType::Int => {
            let mut b = Int64Builder::new();
            for v in values {
                b.append_option(match v {
                    Value::Int(i) => Some(*i),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        ColumnType::Timestamp => {
            let mut b = TimestampMillisecondBuilder::new();
            for v in values {
                b.append_option(match v {
                    Value::Int(i) => Some(*i),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        ColumnType::Double => {
            let mut b = Float64Builder::new();
            for v in values {
                b.append_option(v.as_f64());
            }
            Arc::new(b.finish())
        }
        ColumnType::Bool => {
            let mut b = BooleanBuilder::new();
            for v in values {
                b.append_option(match v {
                    Value::Bool(x) => Some(*x),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        ColumnType::String => {
            let mut b = StringBuilder::new();
            for v in values {
                match v {
                    Value::Str(s) => b.append_value(s),
                    _ => b.append_null(),
                }
            }
            Arc::new(b.finish())
        }
        _ => arrow::array::new_null_array(&t.arrow_type(), values.count()),
    }
}

/// The type of an output column: cells of a column type, or lists of them (a measure
/// that is an `array_agg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutType {
    Cell(ColumnType),
    List(ColumnType),
}

impl OutType {
    /// The Arrow type of the column: a list is Arrow's `List` of nullable items.
    pub(crate) fn arrow_type(self) -> DataType {
        match self {
            OutType::Cell(t) => t.arrow_type(),
            OutType::List(t) => {
                DataType::List(Arc::new(Field::new_list_field(t.arrow_type(), true)))
            }
        }
    }
}

/// One output column of type `t` from `values`; `Err` when a batch's lists hold more values
/// than an Arrow list column can (2^31 − 1).
pub(crate) fn out_column<'a>(
    values: impl Iterator<Item = &'a Value>,
    t: OutType,
) -> Result<ArrayRef, String> {
    let item = match t {
        OutType::Cell(t) => return Ok(cells_to_column(values, t)),
        OutType::List(item) => item,
    };
    let mut offsets: Vec<i32> = vec![0];
    let mut valid = Vec::new();
    let mut items: Vec<&Value> = Vec::new();
    for v in values {
        match v {
            Value::List(list) => {
                items.extend(list.iter());
                valid.push(true);
            }
            _ => valid.push(false),
        }
        offsets.push(i32::try_from(items.len()).map_err(|_| {
            format!(
                "the lists of one output batch hold more than {} values",
                i32::MAX
            )
        })?);
    }
    let field = Arc::new(Field::new_list_field(item.arrow_type(), true));
    let list = ListArray::try_new(
        field,
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        cells_to_column(items.into_iter(), item),
        Some(NullBuffer::from(valid)),
    )
    .map_err(|e| e.to_string())?;
    Ok(Arc::new(list))
}

/// A row of cells of the columns `schema` (of the stream types `types`) as a JSON object, as
/// a rejected row shows it (see [`anduin_operator_api::row_as_json`]).
pub(crate) fn row_json(
    schema: &arrow::datatypes::Schema,
    types: &[ColumnType],
    cells: &[Value],
) -> serde_json::Value {
    let fields: Vec<arrow::datatypes::Field> = schema
        .fields()
        .iter()
        .zip(types)
        .map(|(f, t)| arrow::datatypes::Field::new(f.name(), t.arrow_type(), true))
        .collect();
    let columns: Vec<ArrayRef> = types
        .iter()
        .zip(cells)
        .map(|(t, v)| cells_to_column(std::iter::once(v), *t))
        .collect();
    match arrow::record_batch::RecordBatch::try_new(
        Arc::new(arrow::datatypes::Schema::new(fields)),
        columns,
    ) {
        Ok(batch) => anduin_operator_api::row_as_json(&batch, 0),
        Err(e) => serde_json::Value::String(format!("<{e}>")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_round_trip_through_arrow() {
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![Some(1), None])),
            Arc::new(TimestampMillisecondArray::from(vec![Some(5), Some(6)])),
            Arc::new(StringArray::from(vec![Some("x"), None])),
        ];
        let types = [ColumnType::Int, ColumnType::Timestamp, ColumnType::String];
        for (c, t) in cols.iter().zip(types) {
            let read = ColumnCells::new(c, t).expect("reads");
            let cells: Vec<Value> = (0..c.len()).map(|i| read.get(i)).collect();
            assert_eq!(cells, column_to_cells(c, t).expect("converts"));
            let back = cells_to_column(cells.iter(), t);
            assert_eq!(back.as_ref(), c.as_ref());
        }
    }
}
