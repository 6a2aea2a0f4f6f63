//! The consumer's bridge of a network edge: puts each message that arrives on the consumer
//! task's bounded queue, in order, and grants the producer credit as the queue takes them.

use std::io::Write;
use std::net::TcpStream;

use anduin_types::Message;
use anduin_wire::Frame;
use crossbeam_channel::Sender;

use super::codec::from_frame;
use anduin_wire::{write_frame, FrameReader};
use super::listener::kind_name;
use super::{NetError, CONSUMER_STOPPED};
use crate::channel::Envelope;

/// Runs the edge until its end message (`Ok`) or a failure.
pub(super) fn run(
    mut reader: FrameReader<TcpStream>,
    mut writer: TcpStream,
    tx: &Sender<Envelope>,
    window: u32,
) -> Result<(), NetError> {
    write_frame(&mut writer, &Frame::Credit { messages: window })?;
    writer.flush().map_err(anduin_wire::FrameError::from)?;
    // Credit goes back in handfuls, not one frame per message.
    let handful = (window / 2).max(1);
    let mut owed = 0;
    let mut last = 0;
    loop {
        let frame = match reader.next()? {
            Some(Frame::Refused { reason }) => return Err(NetError::Refused(reason)),
            Some(f @ (Frame::Hello(_) | Frame::Credit { .. } | Frame::Message { .. })) => {
                return Err(NetError::Unexpected(kind_name(&f)))
            }
            Some(f) => f,
            None => return Err(NetError::ProducerClosed),
        };
        let env = from_frame(frame)?;
        if env.seq != last + 1 {
            return Err(NetError::OutOfOrder { got: env.seq, last });
        }
        last = env.seq;
        let end = matches!(env.msg, Message::End);
        if tx.send(env).is_err() {
            let _ = write_frame(
                &mut writer,
                &Frame::Refused {
                    reason: CONSUMER_STOPPED.into(),
                },
            );
            return Err(NetError::ConsumerGone);
        }
        if end {
            return Ok(());
        }
        owed += 1;
        if owed >= handful {
            write_frame(&mut writer, &Frame::Credit { messages: owed })?;
            owed = 0;
        }
    }
}
