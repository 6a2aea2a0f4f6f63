//! What travels on a channel between tasks: data and control share one ordered stream.

use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

use crate::Watermark;

/// A checkpoint epoch: barriers of epoch `e` separate the rows before checkpoint `e` from the
/// rows after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Epoch(pub u64);

/// Whether a snapshot holds all of an operator's state or only what changed since the
/// previous checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SnapshotKind {
    /// Everything: restorable on its own (the fsimage of HDFS).
    Full,
    /// The changes since the previous checkpoint (the edit log): restorable on top of the
    /// snapshots before it.
    Changes,
}

impl std::fmt::Display for SnapshotKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SnapshotKind::Full => "full",
            SnapshotKind::Changes => "changes",
        })
    }
}

/// What a barrier asks of every task it passes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BarrierKind {
    /// Snapshot state when this barrier has arrived on every input, then forward it.
    Checkpoint {
        /// Whether operators write full snapshots (otherwise the changes since the previous
        /// checkpoint).
        full: bool,
    },
    /// Stop after this barrier: sources stop reading, operators flush, sinks commit.
    Stop,
    /// Only carries control updates ([`Barrier::control`]): no snapshot (a run without
    /// checkpoints changes params at these).
    Control,
}

/// A barrier: a marker injected at the sources that every task aligns on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Barrier {
    /// The epoch this barrier closes.
    pub epoch: Epoch,
    /// What the barrier asks for.
    pub kind: BarrierKind,
    /// Param changes that every operator instance applies when the barrier has arrived on
    /// all its inputs (after its snapshot, if the barrier takes one), so that every instance
    /// switches between the same input positions: a consistent point (paper §4.5). Usually
    /// empty.
    pub control: Vec<ControlUpdate>,
}

impl Barrier {
    /// A checkpoint barrier of `epoch` that changes nothing.
    pub fn checkpoint(epoch: Epoch, full: bool) -> Self {
        Self {
            epoch,
            kind: BarrierKind::Checkpoint { full },
            control: Vec::new(),
        }
    }
}

/// A meta-query tuple `<query, operator, parameter, value>` (paper §4.5): a change to a
/// running operator's parameter, applied at a barrier (see [`Barrier::control`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlUpdate {
    /// The change's number in the query's history, from 1.
    pub seq: u64,
    /// The operator's name in the query.
    pub operator: String,
    /// The parameter to change.
    pub param: String,
    /// The new value, as it would be written in the `.flow` file.
    pub value: String,
    /// A rescale beyond the instances that run the operator, on a cluster: the workers that
    /// run nothing of the query and may take instances it adds (where those that run the
    /// operator or read its output have no room left). Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub onto: Vec<u32>,
}

/// One message on a channel. Channels are FIFO, so a barrier or watermark separates the data
/// before it from the data after it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Message {
    /// A batch of rows, in the schema of the channel's stream.
    Data(RecordBatch),
    /// Event time has advanced to this watermark on this channel.
    Watermark(Watermark),
    /// `true`: the producer's event time is idle (its sources sent no row for their idle
    /// timeout), so consumers leave this channel out of their minimum watermark; `false`:
    /// it is active again.
    Idle(bool),
    /// A barrier (checkpoint, stop, control), which may carry param changes.
    Barrier(Barrier),
    /// The producer's input is exhausted: no row will ever come on this channel again (a
    /// bounded source read to its end), though event time may still advance and barriers
    /// still pass. Unlike [`Message::Idle`], it never ends: a consumer that must see the
    /// whole of an input (a lookup join's side table) goes on at this, not at idleness. A
    /// watermark of +∞ says as much (it comes only at the end of every input), and
    /// [`Message::End`] alone does not (a stopped producer sends it).
    Exhausted,
    /// The producer gave up the end of its input after the run was asked to stop (an
    /// operator's `Operator::gave_up`): the [`Message::End`] that follows ends no finished
    /// input. The consumer ends as stopped, its operators neither flushing nor committing
    /// what the end of their input would (a sink's pending output stays uncommitted): a run
    /// resumed from the last complete checkpoint does that work again.
    GaveUp,
    /// The producer has finished: nothing more will come on this channel.
    End,
}
