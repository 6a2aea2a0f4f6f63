//! Joined rows: a left row and a right row (or nulls, for an unmatched left row of an outer
//! join) gathered from the buffered batches into one result batch.

use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, TimestampMillisecondArray};
use arrow::compute::interleave;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;

use super::store::Chunks;
use anduin_operator_api::OperatorError;

/// One result row: where its left row is, and where its right row is (if any).
pub(crate) type Pair = ((usize, usize), Option<(usize, usize)>);

fn err(operator: &str, e: arrow::error::ArrowError) -> OperatorError {
    OperatorError::Execution {
        operator: operator.to_string(),
        message: e.to_string(),
    }
}

/// The columns of one side for the rows at `at` (`None`: a null row).
fn gather(
    store: &Chunks,
    at: &[Option<(usize, usize)>],
    operator: &str,
) -> Result<Vec<ArrayRef>, OperatorError> {
    let Some(width) = store
        .batches
        .iter()
        .flatten()
        .next()
        .map(|b| b.num_columns())
    else {
        return Err(OperatorError::internal(
            operator,
            "the join has no buffered rows to gather from",
        ));
    };
    let mut columns = Vec::with_capacity(width);
    for c in 0..width {
        // Every live batch's column, then a one-row null array for missing rows.
        let mut arrays: Vec<ArrayRef> = Vec::new();
        let mut index_of = vec![usize::MAX; store.batches.len()];
        let mut dtype = None;
        for (i, chunk) in store.batches.iter().enumerate() {
            if let Some(b) = chunk {
                index_of[i] = arrays.len();
                dtype.get_or_insert_with(|| b.column(c).data_type().clone());
                arrays.push(Arc::clone(b.column(c)));
            }
        }
        let null_slot = arrays.len();
        if let Some(t) = &dtype {
            arrays.push(new_null_array(t, 1));
        }
        let indices: Vec<(usize, usize)> = at
            .iter()
            .map(|a| match a {
                Some((chunk, row)) => (index_of.get(*chunk).copied().unwrap_or(null_slot), *row),
                None => (null_slot, 0),
            })
            .collect();
        let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
        columns.push(interleave(&refs, &indices).map_err(|e| err(operator, e))?);
    }
    Ok(columns)
}

/// The result batch of `pairs`, with `windows` (start, end per row) first for window joins.
pub(crate) fn joined(
    schema: &SchemaRef,
    left: &Chunks,
    right: &Chunks,
    pairs: &[Pair],
    windows: Option<(Vec<i64>, Vec<i64>)>,
    operator: &str,
) -> Result<RecordBatch, OperatorError> {
    let lefts: Vec<Option<(usize, usize)>> = pairs.iter().map(|(l, _)| Some(*l)).collect();
    let rights: Vec<Option<(usize, usize)>> = pairs.iter().map(|(_, r)| *r).collect();
    let mut columns: Vec<ArrayRef> = Vec::new();
    if let Some((starts, ends)) = windows {
        columns.push(Arc::new(TimestampMillisecondArray::from(starts)));
        columns.push(Arc::new(TimestampMillisecondArray::from(ends)));
    }
    columns.extend(gather(left, &lefts, operator)?);
    if right.batches.iter().flatten().next().is_some() {
        columns.extend(gather(right, &rights, operator)?);
    } else {
        // Nothing buffered on the right: an outer join's rows are all null there.
        let start = columns.len();
        for f in schema.fields().iter().skip(start) {
            columns.push(new_null_array(f.data_type(), pairs.len()));
        }
    }
    RecordBatch::try_new(Arc::clone(schema), columns).map_err(|e| err(operator, e))
}
