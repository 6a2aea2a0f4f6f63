//! The messages between tasks, the committer and the checkpoint coordinator.

use anduin_checkpoint::FileEntry;
use anduin_types::{ControlUpdate, Epoch, SnapshotKind};

use crate::snapshot::OpSnapshot;

/// From the coordinator to a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    /// Sources: inject the barrier of `epoch` (full snapshots or changes), carrying
    /// `control`.
    Inject {
        epoch: Epoch,
        full: bool,
        control: Vec<ControlUpdate>,
    },
    /// Sources: inject the last barrier, carrying `control`, then end.
    Finish {
        epoch: Epoch,
        full: bool,
        control: Vec<ControlUpdate>,
    },
    /// Sources (in a run without checkpoints): inject a barrier that only carries `control`.
    Control {
        epoch: Epoch,
        control: Vec<ControlUpdate>,
    },
    /// Everyone: checkpoint `epoch` is complete; sinks commit what it covers.
    Commit(Epoch),
}

/// From a task to the committer: a task's share of a checkpoint, to make durable.
#[derive(Debug)]
pub(crate) struct WriteJob {
    pub epoch: Epoch,
    pub task: usize,
    pub snapshots: Vec<OpSnapshot>,
    /// Why the task could not write its share (a full disk), if it could not: the
    /// checkpoint fails and `snapshots` are dropped (their files removed).
    pub failure: Option<String>,
}

/// What one operator contributed to a checkpoint, once durable.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpState {
    pub name: String,
    pub inline: Option<serde_json::Value>,
    pub file: Option<(SnapshotKind, String)>,
}

/// To the coordinator.
#[derive(Debug)]
pub(crate) enum Event {
    /// A task's share of `epoch` is durable.
    Ack {
        epoch: Epoch,
        task: usize,
        states: Vec<OpState>,
        files: Vec<FileEntry>,
    },
    /// A task could not take or store its share of `epoch`.
    Failed {
        epoch: Epoch,
        task: usize,
        reason: String,
    },
    /// A source task has no more input, or stopped reading on request (it still takes part
    /// in checkpoints until the last barrier).
    SourceExhausted { task: usize, stopped: bool },
    /// A source has emitted the configured number of rows since the last barrier.
    WantCheckpoint,
    /// Param changes to carry on the next checkpoint's barrier (taken at once).
    Control(Vec<ControlUpdate>),
}
