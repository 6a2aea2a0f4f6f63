//! The producer's bridge of a network edge: connects to the consumer's worker, opens the edge
//! with a handshake, then sends each message the producer task puts on its queue as a frame,
//! as long as the consumer has granted credit for it.

use std::io::{BufWriter, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use anduin_types::Message;
use anduin_wire::{Frame, Hello};
use crossbeam_channel::{Receiver, TryRecvError};

use super::codec::to_frame;
use super::listener::kind_name;
use super::{NetError, CONSUMER_STOPPED};
use crate::channel::Envelope;
use anduin_wire::{write_frame, FrameError, FrameReader};

/// How long a producer keeps trying to reach a consumer's worker that does not listen yet.
const CONNECT_FOR: Duration = Duration::from_secs(30);
/// How long the consumer has to answer the handshake.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// Runs the edge until the producer's end message is sent (`Ok`) or a failure.
pub(super) fn run(
    rx: Receiver<Envelope>,
    to: SocketAddr,
    hello: &Hello,
    secret: Option<&[u8]>,
) -> Result<(), NetError> {
    let stream = connect(to)?;
    let mut reader = FrameReader::new(stream.try_clone().map_err(FrameError::from)?);
    let mut writer = BufWriter::with_capacity(256 << 10, stream);
    write_frame(&mut writer, &Frame::Hello(hello.clone()))?;
    writer.flush().map_err(FrameError::from)?;
    writer
        .get_ref()
        .set_read_timeout(Some(ANSWER_WITHIN))
        .map_err(FrameError::from)?;
    // The consumer's challenge: prove the cluster's secret.
    match reader.read_frame()? {
        Some(Frame::Message { body: nonce }) => {
            let proof = anduin_wire::auth::proof(secret, &nonce);
            write_frame(&mut writer, &Frame::Message { body: proof })?;
            writer.flush().map_err(FrameError::from)?;
        }
        Some(Frame::Refused { reason }) => return Err(NetError::Refused(reason)),
        Some(other) => return Err(NetError::Unexpected(kind_name(&other))),
        None => return Err(NetError::Refused("closed without an answer".into())),
    }
    match reader.read_frame()? {
        Some(Frame::Hello(_)) => {}
        Some(Frame::Refused { reason }) => return Err(NetError::Refused(reason)),
        Some(other) => return Err(NetError::Unexpected(kind_name(&other))),
        None => return Err(NetError::Refused("closed without an answer".into())),
    }
    writer
        .get_ref()
        .set_read_timeout(None)
        .map_err(FrameError::from)?;
    let mut credit: u64 = 0;
    loop {
        let env = match rx.try_recv() {
            Ok(env) => env,
            Err(TryRecvError::Empty) => {
                // Nothing more to send right now: what is buffered goes out.
                writer.flush().map_err(FrameError::from)?;
                rx.recv().map_err(|_| NetError::ProducerGone)?
            }
            Err(TryRecvError::Disconnected) => return Err(NetError::ProducerGone),
        };
        while credit == 0 {
            writer.flush().map_err(FrameError::from)?;
            match reader.read_frame()? {
                Some(Frame::Credit { messages }) => credit += u64::from(messages),
                Some(Frame::Refused { reason }) if reason == CONSUMER_STOPPED => {
                    return Err(NetError::ConsumerGone)
                }
                Some(Frame::Refused { reason }) => return Err(NetError::Refused(reason)),
                Some(other) => return Err(NetError::Unexpected(kind_name(&other))),
                None => return Err(NetError::ConsumerGone),
            }
        }
        let end = matches!(env.msg, Message::End);
        if let Err(e) = write_frame(&mut writer, &to_frame(env.seq, &env.msg)?) {
            return Err(why_closed(&mut reader, writer.get_ref(), e));
        }
        credit -= 1;
        if end {
            writer.flush().map_err(FrameError::from)?;
            let stream = writer.get_ref();
            let _ = stream.shutdown(Shutdown::Write);
            // Wait for the consumer to close: it has taken everything.
            while let Ok(Some(_)) = reader.read_frame() {}
            return Ok(());
        }
    }
}

/// Why a write failed: the consumer's refusal when it sent one before closing (its task
/// stopped), the write's error otherwise.
fn why_closed(reader: &mut FrameReader<TcpStream>, stream: &TcpStream, e: FrameError) -> NetError {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    loop {
        match reader.read_frame() {
            Ok(Some(Frame::Refused { reason })) if reason == CONSUMER_STOPPED => {
                return NetError::ConsumerGone
            }
            Ok(Some(Frame::Refused { reason })) => return NetError::Refused(reason),
            Ok(Some(_)) => continue,
            _ => return NetError::Frame(e),
        }
    }
}

/// A connection to `to`, retried while the consumer's worker does not listen yet.
fn connect(to: SocketAddr) -> Result<TcpStream, NetError> {
    let deadline = Instant::now() + CONNECT_FOR;
    let mut pause = Duration::from_millis(10);
    loop {
        match TcpStream::connect_timeout(&to, Duration::from_secs(5)) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::ConnectionRefused
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(500));
            }
            Err(cause) => return Err(NetError::Connect { to, cause }),
        }
    }
}
