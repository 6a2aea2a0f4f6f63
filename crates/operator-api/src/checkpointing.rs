//! What operators and sources see of checkpoints: a place to put their state when a barrier
//! passes, and the state they get back when a query resumes.

use std::io::{Read, Write};

use anduin_types::{Epoch, SnapshotKind};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::OperatorError;

/// Where an operator (or source) puts its state when a checkpoint barrier passes it.
///
/// Small state (a source's position, a sink's pending files) goes inline, into the
/// checkpoint's manifest; large state goes into one stream, a full snapshot or the changes
/// since the previous checkpoint, written to a file of the checkpoint.
pub trait SnapshotOut {
    /// The checkpoint's epoch.
    fn epoch(&self) -> Epoch;

    /// Whether this checkpoint takes full snapshots (the first of a run, then every M-th);
    /// otherwise the changes since the previous checkpoint are enough.
    fn full_due(&self) -> bool;

    /// Keeps `value` in the manifest (keep it small: kilobytes, not megabytes).
    fn inline(&mut self, value: serde_json::Value);

    /// The stream of this checkpoint's state file, of `kind`. Asking again returns the same
    /// stream.
    fn stream(&mut self, kind: SnapshotKind) -> Result<&mut dyn Write, OperatorError>;
}

impl dyn SnapshotOut + '_ {
    /// Keeps `value`, an operator's typed metadata (a serde struct; its restore reads it back
    /// with [`RestoreIn::inline_as`]), in the manifest.
    pub fn inline_typed<T: Serialize>(
        &mut self,
        operator: &str,
        value: &T,
    ) -> Result<(), OperatorError> {
        let json = serde_json::to_value(value).map_err(|e| {
            OperatorError::internal(operator, format!("its checkpoint metadata: {e}"))
        })?;
        self.inline(json);
        Ok(())
    }
}

/// The state an operator resumes from.
pub struct RestoreIn {
    /// The epoch of the restored checkpoint.
    pub epoch: Epoch,
    /// What the operator kept inline, if anything.
    pub inline: Option<serde_json::Value>,
    /// Its state files, oldest first: a full snapshot, then the changelogs after it.
    pub files: Vec<Box<dyn Read + Send>>,
}

impl RestoreIn {
    /// What operator `operator` kept inline as a `T` ([`SnapshotOut::inline_typed`]). Missing
    /// or corrupt metadata is an error naming the checkpoint and the operator, never a
    /// default.
    pub fn inline_as<T: DeserializeOwned>(&self, operator: &str) -> Result<T, OperatorError> {
        let epoch = self.epoch.0;
        let corrupt = |what: String| OperatorError::Execution {
            operator: operator.to_string(),
            message: format!(
                "the manifest of checkpoint {epoch} {what}: the checkpoint is corrupt or was \
                 written by another version of anduin; restore from an earlier checkpoint or \
                 start over with --from-scratch"
            ),
        };
        let Some(inline) = &self.inline else {
            return Err(corrupt("holds no metadata of this operator".into()));
        };
        T::deserialize(inline).map_err(|e| {
            corrupt(format!(
                "holds metadata of this operator that is not valid ({e})"
            ))
        })
    }

    /// Whether there is nothing to restore.
    pub fn is_empty(&self) -> bool {
        self.inline.is_none() && self.files.is_empty()
    }
}

impl std::fmt::Debug for RestoreIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestoreIn")
            .field("epoch", &self.epoch)
            .field("inline", &self.inline)
            .field("files", &self.files.len())
            .finish()
    }
}
