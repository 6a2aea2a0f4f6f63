//! An operator checkpointed into memory and restored from it, for the operators' tests.

use anduin_operator_api::{Operator, OperatorError};

/// A checkpoint in memory: the manifest's inline value and one full snapshot.
#[derive(Default)]
pub(crate) struct Memory {
    pub(crate) inline: Option<serde_json::Value>,
    pub(crate) bytes: Vec<u8>,
}

impl anduin_operator_api::SnapshotOut for Memory {
    fn epoch(&self) -> anduin_types::Epoch {
        anduin_types::Epoch(1)
    }
    fn full_due(&self) -> bool {
        true
    }
    fn inline(&mut self, value: serde_json::Value) {
        self.inline = Some(value);
    }
    fn stream(
        &mut self,
        _kind: anduin_types::SnapshotKind,
    ) -> Result<&mut dyn std::io::Write, OperatorError> {
        Ok(&mut self.bytes)
    }
}

pub(crate) fn restore(op: &mut Box<dyn Operator>, m: Memory) {
    op.restore(anduin_operator_api::RestoreIn {
        epoch: anduin_types::Epoch(1),
        inline: m.inline,
        files: vec![Box::new(std::io::Cursor::new(m.bytes))],
    })
    .expect("restores");
}
