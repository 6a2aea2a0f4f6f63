//! Fakes the connectors' unit tests share: a collector that drops what it is given and a
//! checkpoint that takes no files.

use anduin_operator_api::{Collector, OperatorError, SnapshotOut};
use anduin_types::Epoch;
use arrow::record_batch::RecordBatch;

/// Drops every batch.
pub(crate) struct Nowhere;

impl Collector for Nowhere {
    fn collect(&mut self, _port: usize, _batch: RecordBatch) -> Result<(), OperatorError> {
        Ok(())
    }
}

/// A checkpoint of epoch `.0` that takes no stream (a writer keeps its positions inline).
pub(crate) struct At(pub u64);

impl SnapshotOut for At {
    fn epoch(&self) -> Epoch {
        Epoch(self.0)
    }
    fn full_due(&self) -> bool {
        true
    }
    fn inline(&mut self, _value: serde_json::Value) {}
    fn stream(
        &mut self,
        _kind: anduin_types::SnapshotKind,
    ) -> Result<&mut dyn std::io::Write, OperatorError> {
        Err(OperatorError::internal("test", "no stream"))
    }
}
