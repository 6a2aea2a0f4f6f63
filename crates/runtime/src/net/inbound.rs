//! The consumer's bridge of a network edge: puts each message that arrives on the consumer
//! task's bounded queue, in order, and grants the producer credit as the queue takes them.
//! What a restored producer replays of what the consumer already had is dropped ([`Seen`]).

use std::io::Write;
use std::net::TcpStream;

use anduin_types::{Epoch, Message};
use anduin_wire::Frame;

use super::codec::from_frame;
use super::listener::{kind_name, Expecting};
use super::resume::{Filtered, Seen};
use super::{NetError, CONSUMER_STOPPED};
use crate::channel::Envelope;
use crate::protocol::Event;
use anduin_wire::{write_frame, FrameReader};

/// Runs the edge until its end message (`Ok`) or a failure.
pub(super) fn run(
    mut reader: FrameReader<TcpStream>,
    mut writer: TcpStream,
    end: &Expecting,
    seen: &mut Seen,
    window: u32,
) -> Result<(), NetError> {
    let (tx, schema) = (&end.tx, end.schema.as_ref());
    write_frame(&mut writer, &Frame::Credit { messages: window })?;
    writer.flush().map_err(anduin_wire::FrameError::from)?;
    // Credit goes back in handfuls, not one frame per message.
    let handful = (window / 2).max(1);
    let mut owed = 0;
    let mut last = 0;
    loop {
        let frame = match reader.read_frame()? {
            Some(Frame::Refused { reason }) => return Err(NetError::Refused(reason)),
            Some(
                f @ (Frame::Hello(_)
                | Frame::Credit { .. }
                | Frame::Message { .. }
                | Frame::KeyGroups { .. }
                | Frame::KeyGroupsTaken),
            ) => return Err(NetError::Unexpected(kind_name(&f))),
            Some(f) => f,
            None => return Err(NetError::ProducerClosed),
        };
        let env = from_frame(frame)?;
        if env.seq != last + 1 {
            return Err(NetError::OutOfOrder { got: env.seq, last });
        }
        last = env.seq;
        if let (Message::Data(batch), Some(schema)) = (&env.msg, schema) {
            check_schema(env.seq, batch, schema)?;
        }
        let end_of_stream = matches!(env.msg, Message::End);
        let msg = match seen.filter(env.msg)? {
            Filtered::Deliver(msg) => Some(msg),
            Filtered::Drop => None,
            Filtered::Void(epoch, barrier) => {
                // The consumer would snapshot past what the restored producer's snapshot
                // covers: this checkpoint is given up (told before the barrier reaches the
                // task, so before its acknowledgement); the barrier still goes on, so that
                // alignment downstream is not left waiting for it. The next one is consistent.
                tracing::warn!(edge = %end.name, epoch, "a checkpoint's barrier came while the edge replayed what it had: giving that checkpoint up");
                if let Some(r) = &end.resumable {
                    let _ = r.reports.send(Event::Failed {
                        epoch: Epoch(epoch),
                        task: r.task,
                        reason: format!("{}: its producer was restored and replayed what had already arrived when the barrier came", end.name),
                    });
                }
                Some(Message::Barrier(barrier))
            }
        };
        let mut ended = false;
        if let Some(msg) = msg {
            ended = matches!(msg, Message::End);
            let seq = seen.next_seq();
            deliver(&mut writer, tx, Envelope { seq, msg })?;
        }
        if ended || end_of_stream {
            return Ok(());
        }
        owed += 1;
        if owed >= handful {
            write_frame(&mut writer, &Frame::Credit { messages: owed })?;
            owed = 0;
        }
    }
}

/// Puts `env` on the consumer task's queue; tells the producer when the task has stopped.
fn deliver(
    writer: &mut TcpStream,
    tx: &crossbeam_channel::Sender<Envelope>,
    env: Envelope,
) -> Result<(), NetError> {
    if tx.send(env).is_err() {
        let _ = write_frame(
            writer,
            &Frame::Refused {
                reason: CONSUMER_STOPPED.into(),
            },
        );
        return Err(NetError::ConsumerGone);
    }
    Ok(())
}

/// Whether `batch` has the channel's columns, of the channel's types.
fn check_schema(
    seq: u64,
    batch: &arrow::record_batch::RecordBatch,
    schema: &arrow::datatypes::SchemaRef,
) -> Result<(), NetError> {
    let (got, want) = (batch.schema(), schema);
    if got.fields().len() != want.fields().len() {
        return Err(NetError::Schema {
            seq,
            why: format!(
                "{} columns where the channel has {}",
                got.fields().len(),
                want.fields().len()
            ),
        });
    }
    for (g, w) in got.fields().iter().zip(want.fields()) {
        if g.data_type() != w.data_type() {
            return Err(NetError::Schema {
                seq,
                why: format!(
                    "column `{}` is {} where the channel's `{}` is {}",
                    g.name(),
                    g.data_type(),
                    w.name(),
                    w.data_type()
                ),
            });
        }
    }
    Ok(())
}
