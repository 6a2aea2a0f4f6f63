//! A channel's messages as frames and back: batches of rows as Arrow IPC, everything else as
//! the wire crate's own frames. Each data frame is a whole IPC stream (schema, batch, end), so
//! that any frame can be decoded alone — a replayed frame as well as the first.

use std::io::Cursor;

use anduin_types::{Message, Watermark};
use anduin_wire::Frame;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use arrow::record_batch::RecordBatch;

use crate::channel::Envelope;

/// Why a message could not be turned into a frame or back.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CodecError {
    /// Arrow could not write or read the batch.
    #[error("Arrow IPC: {0}")]
    Ipc(#[from] arrow::error::ArrowError),
    /// A data frame held no batch.
    #[error("a data frame holds no batch")]
    NoBatch,
    /// The bytes are not an Arrow IPC stream.
    #[error("not an Arrow IPC stream: {0}")]
    Malformed(String),
    /// A frame that does not carry a message where one was expected.
    #[error("a {0} frame where a message of the channel was expected")]
    NotAMessage(&'static str),
}

/// The frame carrying message number `seq` of a channel.
pub(crate) fn to_frame(seq: u64, msg: &Message) -> Result<Frame, CodecError> {
    Ok(match msg {
        Message::Data(batch) => Frame::Data {
            seq,
            ipc: batch_to_ipc(batch)?,
        },
        Message::Watermark(w) => Frame::Watermark { seq, ms: w.0 },
        Message::Idle(idle) => Frame::Idle { seq, idle: *idle },
        Message::Barrier(b) => Frame::Barrier {
            seq,
            barrier: b.clone(),
        },
        Message::Exhausted => Frame::Exhausted { seq },
        Message::GaveUp => Frame::GaveUp { seq },
        Message::End => Frame::End { seq },
        other => {
            // A message kind added to anduin-types and not yet to the wire: say so rather
            // than drop it.
            return Err(CodecError::Ipc(
                arrow::error::ArrowError::NotYetImplemented(format!(
                    "sending {other:?} over the network"
                )),
            ));
        }
    })
}

/// The message a frame carries, with its number on the channel.
pub(crate) fn from_frame(frame: Frame) -> Result<Envelope, CodecError> {
    let (seq, msg) = match frame {
        Frame::Data { seq, ipc } => (seq, Message::Data(ipc_to_batch(&ipc)?)),
        Frame::Watermark { seq, ms } => (seq, Message::Watermark(Watermark(ms))),
        Frame::Idle { seq, idle } => (seq, Message::Idle(idle)),
        Frame::Barrier { seq, barrier } => (seq, Message::Barrier(barrier)),
        Frame::Exhausted { seq } => (seq, Message::Exhausted),
        Frame::GaveUp { seq } => (seq, Message::GaveUp),
        Frame::End { seq } => (seq, Message::End),
        Frame::Hello(_) => return Err(CodecError::NotAMessage("hello")),
        Frame::Credit { .. } => return Err(CodecError::NotAMessage("credit")),
        Frame::Refused { .. } => return Err(CodecError::NotAMessage("refused")),
        Frame::Message { .. } => return Err(CodecError::NotAMessage("message")),
        Frame::KeyGroups { .. } | Frame::KeyGroupsTaken => {
            return Err(CodecError::NotAMessage("key groups"))
        }
    };
    Ok(Envelope { seq, msg })
}

/// A batch as one self-contained Arrow IPC stream.
pub(crate) fn batch_to_ipc(batch: &RecordBatch) -> Result<Vec<u8>, CodecError> {
    let mut writer = StreamWriter::try_new(Vec::new(), &batch.schema())?;
    writer.write(batch)?;
    writer.finish()?;
    Ok(writer.into_inner()?)
}

/// The batch of a self-contained Arrow IPC stream.
pub(crate) fn ipc_to_batch(ipc: &[u8]) -> Result<RecordBatch, CodecError> {
    check_lengths(ipc)?;
    // Arrow's reader panics on some malformed buffers (a slice past the end of the body,
    // found by this module's property test): a peer's bad bytes must fail the edge, not the
    // process. Frames are checksummed, so only a broken or hostile peer gets here.
    std::panic::catch_unwind(|| -> Result<RecordBatch, CodecError> {
        let mut reader = StreamReader::try_new(Cursor::new(ipc), None)?;
        match reader.next() {
            Some(batch) => Ok(batch?),
            None => Err(CodecError::NoBatch),
        }
    })
    .unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "the Arrow reader failed".into());
        Err(CodecError::Malformed(why))
    })
}

/// Checks that every length an IPC stream declares (of each message's metadata and body) lies
/// within its bytes, before Arrow's reader allocates what they declare: six bytes must not
/// make it allocate gigabytes.
fn check_lengths(ipc: &[u8]) -> Result<(), CodecError> {
    let bad = |why: String| CodecError::Malformed(why);
    let word = |at: usize| -> Option<u32> {
        let b = ipc.get(at..at + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let mut at = 0;
    while at < ipc.len() {
        let mut len = word(at).ok_or_else(|| bad(format!("a cut length at byte {at}")))?;
        at += 4;
        if len == 0xFFFF_FFFF {
            // The continuation marker; the length follows.
            len = word(at).ok_or_else(|| bad(format!("a cut length at byte {at}")))?;
            at += 4;
        }
        if len == 0 {
            return Ok(()); // The end of the stream.
        }
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        let meta = at
            .checked_add(len)
            .and_then(|end| ipc.get(at..end))
            .ok_or_else(|| {
                bad(format!(
                    "metadata of {len} bytes at byte {at} of {}",
                    ipc.len()
                ))
            })?;
        let message = arrow::ipc::root_as_message(meta)
            .map_err(|e| bad(format!("metadata at byte {at}: {e}")))?;
        let body = usize::try_from(message.bodyLength())
            .map_err(|_| bad(format!("a negative body length at byte {at}")))?;
        at = at
            .checked_add(len)
            .and_then(|a| a.checked_add(body))
            .filter(|end| *end <= ipc.len())
            .ok_or_else(|| {
                bad(format!(
                    "a body of {body} bytes past the end of {}",
                    ipc.len()
                ))
            })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use anduin_types::{Barrier, Epoch};
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn batch() -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![1, 2, 3])),
                Arc::new(StringArray::from(vec![Some("a"), None, Some("c")])),
            ],
        )
        .expect("columns match the schema")
    }

    #[test]
    fn every_message_comes_back_as_it_went() {
        let messages = vec![
            Message::Data(batch()),
            Message::Watermark(Watermark(42)),
            Message::Idle(true),
            Message::Barrier(Barrier::checkpoint(Epoch(3), true)),
            Message::Exhausted,
            Message::GaveUp,
            Message::End,
        ];
        for (i, msg) in messages.into_iter().enumerate() {
            let seq = i as u64 + 1;
            let frame = to_frame(seq, &msg).expect("encodes");
            let bytes = anduin_wire::encode(&frame).expect("fits a frame");
            let (back, used) = anduin_wire::decode(&bytes)
                .expect("decodes")
                .expect("whole");
            assert_eq!(used, bytes.len());
            let env = from_frame(back).expect("a message");
            assert_eq!(env.seq, seq);
            assert_eq!(format!("{:?}", env.msg), format!("{msg:?}"));
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// A valid stream with bytes changed, cut or added decodes to a batch or an error,
        /// never a panic.
        #[test]
        fn a_mutated_ipc_stream_is_a_batch_or_an_error_never_a_panic(
            flips in proptest::collection::vec((0usize..4096, 1u8..=255), 0..6),
            cut in 0usize..4096,
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..32),
        ) {
            let mut ipc = batch_to_ipc(&batch()).expect("encodes");
            let n = ipc.len();
            for (at, x) in flips {
                ipc[at % n] ^= x;
            }
            ipc.truncate(cut % (n + 1));
            ipc.extend(tail);
            let _ = ipc_to_batch(&ipc);
        }
    }

    #[test]
    fn lengths_past_the_end_are_refused_before_anything_is_allocated() {
        // "ARRO" read as a length is 1.3 GB.
        assert!(matches!(
            ipc_to_batch(b"ARROW1"),
            Err(CodecError::Malformed(_))
        ));
        let mut huge = vec![0xff, 0xff, 0xff, 0xff];
        huge.extend(0x7fff_ffffu32.to_le_bytes());
        assert!(matches!(ipc_to_batch(&huge), Err(CodecError::Malformed(_))));
    }

    #[test]
    fn a_data_frame_of_garbage_is_an_error_not_a_panic() {
        let good = batch_to_ipc(&batch()).expect("encodes");
        let mut cut = good.clone();
        cut.truncate(good.len() / 2);
        for ipc in [vec![], vec![0xff; 16], b"ARROW1".to_vec(), cut] {
            assert!(from_frame(Frame::Data { seq: 1, ipc }).is_err());
        }
        assert!(matches!(
            from_frame(Frame::Credit { messages: 1 }),
            Err(CodecError::NotAMessage("credit"))
        ));
    }
}
