//! What a run did: rows in and out of each operator.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Live counters of one operator instance.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub rows_in: AtomicU64,
    pub rows_out: AtomicU64,
}

impl Counters {
    pub(crate) fn add_in(&self, n: usize) {
        self.rows_in.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn add_out(&self, n: usize) {
        self.rows_out.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// Rows in and out of one operator over a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorStats {
    /// The operator's name.
    pub name: String,
    /// Its type.
    pub kind: String,
    /// Rows it received.
    pub rows_in: u64,
    /// Rows it emitted (for a sink, rows written).
    pub rows_out: u64,
}

/// The outcome of a successful run.
#[derive(Debug, Clone)]
pub struct RunSummary {
    /// Wall-clock time from start to the last flush.
    pub elapsed: Duration,
    /// One entry per operator, in topological order.
    pub operators: Vec<OperatorStats>,
    /// Whether the run ended because it was asked to stop, not because its input ended.
    pub stopped: bool,
}
