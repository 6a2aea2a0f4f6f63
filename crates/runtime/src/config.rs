//! How a query runs.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Settings of one run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Rows per batch that sources aim for.
    pub batch_size: usize,
    /// The longest a source holds a row before sending a partial batch.
    pub linger: Duration,
    /// Messages a channel holds before its producer waits (backpressure).
    pub channel_capacity: usize,
    /// Whether one-to-one chains of operators are fused into one task.
    pub chaining: bool,
    /// Set to stop the query cleanly: sources stop reading, everything in flight is
    /// processed and flushed.
    pub stop: Arc<AtomicBool>,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            batch_size: 8192,
            linger: Duration::from_millis(100),
            channel_capacity: 16,
            chaining: true,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}
