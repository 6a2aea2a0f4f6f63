//! A batch made ready for windows: event times, key rows, aggregate inputs; late rows split
//! off first.

use arrow::array::{ArrayRef, BooleanArray};
use arrow::compute::{filter_record_batch, not};
use arrow::record_batch::RecordBatch;
use arrow::row::Rows;

use super::accs::Inputs;
use super::keys::arrow_error;
use super::WindowSetup;
pub(crate) use anduin_operator_api::event_time::event_times as times_of;
use anduin_operator_api::OperatorError;

/// The rows of a batch, ready to be assigned to windows.
pub(crate) struct Prepared {
    /// Event time of each row (none is null: rows without one went to the dead letters).
    pub times: Vec<i64>,
    /// The key of each row.
    pub keys: Rows,
    /// The aggregates' inputs.
    pub inputs: Inputs,
}

/// Splits `batch` into rows on time and late rows (event time before `cutoff`, the watermark
/// less the allowed lateness; rows without one went to the dead letters before, and would
/// count as late here).
pub(crate) fn split_late(
    batch: RecordBatch,
    setup: &WindowSetup,
    cutoff: i64,
) -> Result<(RecordBatch, Option<RecordBatch>), OperatorError> {
    let times = times_of(&batch, setup.time_column);
    let late: BooleanArray = times
        .iter()
        .map(|t| Some(t.is_none_or(|t| t < cutoff)))
        .collect();
    if late.true_count() == 0 {
        return Ok((batch, None));
    }
    let on_time = not(&late).map_err(|e| arrow_error(&setup.name, &e))?;
    let late_rows = filter_record_batch(&batch, &late).map_err(|e| arrow_error(&setup.name, &e))?;
    let kept = filter_record_batch(&batch, &on_time).map_err(|e| arrow_error(&setup.name, &e))?;
    Ok((kept, Some(late_rows)))
}

/// The aggregates' inputs on `batch`, or the first aggregate whose argument or filter fails
/// and its error.
pub(crate) fn aggregate_inputs(
    batch: &RecordBatch,
    setup: &WindowSetup,
) -> Result<Inputs, (usize, anduin_expr::ExprError)> {
    let mut args = Vec::with_capacity(setup.aggs.len());
    let mut filters = Vec::with_capacity(setup.aggs.len());
    for (i, a) in setup.aggs.iter().enumerate() {
        args.push(a.arguments(batch).map_err(|e| (i, e))?);
        filters.push(a.filter(batch).map_err(|e| (i, e))?);
    }
    Ok(Inputs { args, filters })
}

/// Prepares rows that are all on time, whose aggregate inputs are `inputs`.
pub(crate) fn prepare(
    batch: &RecordBatch,
    setup: &WindowSetup,
    inputs: Inputs,
) -> Result<Prepared, OperatorError> {
    let times = times_of(batch, setup.time_column)
        .into_iter()
        .map(|t| t.unwrap_or(i64::MIN))
        .collect();
    let key_columns: Vec<ArrayRef> = setup
        .key_columns
        .iter()
        .map(|i| std::sync::Arc::clone(batch.column(*i)))
        .collect();
    let keys = setup
        .codec
        .rows(&key_columns, batch.num_rows(), &setup.name)?;
    Ok(Prepared {
        times,
        keys,
        inputs,
    })
}
