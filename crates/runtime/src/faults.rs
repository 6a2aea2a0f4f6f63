//! Fault injection for tests of failure handling (a disk that fills up while a checkpoint is
//! written). Never set in normal runs.

use anduin_types::Epoch;

/// Faults to inject.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Writing the files of this checkpoint fails as a full disk would.
    pub fail_checkpoint: Option<Epoch>,
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
}
