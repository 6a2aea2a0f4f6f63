//! Fault injection for tests of failure handling (a disk that fills up while a checkpoint is
//! written). Never set in normal runs.

use anduin_types::Epoch;

/// Faults to inject.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Writing the files of this checkpoint fails as a full disk would.
    pub fail_checkpoint: Option<Epoch>,
    /// From this checkpoint on, none can even begin: the store refuses to make its place, as
    /// one whose writes are denied does.
    pub deny_checkpoints_from: Option<Epoch>,
}

impl Faults {
    /// Whether writing a file of checkpoint `epoch` may proceed.
    pub(crate) fn checkpoint_write(&self, epoch: Epoch) -> std::io::Result<()> {
        if self.fail_checkpoint == Some(epoch) {
            // ENOSPC, as a full disk reports it.
            Err(std::io::Error::from_raw_os_error(28))
        } else {
            Ok(())
        }
    }

    /// Whether checkpoint `epoch` may begin (its place be made in the store).
    pub(crate) fn checkpoint_begin(&self, epoch: Epoch) -> std::io::Result<()> {
        if self.deny_checkpoints_from.is_some_and(|from| epoch >= from) {
            // EPERM, as a store whose writes are denied reports it.
            Err(std::io::Error::from_raw_os_error(1))
        } else {
            Ok(())
        }
    }
}
