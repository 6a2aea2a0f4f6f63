//! The event loop of a task headed by a source: poll, batch up with a linger time, push
//! through the chain.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anduin_operators::{OperatorError, Source, SourcePoll};
use arrow::compute::concat_batches;
use arrow::record_batch::RecordBatch;

use crate::chain::{end_outlets, Chain};
use crate::channel::Outlet;
use crate::stats::Counters;

/// How long a source waits for input at most before checking for a stop request.
const IDLE_CHECK: Duration = Duration::from_millis(100);

/// A source and the chain fused behind it.
pub(crate) struct SourceTask {
    pub name: String,
    pub source: Box<dyn Source>,
    pub counters: Arc<Counters>,
    /// Channels for the source's output when it is not fused with the chain.
    pub outlets: Vec<Outlet>,
    pub chain: Chain,
    pub batch_size: usize,
    pub linger: Duration,
    /// Stop cleanly (Ctrl-C).
    pub stop: Arc<AtomicBool>,
    /// Another task failed: stop without finishing.
    pub abort: Arc<AtomicBool>,
}

/// Rows waiting to be sent as one batch.
struct Pending {
    batches: Vec<RecordBatch>,
    rows: usize,
    since: Option<Instant>,
}

impl SourceTask {
    /// Runs until the source is exhausted, a stop is requested, or something fails.
    /// Returns whether the run was stopped on request.
    pub(crate) fn run(mut self) -> Result<bool, OperatorError> {
        let mut pending = Pending {
            batches: Vec::new(),
            rows: 0,
            since: None,
        };
        let mut stopped = false;
        loop {
            if self.abort.load(Ordering::Relaxed) {
                return Ok(false);
            }
            if self.stop.load(Ordering::Relaxed) {
                stopped = true;
                break;
            }
            let deadline = match pending.since {
                Some(t) => t + self.linger,
                None => Instant::now() + IDLE_CHECK,
            };
            let want = self.batch_size.saturating_sub(pending.rows).max(1);
            match self.source.poll(want, deadline)? {
                SourcePoll::Batch(b) => {
                    if b.num_rows() == 0 {
                        continue;
                    }
                    pending.since.get_or_insert_with(Instant::now);
                    pending.rows += b.num_rows();
                    pending.batches.push(b);
                    if pending.rows >= self.batch_size {
                        self.flush(&mut pending)?;
                    }
                }
                SourcePoll::Idle => {}
                SourcePoll::Exhausted => break,
            }
            if pending.since.is_some_and(|t| t.elapsed() >= self.linger) {
                self.flush(&mut pending)?;
            }
        }
        self.flush(&mut pending)?;
        end_outlets(&mut self.outlets, &self.name)?;
        self.chain.end_of_input()?;
        Ok(stopped)
    }

    /// Sends what is pending in batches of at most `batch_size` rows.
    fn flush(&mut self, pending: &mut Pending) -> Result<(), OperatorError> {
        pending.since = None;
        pending.rows = 0;
        let batches = std::mem::take(&mut pending.batches);
        let Some(first) = batches.first() else {
            return Ok(());
        };
        let whole = if batches.len() == 1 {
            first.clone()
        } else {
            concat_batches(&first.schema(), &batches).map_err(|e| OperatorError::Execution {
                operator: self.name.clone(),
                message: e.to_string(),
            })?
        };
        let mut offset = 0;
        while offset < whole.num_rows() {
            let len = self.batch_size.min(whole.num_rows() - offset);
            let slice = whole.slice(offset, len);
            self.chain
                .push_from_source(&mut self.outlets, &self.counters, slice)?;
            offset += len;
        }
        Ok(())
    }
}
