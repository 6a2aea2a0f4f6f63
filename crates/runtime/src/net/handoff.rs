//! Key groups handed between instances of a rescaled operator that run in different processes
//! (a cluster's workers), over the data plane.
//!
//! At a live rescale each instance hands the key groups it loses to their new owners
//! ([`crate::rescale`]). An owner in the same process gets them through its in-process inbox;
//! an owner elsewhere through [`RemoteMate::hand`]: the giving instance opens a connection of
//! its own to the listener of the owner's process (the one that process's channels arrive
//! at), opens it with a `Hello` that names no channel ([`HANDOFF_EDGE`]: the query, the
//! attempt, giving and taking instance, the rescale's epoch), proves that it knows the
//! cluster's secret as every channel's producer does, and sends the key groups as
//! `KeyGroups` frames (a header — operator, epoch, range, the giver's inline state — and the
//! state's bytes, cut into frames of at most [`CHUNK`] bytes). The listener puts them whole in
//! the owner's inbox (the same one in-process handoffs use) and answers `KeyGroupsTaken`;
//! only then does the giver go on. A handoff that cannot be delivered (the owner's process is
//! gone, refuses it, or does not answer) fails the giving task, and so the run: recovery then
//! restores the last complete checkpoint, with the assignment it recorded. Nothing is
//! dropped silently.
//!
//! Why the data plane rather than an object in the checkpoint store: the handoff must reach
//! an instance that is running now, and the data plane already reaches every process of the
//! attempt, with its authentication, its addresses (which [`Peers`] keeps current when a
//! part is restored elsewhere) and its framing with checksums; a handoff is as large as the
//! moving key groups' state and crosses once, machine to machine, with no store round trip,
//! no polling for an object to appear, and nothing left behind to collect. A handoff is not
//! needed after the rescale's barrier: a run recovering from a checkpoint re-cuts the state
//! that checkpoint holds (see `crate::restore`), it never replays a handoff.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anduin_state::KeyGroupRange;
use anduin_types::Epoch;
use anduin_wire::{write_frame, Frame, FrameError, FrameReader, Hello, PROTOCOL_VERSION};
use crossbeam_channel::Sender;
use serde::{Deserialize, Serialize};

use super::listener::kind_name;
use super::{NetError, Peers};
use crate::rescale::Handoff;
use crate::topology::WorkerId;

/// The edge a handoff's `Hello` names: no channel of the plan has it.
pub(crate) const HANDOFF_EDGE: u32 = u32::MAX;
/// The largest part of a handoff in one frame.
const CHUNK: usize = 16 << 20;
/// How long a giver keeps trying to reach a process that does not listen (yet), or whose
/// taking instance has not opened its inbox (yet: it may be starting, as the giver's own
/// process just did).
pub(super) const CONNECT_FOR: Duration = Duration::from_secs(30);
/// The end of a refusal that says the taking instance has no inbox in that process (yet).
const NOT_HERE: &str = "does not run in this process";
/// How long the taking process has to answer (the challenge, then the receipt), and to
/// send each part while it reads them.
const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// What a handoff says of itself, before the state's bytes.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    operator: String,
    epoch: u64,
    from: usize,
    to: usize,
    start: u16,
    end: u16,
    inline: Option<serde_json::Value>,
}

/// The way to one instance of a rescaled operator that runs in another process.
pub(crate) struct RemoteMate {
    pub(super) peers: Arc<Peers>,
    /// The worker whose process runs it.
    pub(super) worker: WorkerId,
    /// The query, attempt, giving and taking instance, this process's incarnation.
    pub(super) hello: Hello,
    pub(super) secret: Option<Arc<[u8]>>,
    pub(super) operator: String,
    /// How long to ask again a process that has no inbox for the taking instance yet.
    pub(super) wait_for_inbox: Duration,
}

impl RemoteMate {
    /// The worker that runs the instance.
    pub(crate) fn worker(&self) -> u32 {
        self.worker.0
    }

    /// Hands `handoff` over; returns once the taking process has it whole. A taking instance
    /// that has no inbox there yet (its process is still starting it) is asked again, with
    /// pauses, for [`CONNECT_FOR`].
    pub(crate) fn hand(&self, handoff: Handoff) -> Result<(), NetError> {
        let deadline = Instant::now() + self.wait_for_inbox;
        let mut pause = Duration::from_millis(10);
        loop {
            match self.hand_once(&handoff) {
                Err(NetError::Refused(why))
                    if why.ends_with(NOT_HERE) && Instant::now() < deadline =>
                {
                    tracing::debug!(operator = %self.operator, %why, "the taking instance has no inbox yet: asking again");
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                done => return done,
            }
        }
    }

    fn hand_once(&self, handoff: &Handoff) -> Result<(), NetError> {
        let to = usize::try_from(self.hello.to_instance).unwrap_or(usize::MAX);
        let payload = encode(&self.operator, to, handoff)?;
        let stream = self.connect()?;
        let _ = stream.set_nodelay(true);
        stream
            .set_read_timeout(Some(ANSWER_WITHIN))
            .map_err(FrameError::from)?;
        let mut reader = FrameReader::new(stream.try_clone().map_err(FrameError::from)?);
        let mut writer = BufWriter::with_capacity(1 << 20, stream);
        let hello = Hello {
            from_epoch: handoff.epoch.0,
            ..self.hello.clone()
        };
        write_frame(&mut writer, &Frame::Hello(hello))?;
        writer.flush().map_err(FrameError::from)?;
        match reader.read_frame()? {
            Some(Frame::Message { body: nonce }) => {
                let proof = anduin_wire::auth::proof(self.secret.as_deref(), &nonce);
                write_frame(&mut writer, &Frame::Message { body: proof })?;
            }
            other => return Err(answer(other)),
        }
        let mut parts = payload.chunks(CHUNK).peekable();
        if parts.peek().is_none() {
            write_frame(
                &mut writer,
                &Frame::KeyGroups {
                    last: true,
                    chunk: Vec::new(),
                },
            )?;
        }
        while let Some(part) = parts.next() {
            let frame = Frame::KeyGroups {
                last: parts.peek().is_none(),
                chunk: part.to_vec(),
            };
            write_frame(&mut writer, &frame)?;
        }
        writer.flush().map_err(FrameError::from)?;
        match reader.read_frame()? {
            Some(Frame::KeyGroupsTaken) => Ok(()),
            other => Err(answer(other)),
        }
    }

    /// A connection to the taking instance's process, at its address now (a part restored
    /// elsewhere has a new one), retried while nothing listens there.
    fn connect(&self) -> Result<TcpStream, NetError> {
        let deadline = Instant::now() + CONNECT_FOR;
        let mut pause = Duration::from_millis(10);
        loop {
            let (addr, _) = self.peers.reach(self.worker).ok_or(NetError::NoAddress)?;
            match TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
                Ok(s) => return Ok(s),
                Err(e)
                    if e.kind() == std::io::ErrorKind::ConnectionRefused
                        && Instant::now() < deadline =>
                {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                Err(cause) => return Err(NetError::Connect { to: addr, cause }),
            }
        }
    }
}

/// What the taking process's answer means, when it is not the one expected.
fn answer(frame: Option<Frame>) -> NetError {
    match frame {
        Some(Frame::Refused { reason }) => NetError::Refused(reason),
        Some(other) => NetError::Unexpected(kind_name(&other)),
        None => NetError::Refused(
            "the taking process closed the connection without taking the key groups".into(),
        ),
    }
}

/// A handoff's bytes: the header's length (u32 LE), the header (JSON), the state.
fn encode(operator: &str, to: usize, h: &Handoff) -> Result<Vec<u8>, NetError> {
    let header = Header {
        operator: operator.to_string(),
        epoch: h.epoch.0,
        from: h.from,
        to,
        start: h.range.start,
        end: h.range.end,
        inline: h.inline.clone(),
    };
    let header = serde_json::to_vec(&header).map_err(|e| NetError::KeyGroups(e.to_string()))?;
    let len = u32::try_from(header.len())
        .map_err(|_| NetError::KeyGroups("a header larger than 4 GiB".into()))?;
    let mut out = Vec::with_capacity(4 + header.len() + h.bytes.len());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(&h.bytes);
    Ok(out)
}

/// The handoff in `payload`, and the header that says where it goes.
fn decode(payload: Vec<u8>) -> Result<(Header, Handoff), String> {
    let len = payload
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or("a handoff shorter than its header's length")?;
    let end = usize::try_from(len)
        .ok()
        .and_then(|l| l.checked_add(4))
        .filter(|e| *e <= payload.len())
        .ok_or("a handoff shorter than its header")?;
    let header: Header = serde_json::from_slice(&payload[4..end])
        .map_err(|e| format!("a malformed handoff header: {e}"))?;
    let handoff = Handoff {
        epoch: Epoch(header.epoch),
        from: header.from,
        range: KeyGroupRange::new(header.start, header.end),
        bytes: payload[end..].to_vec(),
        inline: header.inline.clone(),
    };
    Ok((header, handoff))
}

/// The inboxes of the instances of rescaled operators that run in this process, by query,
/// operator and instance, each with the attempt it belongs to.
#[derive(Default)]
pub(crate) struct Inboxes {
    open: Mutex<HashMap<InboxKey, (u64, Sender<Handoff>)>>,
    /// Per query, its attempt and where the inbox of an instance not started yet is opened
    /// as its key groups come (an instance added while running: see `crate::grow`).
    openers: Mutex<HashMap<String, (u64, Opener)>>,
}

/// The inbox of instance `instance` of `operator`, opened when that instance will run here
/// (an instance added while the query runs, before it is built).
pub(crate) type Opener = Arc<dyn Fn(&str, usize) -> Option<Sender<Handoff>> + Send + Sync>;

/// Query, operator, instance.
type InboxKey = (String, String, usize);

impl Inboxes {
    /// Instance `instance` of `operator` (query `query`, attempt `attempt`) takes handoffs
    /// from other processes into `tx`.
    pub(crate) fn open(
        &self,
        query: &str,
        operator: &str,
        instance: usize,
        attempt: u64,
        tx: Sender<Handoff>,
    ) {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).insert(
            (query.to_string(), operator.to_string(), instance),
            (attempt, tx),
        );
    }

    /// The instances of query `query` (attempt `attempt`) added while it runs take handoffs
    /// that come before they are built into the inboxes `opener` opens.
    pub(crate) fn open_as_they_come(&self, query: &str, attempt: u64, opener: Opener) {
        self.openers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(query.to_string(), (attempt, opener));
    }

    /// Instance `instance` of `operator` (query `query`) retired: its inbox goes, so that key
    /// groups for an instance added later at its index reach that one's (opened as they come
    /// until it is built), never the retired one's closed inbox.
    pub(crate) fn close(&self, query: &str, operator: &str, instance: usize) {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(query.to_string(), operator.to_string(), instance));
    }

    /// Closes every inbox.
    pub(crate) fn clear(&self) {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.openers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    fn get(&self, query: &str, operator: &str, instance: usize) -> Option<(u64, Sender<Handoff>)> {
        let open = self
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(query.to_string(), operator.to_string(), instance))
            .cloned();
        if open.is_some() {
            return open;
        }
        let (attempt, opener) = self
            .openers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(query)
            .cloned()?;
        opener(operator, instance).map(|tx| (attempt, tx))
    }
}

/// The taking side of a handoff connection whose `hello` has been checked for the secret:
/// reads the key groups whole, puts them in their instance's inbox and answers
/// `KeyGroupsTaken`. `Err`: why it is refused (the caller says so to the giver).
pub(super) fn take(
    reader: &mut FrameReader<TcpStream>,
    writer: &mut TcpStream,
    hello: &Hello,
    inboxes: &Inboxes,
) -> Result<(), String> {
    if hello.version != PROTOCOL_VERSION {
        return Err(anduin_wire::Refusal::Version {
            got: hello.version,
            ours: PROTOCOL_VERSION,
        }
        .to_string());
    }
    let _ = writer.set_read_timeout(Some(ANSWER_WITHIN));
    let mut payload = Vec::new();
    loop {
        match reader.read_frame() {
            Ok(Some(Frame::KeyGroups { last, chunk })) => {
                payload.extend_from_slice(&chunk);
                if last {
                    break;
                }
            }
            Ok(Some(other)) => {
                return Err(format!(
                    "expected key groups, got a {} frame",
                    kind_name(&other)
                ))
            }
            Ok(None) => return Err("the giver closed the connection mid-handoff".into()),
            Err(e) => return Err(format!("reading the key groups: {e}")),
        }
    }
    let (header, handoff) = decode(payload)?;
    let named = |n: u32| usize::try_from(n).unwrap_or(usize::MAX);
    if header.from != named(hello.from_instance)
        || header.to != named(hello.to_instance)
        || header.epoch != hello.from_epoch
    {
        return Err(format!(
            "the key groups of instance {} to {} at epoch {} came on a connection opened for instance {} to {} at epoch {}",
            header.from, header.to, header.epoch, hello.from_instance, hello.to_instance, hello.from_epoch
        ));
    }
    let Some((attempt, tx)) = inboxes.get(&hello.query, &header.operator, header.to) else {
        return Err(format!(
            "instance {} of operator \"{}\" of query \"{}\" {NOT_HERE}",
            header.to, header.operator, hello.query
        ));
    };
    if attempt != hello.attempt {
        return Err(format!(
            "the key groups are for attempt {} of query \"{}\", which runs attempt {attempt} here: they are stale",
            hello.attempt, hello.query
        ));
    }
    tracing::debug!(
        query = %hello.query,
        operator = %header.operator,
        from = header.from,
        to = header.to,
        epoch = header.epoch,
        bytes = handoff.bytes.len(),
        "key groups arrived from another process"
    );
    tx.send(handoff).map_err(|_| {
        format!(
            "instance {} of operator \"{}\" has stopped: it cannot take key groups",
            header.to, header.operator
        )
    })?;
    write_frame(writer, &Frame::KeyGroupsTaken).map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::EdgeListener;
    use super::*;

    fn handoff(bytes: usize) -> Handoff {
        Handoff {
            epoch: Epoch(4),
            from: 1,
            range: KeyGroupRange::new(360, 540),
            bytes: (0..bytes).map(|i| (i % 251) as u8).collect(),
            inline: Some(serde_json::json!({"watermark": 12})),
        }
    }

    /// The way from instance 1 of operator `w` of query `q` (attempt `attempt`) to its
    /// instance 2, whose process listens at `listener`.
    fn mate(listener: &EdgeListener, attempt: u64, secret: Option<&[u8]>) -> RemoteMate {
        RemoteMate {
            peers: Peers::new([(2, listener.local_addr())]),
            worker: WorkerId(2),
            hello: Hello {
                version: PROTOCOL_VERSION,
                query: "q".into(),
                edge: HANDOFF_EDGE,
                from_instance: 1,
                to_instance: 2,
                attempt,
                from_epoch: 0,
                incarnation: 0,
            },
            secret: secret.map(Arc::from),
            operator: "w".into(),
            wait_for_inbox: Duration::ZERO,
        }
    }

    #[test]
    fn key_groups_handed_to_another_process_arrive_whole_in_the_instances_inbox() {
        let secret: &[u8] = b"the cluster's secret";
        let listener = EdgeListener::bind(
            "127.0.0.1:0".parse().expect("an address"),
            4,
            Some(Arc::from(secret)),
        )
        .expect("listens");
        let (tx, rx) = crossbeam_channel::unbounded();
        listener.handoffs().open("q", "w", 2, 3, tx);
        // Larger than one frame's part: it goes as several.
        let sent = handoff(CHUNK + CHUNK / 2);
        mate(&listener, 3, Some(secret))
            .hand(handoff(CHUNK + CHUNK / 2))
            .expect("taken");
        let got = rx.try_recv().expect("in the inbox once the giver returns");
        assert_eq!(
            (got.epoch, got.from, got.range),
            (sent.epoch, 1, sent.range)
        );
        assert!(
            got.bytes == sent.bytes,
            "the state's bytes arrive unchanged"
        );
        assert_eq!(got.inline, sent.inline);
    }

    #[test]
    fn a_handoff_to_an_instance_still_starting_waits_for_its_inbox() {
        let listener = EdgeListener::bind("127.0.0.1:0".parse().expect("an address"), 4, None)
            .expect("listens");
        let mate = RemoteMate {
            wait_for_inbox: CONNECT_FOR,
            ..mate(&listener, 3, None)
        };
        let giver = std::thread::spawn(move || mate.hand(handoff(10)));
        // The taking instance opens its inbox whenever its process gets to it.
        let (tx, rx) = crossbeam_channel::unbounded();
        listener.handoffs().open("q", "w", 2, 3, tx);
        giver.join().expect("the giver").expect("taken");
        assert_eq!(rx.try_recv().expect("in the inbox").bytes.len(), 10);
    }

    #[test]
    fn a_handoff_nobody_can_take_fails_the_giver_saying_why() {
        let secret: &[u8] = b"the cluster's secret";
        let listener = EdgeListener::bind(
            "127.0.0.1:0".parse().expect("an address"),
            4,
            Some(Arc::from(secret)),
        )
        .expect("listens");
        let refused = |m: RemoteMate| match m.hand(handoff(10)) {
            Err(NetError::Refused(why)) => why,
            other => panic!("refused, not {other:?}"),
        };
        // No such instance in that process.
        let why = refused(mate(&listener, 3, Some(secret)));
        assert!(why.contains("does not run in this process"), "{why}");
        // An older attempt's.
        let (tx, rx) = crossbeam_channel::unbounded();
        listener.handoffs().open("q", "w", 2, 3, tx);
        let why = refused(mate(&listener, 2, Some(secret)));
        assert!(why.contains("stale"), "{why}");
        // Without the cluster's secret.
        let why = refused(mate(&listener, 3, Some(b"another")));
        assert!(why.contains("secret"), "{why}");
        // An instance that has stopped.
        drop(rx);
        let why = refused(mate(&listener, 3, Some(secret)));
        assert!(why.contains("has stopped"), "{why}");
    }

    #[test]
    fn a_handoff_comes_back_as_it_went() {
        let h = Handoff {
            epoch: Epoch(7),
            from: 1,
            range: KeyGroupRange::new(180, 360),
            bytes: vec![1, 2, 3, 250],
            inline: Some(serde_json::json!({"watermark": 12})),
        };
        let bytes = encode("w", 3, &h).expect("encodes");
        let (header, back) = decode(bytes).expect("decodes");
        assert_eq!((header.operator.as_str(), header.to), ("w", 3));
        assert_eq!(back.epoch, h.epoch);
        assert_eq!(back.from, 1);
        assert_eq!(back.range, h.range);
        assert_eq!(back.bytes, h.bytes);
        assert_eq!(back.inline, h.inline);
        assert!(decode(vec![200, 0, 0, 0, b'{']).is_err());
        assert!(decode(vec![1]).is_err());
    }
}
