//! Channels between tasks: bounded FIFO queues of sequenced messages.

use anduin_types::Message;
use crossbeam_channel::{Receiver, Sender};

/// A message with its sequence number on the channel (1, 2, 3, …), so that a consumer can
/// later recognise a message it has already seen when a producer replays.
#[derive(Debug)]
pub(crate) struct Envelope {
    pub seq: u64,
    pub msg: Message,
}

/// The sending end of a channel, numbering what it sends.
pub(crate) struct Outlet {
    tx: Sender<Envelope>,
    next_seq: u64,
}

/// The consumer has gone away.
#[derive(Debug)]
pub(crate) struct Disconnected;

impl Outlet {
    pub(crate) fn send(&mut self, msg: Message) -> Result<(), Disconnected> {
        self.next_seq += 1;
        self.tx
            .send(Envelope {
                seq: self.next_seq,
                msg,
            })
            .map_err(|_| Disconnected)
    }
}

/// A new bounded channel.
pub(crate) fn channel(capacity: usize) -> (Outlet, Receiver<Envelope>) {
    let (tx, rx) = crossbeam_channel::bounded(capacity.max(1));
    (Outlet { tx, next_seq: 0 }, rx)
}
