//! The producer's bridge of a network edge: connects to the consumer's worker, opens the edge
//! with a handshake, then sends each message the producer task puts on its queue as a frame,
//! as long as the consumer has granted credit for it.
//!
//! A resumable edge (a cluster's) also keeps what it sent after the last complete checkpoint
//! ([`Backup`]); when the connection is lost it waits for the consumer's worker to come back
//! (or its instances to be restored elsewhere, [`Peers`]) and replays from where the consumer
//! asks.

use std::io::{BufWriter, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anduin_types::Message;
use anduin_wire::{Frame, Hello};
use crossbeam_channel::Receiver;

use super::codec::to_frame;
use super::listener::kind_name;
use super::resume::Backup;
use super::{NetError, Peers, CONSUMER_STOPPED};
use crate::channel::Envelope;
use crate::config::Resumption;
use crate::topology::WorkerId;
use anduin_wire::{write_frame, FrameError, FrameReader};

/// How long a producer keeps trying to reach a consumer's worker that does not listen yet.
const CONNECT_FOR: Duration = Duration::from_secs(30);
/// How long the consumer has to answer the handshake.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);
/// How often a producer that has sent its end checks whether the last checkpoint completed.
const END_POLL: Duration = Duration::from_millis(100);
/// How long a producer that has sent its end keeps its backup for the last checkpoint.
const END_KEEP: Duration = Duration::from_secs(60);

/// One producer end.
pub(super) struct Outbound {
    pub rx: Receiver<Envelope>,
    pub peers: Arc<Peers>,
    pub to: WorkerId,
    pub hello: Hello,
    pub secret: Option<Arc<[u8]>>,
    pub resumption: Option<Resumption>,
    /// The edge feeds a copy of a hot standby: the producer, and the live copies it also
    /// feeds, are not held up by a lost one. On a resumable edge, what the producer sends
    /// while the copy is lost goes into the backup (as long as it has room) for the restored
    /// copy; only such edges drain so: on others, a producer running on while its consumer is
    /// restored only lengthens the restored consumer's catch-up. Without resumption the copy
    /// does not come back: the edge ends, and the producer's outlet drops what it sends there,
    /// as it does when a copy on its own worker is lost (`Outlet::may_vanish`).
    pub to_copy: bool,
}

/// Where the producer is in its stream.
struct Progress {
    backup: Option<Backup>,
    /// The end was taken from the queue and sent.
    ended: bool,
    /// The newest barrier taken from the queue.
    last_barrier: u64,
    /// A message taken from the queue while the consumer was lost, for which the backup had
    /// no room: it goes out first, after the replay.
    held: Option<Message>,
}

impl Outbound {
    /// Runs the edge until the producer's end message is sent (`Ok`) or a failure.
    pub(super) fn run(self) -> Result<(), NetError> {
        let mut progress = Progress {
            backup: self.resumption.as_ref().map(|r| {
                Backup::new(
                    self.hello.from_epoch,
                    r.backup_limit,
                    Arc::clone(&r.backup_budget),
                )
            }),
            ended: false,
            last_barrier: self.hello.from_epoch,
            held: None,
        };
        let mut at = self.peers.reach(self.to).ok_or(NetError::NoAddress)?;
        let mut connect_for = CONNECT_FOR;
        loop {
            let lost = match self.session(&mut at, connect_for, &mut progress) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if self.to_copy && self.resumption.is_none() && lost.is_lost_peer() {
                // Not the run's failure: the copy's own says why, and its stream selector
                // goes on with a live copy. Returning lets go of the producer's queue, whose
                // outlet then drops what is sent to this copy.
                tracing::warn!(
                    edge = self.hello.edge,
                    error = %lost,
                    "lost the copy of a hot standby this edge feeds: what its producer sends there is dropped from now on"
                );
                return Ok(());
            }
            let Some(r) = self.resumption.as_ref().filter(|_| lost.is_lost_peer()) else {
                return Err(lost);
            };
            tracing::warn!(edge = self.hello.edge, error = %lost, "lost the consumer of an edge: waiting for it to come back");
            // The consumer's worker is gone or cut off: wait for it to be restored
            // elsewhere (a new address), trying the old one meanwhile.
            let deadline = Instant::now() + r.wait;
            let mut next_try = Instant::now();
            loop {
                if Instant::now() >= deadline {
                    return Err(NetError::PeerNotBack {
                        waited: r.wait,
                        last: lost.to_string(),
                    });
                }
                self.take_while_lost(&mut progress);
                if let Some(moved) = self.peers.changed(self.to, at.1, self.lost_pause()) {
                    at = moved;
                    break;
                }
                if Instant::now() >= next_try {
                    if TcpStream::connect_timeout(&at.0, Duration::from_millis(500)).is_ok() {
                        break;
                    }
                    next_try = Instant::now() + Duration::from_secs(1);
                }
            }
            connect_for = Duration::from_secs(5);
        }
    }

    /// One connection: handshake, replay of what the consumer asks for, then the stream.
    /// `at`: the consumer's address and its generation in [`Peers`] (updated when it moves
    /// while this connects).
    fn session(
        &self,
        at: &mut (SocketAddr, u64),
        connect_for: Duration,
        progress: &mut Progress,
    ) -> Result<(), NetError> {
        let stream = self.connect(at, connect_for, progress)?;
        // Cut when the consumer's instances move while this connection still stands.
        let _watched = self.peers.watch(self.to, at.1, &stream);
        let mut reader = FrameReader::new(stream.try_clone().map_err(FrameError::from)?);
        let mut writer = BufWriter::with_capacity(256 << 10, stream);
        let hello = Hello {
            from_epoch: progress
                .backup
                .as_ref()
                .map_or(self.hello.from_epoch, Backup::base),
            ..self.hello.clone()
        };
        write_frame(&mut writer, &Frame::Hello(hello))?;
        writer.flush().map_err(FrameError::from)?;
        writer
            .get_ref()
            .set_read_timeout(Some(ANSWER_WITHIN))
            .map_err(FrameError::from)?;
        // The consumer's challenge: prove the cluster's secret.
        match reader.read_frame()? {
            Some(Frame::Message { body: nonce }) => {
                let proof = anduin_wire::auth::proof(self.secret.as_deref(), &nonce);
                write_frame(&mut writer, &Frame::Message { body: proof })?;
                writer.flush().map_err(FrameError::from)?;
            }
            Some(Frame::Refused { reason }) => return Err(NetError::Refused(reason)),
            Some(other) => return Err(NetError::Unexpected(kind_name(&other))),
            None => return Err(NetError::ClosedUnanswered),
        }
        let asked = match reader.read_frame()? {
            Some(Frame::Hello(h)) => h.from_epoch,
            Some(Frame::Refused { reason }) => return Err(NetError::Refused(reason)),
            Some(other) => return Err(NetError::Unexpected(kind_name(&other))),
            None => return Err(NetError::ClosedUnanswered),
        };
        writer
            .get_ref()
            .set_read_timeout(None)
            .map_err(FrameError::from)?;
        let replay = match &progress.backup {
            Some(b) => b.replay(asked).map_err(NetError::Replay)?,
            None if asked == self.hello.from_epoch => Vec::new(),
            None => {
                return Err(NetError::Replay(super::resume::ReplayError::TooOld {
                    asked,
                    base: self.hello.from_epoch,
                }))
            }
        };
        let mut link = Link {
            reader,
            writer,
            credit: 0,
            seq: 0,
        };
        for msg in &replay {
            link.send(msg)?;
        }
        if replay.iter().any(|m| matches!(m, Message::End)) {
            return self.finish(link, progress);
        }
        if progress.ended {
            // The end was sent on a connection that broke before the consumer took it all;
            // the replay above held it, unless the backup had none.
            return Err(NetError::ProducerGone);
        }
        loop {
            let msg = match progress.held.take() {
                Some(msg) => msg,
                None => match self.rx.try_recv() {
                    Ok(env) => env.msg,
                    Err(crossbeam_channel::TryRecvError::Empty) => {
                        // Nothing more to send right now: what is buffered goes out.
                        link.writer.flush().map_err(FrameError::from)?;
                        self.rx.recv().map_err(|_| NetError::ProducerGone)?.msg
                    }
                    Err(crossbeam_channel::TryRecvError::Disconnected) => {
                        return Err(NetError::ProducerGone)
                    }
                },
            };
            if let Some(b) = progress.backup.as_mut() {
                if let Some(r) = &self.resumption {
                    b.trim(r.completed.load(Ordering::SeqCst));
                }
                if self.to_copy && !b.has_room_for(&msg) {
                    // Before a copy's backup outgrows its limit (and the copy could no longer
                    // be resumed), what is buffered goes out: a connection already lost shows
                    // here, and the message is held for after the replay instead.
                    if let Err(e) = link.writer.flush() {
                        progress.held = Some(msg);
                        return Err(why_closed(
                            &mut link.reader,
                            link.writer.get_ref(),
                            FrameError::from(e),
                        ));
                    }
                }
                b.keep(&msg);
            }
            let end = matches!(msg, Message::End);
            if let Message::Barrier(b) = &msg {
                progress.last_barrier = b.epoch.0;
            }
            progress.ended |= end;
            link.send(&msg)?;
            if end {
                return self.finish(link, progress);
            }
        }
    }

    /// The end is sent: waits for the consumer to close (it has taken everything), and, on a
    /// resumable edge, for the checkpoint of the last barrier to complete, so that a consumer
    /// lost before then can still be replayed to.
    fn finish(&self, mut link: Link, progress: &Progress) -> Result<(), NetError> {
        link.writer.flush().map_err(FrameError::from)?;
        let Some(r) = &self.resumption else {
            let stream = link.writer.get_ref();
            let _ = stream.shutdown(Shutdown::Write);
            while let Ok(Some(_)) = link.reader.read_frame() {}
            return Ok(());
        };
        let deadline = Instant::now() + END_KEEP;
        let _ = link.writer.get_ref().set_read_timeout(Some(END_POLL));
        loop {
            if r.completed.load(Ordering::SeqCst) >= progress.last_barrier {
                let _ = link.writer.get_ref().shutdown(Shutdown::Write);
                drain_until_closed(&mut link.reader, deadline);
                return Ok(());
            }
            if Instant::now() >= deadline {
                tracing::warn!(
                    edge = self.hello.edge,
                    epoch = progress.last_barrier,
                    "the last checkpoint did not complete in time: the edge's backup is let go"
                );
                return Ok(());
            }
            match link.reader.read_frame() {
                Ok(Some(Frame::Refused { reason })) if reason == CONSUMER_STOPPED => {
                    return Err(NetError::ConsumerGone)
                }
                Ok(Some(Frame::Refused { reason })) => return Err(NetError::Refused(reason)),
                Ok(Some(_)) => {}
                Err(FrameError::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                // The consumer took the end and closed. (Had its process died before its last
                // checkpoint completed, the restored one finds no producer and the query rolls
                // back as a whole.)
                Ok(None) => return Ok(()),
                Err(_) => {
                    if r.completed.load(Ordering::SeqCst) >= progress.last_barrier {
                        return Ok(());
                    }
                    return Err(NetError::ConsumerGone);
                }
            }
        }
    }
}

/// Reads what the consumer still sends (credit) until it closes the connection, or until
/// `deadline`: a process that ended with frames of the connection unread would reset it, and
/// a reset can throw away the end before the consumer has read it (it would then wait for a
/// producer that finished).
fn drain_until_closed(reader: &mut FrameReader<TcpStream>, deadline: Instant) {
    while Instant::now() < deadline {
        match reader.read_frame() {
            Ok(Some(_)) => {}
            Err(FrameError::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Ok(None) | Err(_) => return,
        }
    }
}

/// A connected edge: frames out under credit.
struct Link {
    reader: FrameReader<TcpStream>,
    writer: BufWriter<TcpStream>,
    credit: u64,
    /// Frames are numbered per connection, from 1.
    seq: u64,
}

impl Link {
    fn send(&mut self, msg: &Message) -> Result<(), NetError> {
        while self.credit == 0 {
            self.writer.flush().map_err(FrameError::from)?;
            match self.reader.read_frame()? {
                Some(Frame::Credit { messages }) => self.credit += u64::from(messages),
                Some(Frame::Refused { reason }) if reason == CONSUMER_STOPPED => {
                    return Err(NetError::ConsumerGone)
                }
                Some(Frame::Refused { reason }) => return Err(NetError::Refused(reason)),
                Some(other) => return Err(NetError::Unexpected(kind_name(&other))),
                None => return Err(NetError::ConsumerGone),
            }
        }
        self.seq += 1;
        if let Err(e) = write_frame(&mut self.writer, &to_frame(self.seq, msg)?) {
            return Err(why_closed(&mut self.reader, self.writer.get_ref(), e));
        }
        self.credit -= 1;
        Ok(())
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

impl Outbound {
    /// A connection to the consumer at `at`, retried for `within` while its worker does not
    /// listen yet. When the consumer's instances move meanwhile (they were restored in
    /// another process: [`Peers`]), the new address is tried at once, with a new `within`.
    fn connect(
        &self,
        at: &mut (SocketAddr, u64),
        within: Duration,
        progress: &mut Progress,
    ) -> Result<TcpStream, NetError> {
        let mut deadline = Instant::now() + within;
        let mut pause = Duration::from_millis(10);
        loop {
            match TcpStream::connect_timeout(&at.0, Duration::from_secs(5)) {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    return Ok(s);
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::ConnectionRefused
                        && Instant::now() < deadline =>
                {
                    self.take_while_lost(progress);
                    if let Some(moved) =
                        self.peers
                            .changed(self.to, at.1, pause.min(self.lost_pause()))
                    {
                        *at = moved;
                        deadline = Instant::now() + within;
                        pause = Duration::from_millis(10);
                    } else {
                        pause = (pause * 2).min(Duration::from_millis(500));
                    }
                }
                Err(cause) => return Err(NetError::Connect { to: at.0, cause }),
            }
        }
    }
}

impl Outbound {
    /// How long to wait at a time for a lost consumer to move: short on an edge that drains
    /// its producer's queue meanwhile ([`Outbound::to_copy`]).
    fn lost_pause(&self) -> Duration {
        if self.to_copy {
            Duration::from_millis(20)
        } else {
            Duration::from_secs(1)
        }
    }

    /// While the consumer is lost, on an edge that feeds a copy of a hot standby: takes what
    /// the producer's task has sent into the backup, as long as the backup has room, so that
    /// the task goes on feeding the live copies. A message with no room is held, to go out
    /// first after the replay; nothing more is taken then (the producer waits, as it would
    /// for a slow consumer). The backup is not trimmed meanwhile: the restored consumer asks
    /// for the stream after the checkpoint it was restored from, and all of it must be here.
    fn take_while_lost(&self, progress: &mut Progress) {
        if !self.to_copy || progress.ended || progress.held.is_some() {
            return;
        }
        let Some(backup) = progress.backup.as_mut() else {
            return;
        };
        while let Ok(env) = self.rx.try_recv() {
            if !backup.has_room_for(&env.msg) {
                progress.held = Some(env.msg);
                return;
            }
            backup.keep(&env.msg);
            if let Message::Barrier(b) = &env.msg {
                progress.last_barrier = b.epoch.0;
            }
            if matches!(env.msg, Message::End) {
                progress.ended = true;
                return;
            }
        }
    }
}
