//! The running `extreme_filter`: counts each batch's rows, then passes the batch whole on
//! output 1 and the rows that may still match on output 0.

use anduin_operator_api::event_time::event_times;
use anduin_operator_api::rescale::{Combine, RescaleError, RescaleMeta};
use anduin_operator_api::{Collector, Operator, OperatorError, RestoreIn, SnapshotOut};
use anduin_types::Watermark;
use arrow::array::{Array, BooleanArray, Int64Array};
use arrow::compute::{cast, filter_record_batch};
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

use super::best::{Best, Saved};
use super::Setup;

/// The output of the rows kept, and of every row.
const KEPT: usize = 0;
const EVERY: usize = 1;

/// What the filter keeps in a checkpoint's manifest.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    /// The watermark and the best value of each window held.
    best: Saved,
    /// Rows dropped so far.
    pruned: u64,
}

impl RescaleMeta for Meta {
    fn combine(parts: Vec<Self>, how: Combine) -> Result<Self, RescaleError> {
        // Each instance counted only rows the window counts: the best over them all is
        // still a bound the window's extreme reaches. The latest watermark counts the
        // fewest rows.
        let watermark = parts
            .iter()
            .map(|p| p.best.watermark)
            .max()
            .unwrap_or(i64::MIN);
        let mut all: Vec<(i64, i64)> = parts.iter().flat_map(|p| p.best.best.clone()).collect();
        all.sort_unstable();
        let pruned = how.counter(parts.iter().map(|p| p.pruned));
        let max = parts.first().is_none_or(|p| p.best.max);
        Ok(Meta {
            best: Saved {
                watermark,
                best: merged(all, max),
                max,
            },
            pruned,
        })
    }
}

/// Per window start (sorted), the best value of `all`.
fn merged(all: Vec<(i64, i64)>, max: bool) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(all.len());
    for (s, v) in all {
        match out.last_mut() {
            Some((last, b)) if *last == s => {
                *b = if max { (*b).max(v) } else { (*b).min(v) };
            }
            _ => out.push((s, v)),
        }
    }
    out
}

/// A running `extreme_filter`.
#[derive(Debug)]
pub(crate) struct ExtremeFilter {
    setup: Setup,
    best: Best,
    /// Rows dropped (not passed to the join) so far.
    pruned: u64,
}

impl ExtremeFilter {
    pub(crate) fn new(setup: Setup) -> Self {
        let best = Best::new(setup.extreme, setup.reach);
        Self {
            setup,
            best,
            pruned: 0,
        }
    }

    fn err(&self, e: impl std::fmt::Display) -> OperatorError {
        OperatorError::Execution {
            operator: self.setup.name.clone(),
            message: e.to_string(),
        }
    }

    /// Which rows of `batch` may still match (after counting them all).
    fn judge(&mut self, batch: &RecordBatch) -> Result<BooleanArray, OperatorError> {
        let times = event_times(batch, self.setup.time);
        let values =
            cast(batch.column(self.setup.value), &DataType::Int64).map_err(|e| self.err(e))?;
        let values = values
            .as_any()
            .downcast_ref::<Int64Array>()
            .ok_or_else(|| {
                OperatorError::internal(&self.setup.name, "a cast to Int64 gave another type")
            })?;
        let rows = || {
            times.iter().enumerate().map(|(i, t)| {
                let v = (!values.is_null(i)).then(|| values.value(i));
                t.zip(v)
            })
        };
        for (t, v) in rows().flatten() {
            self.best.count(t, v);
        }
        Ok(rows()
            .map(|tv| Some(tv.is_none_or(|(t, v)| self.best.may_match(t, v))))
            .collect())
    }
}

impl Operator for ExtremeFilter {
    fn name(&self) -> &str {
        &self.setup.name
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let keep = self.judge(&batch)?;
        let kept = keep.true_count();
        self.pruned += (batch.num_rows() - kept) as u64;
        let rows = if kept == batch.num_rows() {
            Some(batch.clone())
        } else if kept > 0 {
            Some(filter_record_batch(&batch, &keep).map_err(|e| self.err(e))?)
        } else {
            None
        };
        out.collect(EVERY, batch)?;
        if let Some(rows) = rows {
            out.collect(KEPT, rows)?;
        }
        Ok(())
    }

    fn handle_watermark(
        &mut self,
        watermark: Watermark,
        _out: &mut dyn Collector,
    ) -> Result<Option<Watermark>, OperatorError> {
        self.best.advance(watermark.0);
        Ok(Some(watermark))
    }

    fn on_input_exhausted(
        &mut self,
        _input: usize,
        _out: &mut dyn Collector,
    ) -> Result<bool, OperatorError> {
        Ok(true)
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        let meta = Meta {
            best: self.best.save(),
            pruned: self.pruned,
        };
        out.inline_typed(&self.setup.name, &meta)
    }

    fn restore(&mut self, state: RestoreIn) -> Result<(), OperatorError> {
        let meta: Meta = state.inline_as(&self.setup.name)?;
        self.best.restore(meta.best);
        self.pruned = meta.pruned;
        Ok(())
    }

    fn rescale_inline(
        &self,
        parts: &[Option<serde_json::Value>],
        how: Combine,
    ) -> Result<Option<serde_json::Value>, RescaleError> {
        anduin_operator_api::rescale::rescale_inline_as::<Meta>(parts, how)
    }

    /// Rows dropped before the join (`rows_pruned`) and the windows whose best value is held.
    fn metrics(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("rows_pruned", self.pruned),
            ("windows_held", self.best.windows() as u64),
        ]
    }

    fn is_stateless(&self) -> bool {
        false
    }
}
