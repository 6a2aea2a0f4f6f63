//! Processing-time windows (`time_kind = "processing"`, SQL's `DESCRIPTOR(p)` over a column
//! computed as `PROCTIME()`): the window reads its own wall clock ([`WallClock`]) instead of
//! the time column and the watermark. A row belongs to the window of the instant the window
//! processes it (its time column is overwritten with that instant: the column's own value,
//! taken where `PROCTIME()` was evaluated upstream, plays no part, as in Flink, whose
//! processing-time attribute is materialized only where it is used); a window fires when the
//! clock passes its end: on the next batch, or on the task's timer
//! ([`anduin_operator_api::Operator::timer_due_in`]) when no row comes. No row is ever late.
//! At the end of a finished input (the watermark of +∞) every open window fires.

use std::fmt::Debug;
#[cfg(test)]
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use arrow::array::{ArrayRef, Int64Array};
use arrow::record_batch::RecordBatch;

use anduin_operator_api::OperatorError;

/// Where a processing-time window reads the wall clock: milliseconds since the Unix epoch.
pub(crate) trait WallClock: Send + Sync + Debug {
    /// Now, in milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The system's wall clock (a clock set before 1970 reads as the epoch).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SystemWallClock;

impl WallClock for SystemWallClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A wall clock that stands still until it is set (tests).
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct ManualWallClock(AtomicI64);

#[cfg(test)]
impl ManualWallClock {
    /// A clock standing at `ms`.
    pub(crate) fn at(ms: i64) -> Arc<Self> {
        Arc::new(Self(AtomicI64::new(ms)))
    }

    /// Sets the clock to `ms`.
    pub(crate) fn set(&self, ms: i64) {
        self.0.store(ms, Ordering::SeqCst);
    }
}

#[cfg(test)]
impl WallClock for ManualWallClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// `batch` with column `column` holding `now` in every row (as the column's type: a
/// timestamp of milliseconds, or an int).
pub(crate) fn stamped(
    batch: RecordBatch,
    column: usize,
    now: i64,
    operator: &str,
) -> Result<RecordBatch, OperatorError> {
    let schema = batch.schema();
    let ty = schema.field(column).data_type();
    let times: ArrayRef = Arc::new(Int64Array::from(vec![now; batch.num_rows()]));
    let times = arrow::compute::cast(&times, ty).map_err(|e| {
        OperatorError::internal(
            operator,
            format!("stamping the processing time as {ty}: {e}"),
        )
    })?;
    let mut columns = batch.columns().to_vec();
    if let Some(c) = columns.get_mut(column) {
        *c = times;
    }
    RecordBatch::try_new(schema, columns).map_err(|e| {
        OperatorError::internal(operator, format!("stamping the processing time: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray, TimestampMillisecondArray};
    use arrow::datatypes::{DataType, Field, Schema, TimeUnit, TimestampMillisecondType};

    #[test]
    fn a_stamped_batch_holds_the_instant_in_its_time_column_only() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("p", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(TimestampMillisecondArray::from(vec![Some(5), None])),
            ],
        )
        .expect("valid");
        let out = stamped(batch, 1, 42_000, "w").expect("stamped");
        let times = out.column(1).as_primitive::<TimestampMillisecondType>();
        assert_eq!(times.values().to_vec(), [42_000, 42_000]);
        assert_eq!(times.null_count(), 0);
        assert_eq!(
            out.column(0)
                .as_primitive::<arrow::datatypes::Int64Type>()
                .values()
                .to_vec(),
            [1, 2]
        );
    }
}
