//! The end of a task whose chain commits only with checkpoints (a Kafka sink's transactions,
//! see `Operator::commits_only_with_checkpoints`): after the last barrier it waits for that
//! checkpoint's commit before the chain ends, instead of committing at the end of input
//! ahead of the checkpoint (which a restore from the checkpoint before could not take back).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anduin_operator_api::OperatorError;
use anduin_types::Epoch;
use crossbeam_channel::{Receiver, RecvTimeoutError};

use crate::error::TaskFailure;
use crate::protocol::Command;

/// How often the wait looks at the abort flag.
const ABORT_CHECK: Duration = Duration::from_millis(100);

/// Waits on `commands` for the commit of checkpoint `last` (or a later one), passing every
/// commit to `commit` on the way. Ends without it when the coordinator goes away (the last
/// checkpoint failed and the run is ending) or `abort` is raised (another task failed).
///
/// The caller must have dropped its senders to the coordinator and the committer first:
/// otherwise a last checkpoint that fails leaves the coordinator waiting for this task, and
/// this task waiting for the coordinator.
pub(crate) fn await_commit(
    commands: &Receiver<Command>,
    last: Epoch,
    abort: Option<&AtomicBool>,
    mut commit: impl FnMut(Epoch) -> Result<(), OperatorError>,
) -> Result<(), TaskFailure> {
    loop {
        if abort.is_some_and(|a| a.load(Ordering::Relaxed)) {
            return Ok(());
        }
        match commands.recv_timeout(ABORT_CHECK) {
            Ok(Command::Commit(epoch)) => {
                commit(epoch)?;
                if epoch >= last {
                    return Ok(());
                }
            }
            // Nothing else comes after the last barrier that this task must act on.
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                tracing::warn!(
                    epoch = last.0,
                    "the coordinator ended before checkpoint {} was committed: what it covers is committed by the run that resumes from it",
                    last.0
                );
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_passes_earlier_commits_on_and_ends_at_the_last_checkpoints() {
        let (tx, rx) = crossbeam_channel::unbounded();
        tx.send(Command::Commit(Epoch(3))).expect("open");
        tx.send(Command::Commit(Epoch(4))).expect("open");
        tx.send(Command::Commit(Epoch(5))).expect("open");
        let mut seen = Vec::new();
        await_commit(&rx, Epoch(4), None, |e| {
            seen.push(e.0);
            Ok(())
        })
        .expect("no failure");
        assert_eq!(seen, [3, 4]);
    }

    #[test]
    fn the_wait_ends_without_a_commit_when_the_coordinator_goes_away() {
        let (tx, rx) = crossbeam_channel::unbounded::<Command>();
        drop(tx);
        let mut seen = Vec::new();
        await_commit(&rx, Epoch(4), None, |e| {
            seen.push(e.0);
            Ok(())
        })
        .expect("no failure");
        assert!(seen.is_empty());
    }
}
