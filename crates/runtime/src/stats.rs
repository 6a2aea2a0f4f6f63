//! What a run did: rows in and out of each operator.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Live counters of one operator instance.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub rows_in: AtomicU64,
    pub rows_out: AtomicU64,
    /// What the operator's instances reported with `Operator::metrics`, merged.
    pub metrics: Mutex<BTreeMap<&'static str, u64>>,
}

impl Counters {
    pub(crate) fn add_in(&self, n: usize) {
        self.rows_in.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn add_out(&self, n: usize) {
        self.rows_out.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Merges one instance's metrics: the maximum of `peak_*`, the sum of the others.
    pub(crate) fn add_metrics(&self, metrics: Vec<(&'static str, u64)>) {
        let mut all = self
            .metrics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (name, v) in metrics {
            let slot = all.entry(name).or_insert(0);
            *slot = if name.starts_with("peak_") {
                (*slot).max(v)
            } else {
                slot.saturating_add(v)
            };
        }
    }

    /// The merged metrics.
    pub(crate) fn metrics(&self) -> Vec<(String, u64)> {
        self.metrics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect()
    }
}

/// Live counters of the checkpoints of a run.
#[derive(Debug, Default)]
pub(crate) struct CheckpointCounters {
    started: AtomicU64,
    completed: AtomicU64,
    failed: AtomicU64,
    stale_warnings: AtomicU64,
    last_epoch: AtomicU64,
}

impl CheckpointCounters {
    pub(crate) fn started(&self) {
        self.started.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn completed(&self, epoch: anduin_types::Epoch) {
        self.completed.fetch_add(1, Ordering::Relaxed);
        self.last_epoch.store(epoch.0, Ordering::Relaxed);
    }

    pub(crate) fn failed(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn stale(&self) {
        self.stale_warnings.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn summary(&self) -> CheckpointSummary {
        CheckpointSummary {
            started: self.started.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            stale_warnings: self.stale_warnings.load(Ordering::Relaxed),
            last_epoch: Some(self.last_epoch.load(Ordering::Relaxed)).filter(|e| *e > 0),
        }
    }
}

/// The checkpoints a run took.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckpointSummary {
    /// Checkpoints begun.
    pub started: u64,
    /// Checkpoints completed.
    pub completed: u64,
    /// Checkpoints that failed (the query went on).
    pub failed: u64,
    /// Warnings that the last complete checkpoint was older than the threshold.
    pub stale_warnings: u64,
    /// The epoch of the last complete checkpoint of this run.
    pub last_epoch: Option<u64>,
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
    /// What it reported about its state (`Operator::metrics`), merged over its instances.
    pub metrics: Vec<(String, u64)>,
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
    /// The checkpoints taken, when the run took any.
    pub checkpoints: Option<CheckpointSummary>,
}
