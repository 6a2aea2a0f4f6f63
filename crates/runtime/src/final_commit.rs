//! The end of a task whose chain commits only with checkpoints (a Kafka sink's transactions,
//! see `Operator::commits_only_with_checkpoints`): after the last barrier it waits for that
//! checkpoint's commit before the chain ends, instead of committing at the end of input
//! ahead of the checkpoint (which a restore from the checkpoint before could not take back).
//! When that checkpoint fails and no other can complete (every source has ended), the
//! coordinator says so ([`Command::LastFailed`]) and the chain ends without the commit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anduin_operator_api::OperatorError;
use anduin_types::Epoch;
use crossbeam_channel::{Receiver, RecvTimeoutError};

use crate::chain::Chain;
use crate::error::TaskFailure;
use crate::pipelining::Stage;
use crate::protocol::Command;

/// How often the wait looks at the abort flag.
const ABORT_CHECK: Duration = Duration::from_millis(100);

/// How the wait for the last commit ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum FinalCommit {
    /// The last checkpoint, or a later one, was committed.
    Committed,
    /// The last checkpoint, the one named, failed and none completes any more
    /// ([`Command::LastFailed`]): what the task holds stays uncommitted, for a resumed run to
    /// write. The tasks split off this one must hear it too.
    LastFailed(Epoch),
    /// The coordinator ended first (the run is ending).
    CoordinatorGone,
    /// Another task failed.
    Aborted,
}

/// [`await_commit`] for a task's `chain`: every commit goes to it and to the tasks split off
/// the task (`stage`), and so does the news that the last checkpoint failed.
pub(crate) fn await_chain_commit(
    commands: &Receiver<Command>,
    last: Epoch,
    abort: Option<&AtomicBool>,
    chain: &mut Chain,
    stage: Option<&Stage>,
) -> Result<(), TaskFailure> {
    let ended = await_commit(commands, last, abort, |epoch| {
        chain.commit(epoch)?;
        if let Some(stage) = stage {
            stage.commit(epoch);
        }
        Ok(())
    })?;
    if let (FinalCommit::LastFailed(epoch), Some(stage)) = (ended, stage) {
        stage.last_failed(epoch);
    }
    Ok(())
}

/// Waits on `commands` for the commit of checkpoint `last` (or a later one), passing every
/// commit to `commit` on the way. Ends without it when the coordinator says that the last
/// checkpoint failed (no commit will come), when the coordinator goes away (the run is
/// ending) or when `abort` is raised (another task failed).
///
/// The caller must have dropped its senders to the coordinator and the committer first:
/// otherwise a last checkpoint that fails leaves the coordinator waiting for this task, and
/// this task waiting for the coordinator.
pub(crate) fn await_commit(
    commands: &Receiver<Command>,
    last: Epoch,
    abort: Option<&AtomicBool>,
    mut commit: impl FnMut(Epoch) -> Result<(), OperatorError>,
) -> Result<FinalCommit, TaskFailure> {
    loop {
        if abort.is_some_and(|a| a.load(Ordering::Relaxed)) {
            return Ok(FinalCommit::Aborted);
        }
        match commands.recv_timeout(ABORT_CHECK) {
            Ok(Command::Commit(epoch)) => {
                commit(epoch)?;
                if epoch >= last {
                    return Ok(FinalCommit::Committed);
                }
            }
            Ok(Command::LastFailed(epoch)) => {
                tracing::warn!(
                    epoch = epoch.0,
                    waited_for = last.0,
                    "the last checkpoint failed and no other completes: what came after the last complete checkpoint stays uncommitted, for the run resumed from it to write"
                );
                return Ok(FinalCommit::LastFailed(epoch));
            }
            // Nothing else comes after the last barrier that this task must act on.
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                tracing::warn!(
                    epoch = last.0,
                    "the coordinator ended before checkpoint {} was committed: what it covers is committed by the run that resumes from it",
                    last.0
                );
                return Ok(FinalCommit::CoordinatorGone);
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
        let ended = await_commit(&rx, Epoch(4), None, |e| {
            seen.push(e.0);
            Ok(())
        })
        .expect("no failure");
        assert_eq!(ended, FinalCommit::Committed);
        assert_eq!(seen, [3, 4]);
    }

    #[test]
    fn the_wait_ends_without_a_commit_when_the_coordinator_goes_away() {
        let (tx, rx) = crossbeam_channel::unbounded::<Command>();
        drop(tx);
        let mut seen = Vec::new();
        let ended = await_commit(&rx, Epoch(4), None, |e| {
            seen.push(e.0);
            Ok(())
        })
        .expect("no failure");
        assert_eq!(ended, FinalCommit::CoordinatorGone);
        assert!(seen.is_empty());
    }

    #[test]
    fn the_wait_ends_without_a_commit_when_the_last_checkpoint_failed_with_the_coordinator_still_there(
    ) {
        // Issue 19 (probe41 H2): the coordinator lives as long as the tasks do, so a sink
        // waiting for the commit of a last checkpoint that failed waited for ever.
        let (tx, rx) = crossbeam_channel::unbounded();
        tx.send(Command::Commit(Epoch(3))).expect("open");
        tx.send(Command::LastFailed(Epoch(4))).expect("open");
        let mut seen = Vec::new();
        let ended = await_commit(&rx, Epoch(4), None, |e| {
            seen.push(e.0);
            Ok(())
        })
        .expect("no failure");
        assert_eq!(ended, FinalCommit::LastFailed(Epoch(4)));
        assert_eq!(seen, [3]);
        drop(tx);
    }
}
