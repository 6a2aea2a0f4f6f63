//! What a run did: rows in and out of each operator.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Live counters of one operator instance.
#[derive(Debug)]
pub(crate) struct Counters {
    pub rows_in: AtomicU64,
    pub rows_out: AtomicU64,
    pub batches_in: AtomicU64,
    /// Time in the operator's own processing of batches (not in the operators fused after
    /// it, nor waiting for room on its outputs).
    pub busy_ns: AtomicU64,
    /// Time waiting for room on a full output channel (backpressure).
    pub blocked_ns: AtomicU64,
    /// Messages waiting in the instance's input channels when it last took one.
    pub queue_len: AtomicU64,
    /// The last watermark it forwarded (`i64::MIN`: none yet).
    pub watermark: AtomicI64,
    /// What the operator reported with `Operator::metrics` at its end, merged.
    pub metrics: Mutex<BTreeMap<&'static str, u64>>,
    /// What it reported while running (refreshed as event time advances, at most every
    /// [`LIVE_EVERY`]): late rows and the size of its state so far.
    pub live: Mutex<BTreeMap<&'static str, u64>>,
}

/// How often, at most, an operator's live figures are asked for.
pub(crate) const LIVE_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

impl Default for Counters {
    fn default() -> Self {
        Self {
            rows_in: AtomicU64::new(0),
            rows_out: AtomicU64::new(0),
            batches_in: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            blocked_ns: AtomicU64::new(0),
            queue_len: AtomicU64::new(0),
            watermark: AtomicI64::new(i64::MIN),
            metrics: Mutex::new(BTreeMap::new()),
            live: Mutex::new(BTreeMap::new()),
        }
    }
}

/// The counters of every instance of one operator.
#[derive(Debug)]
pub(crate) struct NodeCounters {
    pub instances: Vec<Arc<Counters>>,
    /// The instances added while the query runs (`crate::grow`), by instance.
    grown: Mutex<Vec<(usize, Arc<Counters>)>>,
}

impl NodeCounters {
    /// Counters for `parallelism` instances.
    pub(crate) fn new(parallelism: usize) -> Self {
        Self {
            instances: (0..parallelism.max(1)).map(|_| Arc::default()).collect(),
            grown: Mutex::default(),
        }
    }

    /// Counters for instance `i`, added while the query runs.
    pub(crate) fn grow(&self, i: usize) -> Arc<Counters> {
        let c = Arc::new(Counters::default());
        self.grown_now().push((i, Arc::clone(&c)));
        c
    }

    fn grown_now(&self) -> std::sync::MutexGuard<'_, Vec<(usize, Arc<Counters>)>> {
        self.grown
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every instance's counters: those planned, then those added while running.
    fn all(&self) -> Vec<Arc<Counters>> {
        let grown = self.grown_now();
        self.instances
            .iter()
            .cloned()
            .chain(grown.iter().map(|(_, c)| Arc::clone(c)))
            .collect()
    }

    /// Instance `i`'s (the first's, if there is no such instance).
    pub(crate) fn instance(&self, i: usize) -> Arc<Counters> {
        Arc::clone(
            self.instances
                .get(i)
                .or_else(|| self.instances.first())
                .expect("at least one instance"),
        )
    }

    pub(crate) fn rows_in(&self) -> u64 {
        self.all()
            .iter()
            .map(|c| c.rows_in.load(Ordering::Relaxed))
            .sum()
    }

    pub(crate) fn rows_out(&self) -> u64 {
        self.all()
            .iter()
            .map(|c| c.rows_out.load(Ordering::Relaxed))
            .sum()
    }

    /// The instances' metrics merged: the maximum of `peak_*`, the sum of the others.
    pub(crate) fn metrics(&self) -> Vec<(String, u64)> {
        let all = Counters::default();
        for c in &self.all() {
            let mine = c
                .metrics
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .map(|(k, v)| (*k, *v))
                .collect();
            all.add_metrics(mine);
        }
        all.metrics()
    }
}

impl Counters {
    pub(crate) fn add_batch(&self) {
        self.batches_in.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_busy(&self, d: Duration) {
        self.busy_ns.fetch_add(
            u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    pub(crate) fn add_blocked(&self, d: Duration) {
        self.blocked_ns.fetch_add(
            u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    pub(crate) fn blocked(&self) -> u64 {
        self.blocked_ns.load(Ordering::Relaxed)
    }

    pub(crate) fn set_watermark(&self, ms: i64) {
        self.watermark.store(ms, Ordering::Relaxed);
    }

    pub(crate) fn set_queue_len(&self, n: usize) {
        self.queue_len.store(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn add_in(&self, n: usize) {
        self.rows_in.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn add_out(&self, n: usize) {
        self.rows_out.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Merges metrics into these: the maximum of `peak_*`, the sum of the others.
    /// The operator's figures while running (`Operator::metrics`): they replace the last.
    pub(crate) fn set_live(&self, metrics: Vec<(&'static str, u64)>) {
        let mut live = self
            .live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        live.clear();
        live.extend(metrics);
    }

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
    /// Of the last complete checkpoint: barrier to manifest, in milliseconds.
    last_duration_ms: AtomicU64,
    /// Of the last complete checkpoint: the bytes of the files it wrote.
    last_size_bytes: AtomicU64,
    /// When the last checkpoint completed, in milliseconds since the Unix epoch (0: none).
    last_completed_ms: AtomicI64,
}

impl CheckpointCounters {
    pub(crate) fn started(&self) {
        self.started.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn completed(&self, epoch: anduin_types::Epoch, duration_ms: u64, size: u64) {
        self.completed.fetch_add(1, Ordering::Relaxed);
        self.last_epoch.store(epoch.0, Ordering::Relaxed);
        self.last_duration_ms.store(duration_ms, Ordering::Relaxed);
        self.last_size_bytes.store(size, Ordering::Relaxed);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        self.last_completed_ms.store(now, Ordering::Relaxed);
    }

    /// The live figures, for the control plane.
    pub(crate) fn live(&self) -> crate::control::CheckpointMetrics {
        let completed = self.completed.load(Ordering::Relaxed);
        let last = |v: u64| (completed > 0).then_some(v);
        crate::control::CheckpointMetrics {
            started: self.started.load(Ordering::Relaxed),
            completed,
            failed: self.failed.load(Ordering::Relaxed),
            last_epoch: last(self.last_epoch.load(Ordering::Relaxed)),
            last_duration_ms: last(self.last_duration_ms.load(Ordering::Relaxed)),
            last_size_bytes: last(self.last_size_bytes.load(Ordering::Relaxed)),
            last_completed_ms: (completed > 0)
                .then(|| self.last_completed_ms.load(Ordering::Relaxed)),
            recent: Vec::new(),
        }
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
    /// Channels between instances, and how many of them crossed the network.
    pub channels: ChannelCount,
}

/// How many channels a run had, and how many of them crossed the network.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChannelCount {
    /// Every channel between two task instances.
    pub all: usize,
    /// Those between instances on different workers.
    pub network: usize,
}
