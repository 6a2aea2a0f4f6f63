//! The consumer's bridge of a network edge: puts each message that arrives on the consumer
//! task's bounded queue, in order, and grants the producer credit as the queue takes them.

use std::io::Write;
use std::net::TcpStream;

use anduin_types::Message;
use anduin_wire::Frame;
use crossbeam_channel::Sender;

use super::codec::from_frame;
use super::listener::kind_name;
use super::{NetError, CONSUMER_STOPPED};
use crate::channel::Envelope;
use anduin_wire::{write_frame, FrameReader};

/// Runs the edge until its end message (`Ok`) or a failure.
pub(super) fn run(
    mut reader: FrameReader<TcpStream>,
    mut writer: TcpStream,
    tx: &Sender<Envelope>,
    window: u32,
    schema: Option<&arrow::datatypes::SchemaRef>,
) -> Result<(), NetError> {
    write_frame(&mut writer, &Frame::Credit { messages: window })?;
    writer.flush().map_err(anduin_wire::FrameError::from)?;
    // Credit goes back in handfuls, not one frame per message.
    let handful = (window / 2).max(1);
    let mut owed = 0;
    let mut last = 0;
    loop {
        let frame = match reader.read_frame()? {
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
        if let (Message::Data(batch), Some(schema)) = (&env.msg, schema) {
            check_schema(env.seq, batch, schema)?;
        }
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
