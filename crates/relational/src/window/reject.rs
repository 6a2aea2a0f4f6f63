//! Rows in no window: a row whose window would not fit in a timestamp (an event time within
//! one window length of either end of the `i64` range, see [`super::assign`]) goes to the
//! dead letters with the reason, instead of being dropped silently or given wrapped bounds.
//! The window operator and the window join both use it.

use arrow::array::BooleanArray;
use arrow::compute::filter_record_batch;
use arrow::record_batch::RecordBatch;

use super::assign::Unfit;
use super::keys::arrow_error;
use anduin_operator_api::{row_as_json, DeadLetter, OperatorError, RejectedRow};

/// The rows of `batch` whose event time (`times`, one per row; a null is left to the late
/// rows) `fits`; the others are written to `dead_letter` as rejected by `operator`.
pub(crate) fn keep_fitting(
    batch: RecordBatch,
    times: &[Option<i64>],
    operator: &str,
    dead_letter: &DeadLetter,
    fits: impl Fn(i64) -> Result<(), Unfit>,
) -> Result<RecordBatch, OperatorError> {
    let mut keep: Option<Vec<bool>> = None;
    for (i, t) in times.iter().enumerate() {
        let Some(ts) = *t else {
            continue;
        };
        let Err(unfit) = fits(ts) else {
            continue;
        };
        if let Some(k) = keep
            .get_or_insert_with(|| vec![true; times.len()])
            .get_mut(i)
        {
            *k = false;
        }
        let row = RejectedRow {
            reason: unfit.reason(ts),
            expression: None,
            at: None,
            row: row_as_json(&batch, i),
            origin: None,
        };
        dead_letter
            .reject_row(operator, &row)
            .map_err(|e| dead_letter.write_error(operator, e))?;
        tracing::debug!(
            operator,
            event_time = ts,
            "a row in no window went to the dead letters"
        );
    }
    match keep {
        None => Ok(batch),
        Some(keep) => filter_record_batch(&batch, &BooleanArray::from(keep))
            .map_err(|e| arrow_error(operator, &e)),
    }
}
