//! Resuming from a checkpoint: refusing one of a query that changed where state is kept, and
//! opening what each operator instance restores from.

use anduin_checkpoint::plan::{compare, Compatibility, PlanFingerprint};
use anduin_checkpoint::{CheckpointDir, Validated};
use anduin_operator_api::{OperatorError, RestoreIn};
use anduin_types::Epoch;
use tracing::info;

use crate::error::RuntimeError;

/// Refuses a checkpoint of a query that changed where state is kept.
pub(crate) fn check_compatible(
    restore: &Validated,
    current: &PlanFingerprint,
) -> Result<(), RuntimeError> {
    match compare(&restore.manifest.plan, current) {
        Compatibility::Identical => Ok(()),
        Compatibility::Compatible { changes } => {
            for change in changes {
                info!(
                    epoch = restore.manifest.epoch,
                    change, "the query changed since the checkpoint (no state affected)"
                );
            }
            Ok(())
        }
        Compatibility::Incompatible { operator, what } => {
            Err(RuntimeError::IncompatibleCheckpoint {
                epoch: restore.manifest.epoch,
                operator,
                what,
            })
        }
    }
}

/// The checkpoint a run resumes from, and where its files are.
pub(crate) struct Resume<'a> {
    pub dir: &'a CheckpointDir,
    pub from: &'a Validated,
}

impl Resume<'_> {
    /// What the operator instance with state key `key` restores from, if the checkpoint has
    /// its state.
    pub(crate) fn state_of(&self, key: &str) -> Result<Option<RestoreIn>, RuntimeError> {
        let Some(state) = self.from.manifest.operators.get(key) else {
            return Ok(None);
        };
        let mut files: Vec<Box<dyn std::io::Read + Send>> = Vec::new();
        for f in &state.files {
            let path = self.dir.file(Epoch(f.epoch), &f.file);
            let file = std::fs::File::open(&path).map_err(|cause| {
                RuntimeError::Checkpoint(anduin_checkpoint::CheckpointError::Io {
                    path: path.clone(),
                    cause,
                })
            })?;
            files.push(Box::new(std::io::BufReader::new(file)));
        }
        Ok(Some(RestoreIn {
            epoch: Epoch(self.from.manifest.epoch),
            inline: state.inline.clone(),
            files,
        }))
    }

    /// Restoring an operator failed with `cause`.
    pub(crate) fn error(&self, cause: OperatorError) -> RuntimeError {
        RuntimeError::Restore {
            epoch: self.from.manifest.epoch,
            cause,
        }
    }
}
