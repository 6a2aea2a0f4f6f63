//! The messages between tasks, the committer and the checkpoint coordinator. Public and
//! serialisable because, in a cluster, the coordinator runs in another process than the tasks
//! and these messages cross the network.

use anduin_checkpoint::FileEntry;
use anduin_types::{ControlUpdate, Epoch, SnapshotKind};

use serde::{Deserialize, Serialize};

use crate::snapshot::OpSnapshot;

/// From the coordinator to a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// Sources: inject the barrier of `epoch` (full snapshots or changes), carrying
    /// `control`.
    Inject {
        /// The checkpoint.
        epoch: Epoch,
        /// A full snapshot (or changes since the last).
        full: bool,
        /// Param changes the barrier carries.
        control: Vec<ControlUpdate>,
    },
    /// Sources: inject the last barrier, carrying `control`, then end.
    Finish {
        /// The checkpoint.
        epoch: Epoch,
        /// A full snapshot (or changes since the last).
        full: bool,
        /// Param changes the barrier carries.
        control: Vec<ControlUpdate>,
    },
    /// Sources (in a run without checkpoints): inject a barrier that only carries `control`.
    Control {
        /// The barrier's epoch.
        epoch: Epoch,
        /// Param changes the barrier carries.
        control: Vec<ControlUpdate>,
    },
    /// Everyone: checkpoint `epoch` is complete; sinks commit what it covers.
    Commit(Epoch),
    /// Everyone: the last checkpoint, `epoch`, failed and every source has ended, so that no
    /// checkpoint completes any more (issue 19): a task waiting for the last commit ends
    /// without it, leaving uncommitted what it holds for a resumed run to write.
    LastFailed(Epoch),
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpState {
    /// The operator.
    pub name: String,
    /// Its state inline in the manifest, if small.
    pub inline: Option<serde_json::Value>,
    /// Its snapshot file, and whether it is full or changes.
    pub file: Option<(SnapshotKind, String)>,
}

/// To the coordinator.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Event {
    /// A task's share of `epoch` is durable.
    Ack {
        /// The checkpoint.
        epoch: Epoch,
        /// The task instance, by its number in the run.
        task: usize,
        /// What each of its operators contributed.
        states: Vec<OpState>,
        /// Its files, with their sizes and checksums.
        files: Vec<FileEntry>,
    },
    /// A task could not take or store its share of `epoch`.
    Failed {
        /// The checkpoint.
        epoch: Epoch,
        /// The task instance.
        task: usize,
        /// Why.
        reason: String,
    },
    /// A source task has no more input, or stopped reading on request (it still takes part
    /// in checkpoints until the last barrier).
    SourceExhausted {
        /// The task instance.
        task: usize,
        /// It stopped on request rather than at the end of its input.
        stopped: bool,
    },
    /// A source task took the last barrier, of checkpoint `epoch`, and ends. A cluster's
    /// executor tells it again to a coordinator that takes the query over (in place of the
    /// source's [`Event::SourceExhausted`]), so that it completes the last checkpoint the
    /// coordinator before it began rather than wait for one the source can no longer take.
    SourceFinished {
        /// The task instance.
        task: usize,
        /// The last checkpoint.
        epoch: Epoch,
        /// It had stopped on request rather than at the end of its input.
        stopped: bool,
    },
    /// A source has emitted the configured number of rows since the last barrier.
    WantCheckpoint,
    /// Tasks were lost and are being restored from the last complete checkpoint while the
    /// others run on (a cluster's per-task recovery): the checkpoint in flight, if any, cannot
    /// complete and is given up.
    TasksLost {
        /// One of the lost task instances.
        task: usize,
        /// Why.
        reason: String,
    },
    /// A replica of a hot standby failed and the query goes on with its twins (an embedded
    /// run): no checkpoint waits for it any more, and its state in the checkpoints that follow
    /// is its twins'.
    ReplicaLost {
        /// The replica's task instance.
        task: usize,
    },
    /// The lost task instances run again ([`Event::TasksLost`]): checkpoints, held since,
    /// begin again.
    TasksRestored,
    /// Task instance `task` joined the run: a running task split its chain at a barrier
    /// (`pipeline = "split"`) and hands the operators from the cut on to
    /// it. Sent before the splitting task acknowledges that barrier's checkpoint, so every
    /// checkpoint begun after it waits for the new task's acknowledgement.
    TaskAdded {
        /// The new task instance, by its number in the run.
        task: usize,
    },
    /// An instance of a task split while the query runs (from a cluster's executor, for the
    /// control plane at the coordinator, which shows the new task): sent before the change's
    /// [`Event::Applied`].
    TaskSplit(crate::control::TaskSplit),
    /// Param changes to carry on the next checkpoint's barrier (taken at once).
    Control(Vec<ControlUpdate>),
    /// An instance of a changed operator applied change `seq` at the barrier of `epoch` (from
    /// an executor, for the control plane at the coordinator).
    Applied {
        /// The change.
        seq: u64,
        /// The operator's instance.
        instance: usize,
        /// The barrier's epoch.
        epoch: Epoch,
    },
    /// An instance of `operator` has ended its input: no change reaches it any more (from an
    /// executor, for the control plane at the coordinator).
    InputEnded {
        /// The operator.
        operator: String,
        /// Its instance.
        instance: usize,
    },
}
