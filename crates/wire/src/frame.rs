//! The frames of an edge. A producer sends `Hello`, then the messages of its channel, each
//! numbered (`seq`, 1, 2, … per edge, so that a consumer restored from a checkpoint can tell
//! what it has already seen when a producer replays); the consumer answers `Hello` and grants
//! room with `Credit`. Either side may close with `Refused`, saying why.
//!
//! A connection opened for a live rescale (its `Hello` names no channel, see the runtime's
//! `net::handoff`) carries one instance's key groups to another instead: `KeyGroups` frames,
//! the last one marked, answered by `KeyGroupsTaken` (or `Refused`).

use anduin_types::Barrier;

use crate::hello::Hello;

/// One frame of an edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// Opens the edge (each way): who is speaking, about which edge.
    Hello(Hello),
    /// A batch of rows: one Arrow IPC message (the runtime encodes and decodes it).
    Data {
        /// The message's number on the edge.
        seq: u64,
        /// The IPC bytes.
        ipc: Vec<u8>,
    },
    /// Event time advanced to `ms` on the edge.
    Watermark {
        /// The message's number on the edge.
        seq: u64,
        /// The watermark, in milliseconds.
        ms: i64,
    },
    /// The producer's event time became idle (`true`) or active again.
    Idle {
        /// The message's number on the edge.
        seq: u64,
        /// Idle or not.
        idle: bool,
    },
    /// A barrier, with the param changes it carries.
    Barrier {
        /// The message's number on the edge.
        seq: u64,
        /// The barrier.
        barrier: Barrier,
    },
    /// The producer's input is exhausted: no more rows will come on the edge, though event
    /// time may still advance (unlike `Idle`, final).
    Exhausted {
        /// The message's number on the edge.
        seq: u64,
    },
    /// The producer gave up the end of its input after a stop: its `End` follows, and the
    /// consumer ends as stopped, without flushing or committing.
    GaveUp {
        /// The message's number on the edge.
        seq: u64,
    },
    /// The producer has finished.
    End {
        /// The message's number on the edge.
        seq: u64,
    },
    /// The consumer has room for this many more messages (credit-based flow control).
    Credit {
        /// How many.
        messages: u32,
    },
    /// The sender closes the edge, and says why.
    Refused {
        /// Why, for the other side's log and error.
        reason: String,
    },
    /// A message of the cluster's control protocol (between the coordinator, workers,
    /// executors and clients): a serialised message, opaque to this crate.
    Message {
        /// Its bytes (JSON).
        body: Vec<u8>,
    },
    /// A part of the key groups one instance of a rescaled operator hands another (their
    /// state, encoded by the runtime, opaque to this crate); the parts in order make the
    /// whole, which may be larger than one frame.
    KeyGroups {
        /// This part is the last one.
        last: bool,
        /// The part's bytes.
        chunk: Vec<u8>,
    },
    /// The receiver of key groups has taken them whole (they are its instance's now).
    KeyGroupsTaken,
}

impl Frame {
    /// The kind byte of the frame on the wire.
    pub(crate) fn kind(&self) -> u8 {
        match self {
            Frame::Hello(_) => 1,
            Frame::Data { .. } => 2,
            Frame::Watermark { .. } => 3,
            Frame::Idle { .. } => 4,
            Frame::Barrier { .. } => 5,
            Frame::End { .. } => 6,
            Frame::Credit { .. } => 7,
            Frame::Refused { .. } => 8,
            Frame::Message { .. } => 9,
            Frame::KeyGroups { .. } => 10,
            Frame::KeyGroupsTaken => 11,
            Frame::Exhausted { .. } => 12,
            Frame::GaveUp { .. } => 13,
        }
    }

    /// The name of a kind byte, for messages.
    pub(crate) fn kind_name(kind: u8) -> &'static str {
        match kind {
            1 => "hello",
            2 => "data",
            3 => "watermark",
            4 => "idle",
            5 => "barrier",
            6 => "end",
            7 => "credit",
            8 => "refused",
            9 => "message",
            10 => "key groups",
            11 => "key groups taken",
            12 => "exhausted",
            13 => "gave up",
            _ => "unknown",
        }
    }
}
