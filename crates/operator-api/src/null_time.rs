//! Rows that reach an event-time operator (window, join, pattern) without an event time: a
//! map that computes the time column can produce a null, which no window, join or match can
//! place. Each such row goes to the dead letters with its values and the reason, instead of
//! being dropped as late.

use arrow::array::Array;
use arrow::compute::{filter_record_batch, is_not_null};
use arrow::record_batch::RecordBatch;

use crate::{row_as_json, DeadLetter, OperatorError, RejectedRow};

/// `batch` without its rows whose column `column` (the event time) is null; each of those is
/// rejected to `dead_letter` for operator `operator`.
pub fn reject_null_times(
    batch: RecordBatch,
    column: usize,
    operator: &str,
    dead_letter: &DeadLetter,
) -> Result<RecordBatch, OperatorError> {
    let Some(times) = batch.columns().get(column) else {
        return Ok(batch);
    };
    if times.null_count() == 0 {
        return Ok(batch);
    }
    let schema = batch.schema();
    let reason = format!(
        "event-time column `{}` is null: the row has no time to be placed by",
        schema.field(column).name()
    );
    for row in (0..batch.num_rows()).filter(|i| times.is_null(*i)) {
        let rejected = RejectedRow {
            reason: reason.clone(),
            expression: None,
            at: None,
            row: row_as_json(&batch, row),
            origin: None,
        };
        dead_letter
            .reject_row(operator, &rejected)
            .map_err(|e| dead_letter.write_error(operator, e))?;
    }
    let keep = is_not_null(times.as_ref()).map_err(|e| arrow_error(operator, &e))?;
    filter_record_batch(&batch, &keep).map_err(|e| arrow_error(operator, &e))
}

fn arrow_error(operator: &str, e: &arrow::error::ArrowError) -> OperatorError {
    OperatorError::Execution {
        operator: operator.to_string(),
        message: format!("leaving out the rows without an event time: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;
    use crate::DeadLetterTarget;

    #[test]
    fn a_row_without_event_time_goes_to_the_dead_letters_with_its_values() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out.rejected");
        let dead_letter = DeadLetter::new(DeadLetterTarget::File(path.clone()));
        let schema = Arc::new(Schema::new(vec![
            Field::new("ts", DataType::Int64, true),
            Field::new("v", DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])),
                Arc::new(Int64Array::from(vec![10, 20, 30])),
            ],
        )
        .expect("batch");
        let kept = reject_null_times(batch, 0, "w", &dead_letter).expect("rejects");
        assert_eq!(kept.num_rows(), 2);
        assert_eq!((dead_letter.count(), dead_letter.rejected_rows()), (1, 1));
        dead_letter.flush().expect("flush");
        let line: serde_json::Value =
            serde_json::from_str(std::fs::read_to_string(&path).expect("read").trim())
                .expect("json");
        assert_eq!(line["operator"], "w");
        assert_eq!(line["row"]["v"], 20);
        assert!(line["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("event-time column `ts` is null")));
    }
}
