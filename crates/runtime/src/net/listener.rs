//! The consumer side's listening socket: accepts connections from producers on other workers,
//! checks each one's handshake against the channel ends this process expects, and hands an
//! accepted connection to an inbound bridge. A handshake it cannot accept (another protocol
//! version, an unknown query or edge, a stale attempt, bytes that are not a frame) is refused
//! with a `Refused` frame saying why, and the connection closed; nothing else is affected.

use std::collections::{BTreeSet, HashMap};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anduin_wire::{check_hello, Expected, Frame, Hello, Refusal, PROTOCOL_VERSION};
use crossbeam_channel::Sender;

use super::handoff::{self, Inboxes, HANDOFF_EDGE};
use super::resume::Seen;
use super::{inbound, Failures, NetError};
use crate::channel::Envelope;
use anduin_wire::{write_frame, FrameReader};

/// How long a new connection has to send its handshake.
const HELLO_WITHIN: Duration = Duration::from_secs(10);
/// How long a producer that names an edge this process does not expect (yet) is held before
/// it is refused: in a cluster, a producer may reach a consumer's executor before that
/// executor has wired its channels.
const UNKNOWN_EDGE_WAIT: Duration = Duration::from_secs(30);

/// Identifies one channel end: query, plan channel, producer and consumer instance.
type EdgeKey = (String, u32, u32, u32);

fn key(h: &Hello) -> EdgeKey {
    (h.query.clone(), h.edge, h.from_instance, h.to_instance)
}

/// A consumer end waiting for its producer.
pub(crate) struct Expecting {
    /// The consumer task's queue.
    pub tx: Sender<Envelope>,
    /// The channel's name, for errors.
    pub name: String,
    pub failures: Failures,
    /// The rows' type, checked on every batch that arrives (`None`: not checked).
    pub schema: Option<arrow::datatypes::SchemaRef>,
    /// The checkpoint the consumer's task was restored from (0: none).
    pub restored: u64,
    /// The edge outlives its producer's loss (a cluster's): a restored producer connects
    /// again.
    pub resumable: Option<Resumable>,
    /// Told when the producer is lost and when it is back (a resumable edge into a task that
    /// goes on without an input).
    pub notices: Option<Sender<crate::channel::Notice>>,
    /// The producer is a copy of a hot standby. On an edge without resumption, losing it
    /// (its task failed, its connection was closed or reset) is not the run's failure: the
    /// consumer's queue closes, as a lost copy's in-process channel does, and its stream
    /// selector takes the stream as lost and goes on with a live copy.
    pub from_copy: bool,
}

/// How a resumable consumer end reports a checkpoint it gives up.
pub(crate) struct Resumable {
    /// The consumer task's checkpoint id.
    pub task: usize,
    pub reports: Sender<crate::protocol::Event>,
}

/// A consumer end, across its producer's connections.
pub(crate) struct End {
    pub expecting: Expecting,
    /// What arrived so far; held by the connection that delivers.
    pub seen: Mutex<Seen>,
    /// The connection delivering now, cut when a restored producer connects.
    current: Mutex<Current>,
}

/// The producer connection an end takes its messages from.
#[derive(Default)]
struct Current {
    stream: Option<TcpStream>,
    /// The newest incarnation of the producer accepted: an older one is stale.
    incarnation: u64,
    /// How many connections were accepted: the one delivering is the last.
    connections: u64,
    /// The last connection was lost, and the consumer told so.
    lost: bool,
}

struct Ends {
    /// Attempt and end of every channel end not yet connected (and of every resumable one).
    waiting: HashMap<EdgeKey, (u64, Arc<End>)>,
    /// Queries this process has ever expected an edge of.
    queries: BTreeSet<String>,
}

/// A listening socket for the channels into this process.
pub struct EdgeListener {
    addr: SocketAddr,
    ends: Arc<Mutex<Ends>>,
    /// Signalled when an end is expected.
    wired: Arc<Condvar>,
    /// How long an unknown edge is waited for, in milliseconds.
    wait_ms: Arc<AtomicU64>,
    /// The cluster's secret, which every producer must prove it knows.
    secret: Option<Arc<[u8]>>,
    stop: Arc<AtomicBool>,
    window: u32,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// The inboxes of the rescalable instances that run here (see [`super::handoff`]).
    handoffs: Arc<Inboxes>,
}

impl std::fmt::Debug for EdgeListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeListener")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl EdgeListener {
    /// Listens on `addr` (port 0: one the system chooses), granting each edge `window`
    /// messages of credit, and accepting only producers that prove they know `secret`.
    pub fn bind(
        addr: SocketAddr,
        window: u32,
        secret: Option<Arc<[u8]>>,
    ) -> std::io::Result<Arc<Self>> {
        let socket = TcpListener::bind(addr)?;
        let addr = socket.local_addr()?;
        let ends = Arc::new(Mutex::new(Ends {
            waiting: HashMap::new(),
            queries: BTreeSet::new(),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let window = window.max(1);
        let wired = Arc::new(Condvar::new());
        let handoffs = Arc::new(Inboxes::default());
        let wait_ms = Arc::new(AtomicU64::new(
            u64::try_from(UNKNOWN_EDGE_WAIT.as_millis()).unwrap_or(u64::MAX),
        ));
        let thread = {
            let shared = Shared {
                ends: Arc::clone(&ends),
                wired: Arc::clone(&wired),
                wait_ms: Arc::clone(&wait_ms),
                window,
                secret: secret.clone(),
                handoffs: Arc::clone(&handoffs),
            };
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("anduin-net-accept".into())
                .spawn(move || accept_loop(&socket, &shared, &stop))?
        };
        tracing::debug!(%addr, "listening for channels");
        Ok(Arc::new(Self {
            addr,
            ends,
            wired,
            wait_ms,
            secret,
            stop,
            window,
            thread: Mutex::new(Some(thread)),
            handoffs,
        }))
    }

    /// The address producers connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The cluster's secret, if it has one.
    pub fn secret(&self) -> Option<Arc<[u8]>> {
        self.secret.clone()
    }

    /// The credit window granted to each edge.
    pub fn window(&self) -> u32 {
        self.window
    }

    /// The inboxes of the rescalable instances that run here.
    pub(crate) fn handoffs(&self) -> &Inboxes {
        &self.handoffs
    }

    /// Expects the producer of the edge `hello` names (at its attempt).
    pub(crate) fn expect(&self, hello: &Hello, end: Expecting) {
        let mut ends = self.ends.lock().unwrap_or_else(|p| p.into_inner());
        ends.queries.insert(hello.query.clone());
        let end = Arc::new(End {
            seen: Mutex::new(Seen::new(end.restored)),
            expecting: end,
            current: Mutex::default(),
        });
        ends.waiting.insert(key(hello), (hello.attempt, end));
        drop(ends);
        self.wired.notify_all();
    }

    /// How long a producer naming an edge not expected (yet) is held before it is refused
    /// (30 s unless set).
    pub fn wait_for_unknown_edges(&self, wait: Duration) {
        self.wait_ms.store(
            u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// Stops accepting (connections already accepted run to their end) and lets go of the
    /// channel ends it kept for producers that might connect again.
    pub fn shutdown(&self) {
        if self.stop.swap(true, Ordering::SeqCst) {
            return;
        }
        self.ends
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .waiting
            .clear();
        self.handoffs.clear();
        // Wake the accept loop up with a connection of our own.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        let handle = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

impl Drop for EdgeListener {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// What the accepting threads share with the listener.
#[derive(Clone)]
struct Shared {
    ends: Arc<Mutex<Ends>>,
    wired: Arc<Condvar>,
    wait_ms: Arc<AtomicU64>,
    window: u32,
    secret: Option<Arc<[u8]>>,
    handoffs: Arc<Inboxes>,
}

fn accept_loop(socket: &TcpListener, shared: &Shared, stop: &AtomicBool) {
    for conn in socket.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "accepting a channel connection failed");
                continue;
            }
        };
        let shared = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("anduin-net-in".into())
            .spawn(move || serve(stream, &shared));
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start a thread for a channel connection");
        }
    }
}

/// One accepted connection: its handshake, then its messages.
fn serve(stream: TcpStream, shared: &Shared) {
    let (window, secret) = (shared.window, shared.secret.as_deref());
    let peer = stream
        .peer_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(HELLO_WITHIN));
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = FrameReader::new(read_half);
    let mut writer = stream;
    let hello = match reader.read_frame() {
        Ok(Some(Frame::Hello(h))) => h,
        Ok(Some(other)) => {
            let reason = format!("expected a hello frame first, got {}", kind_name(&other));
            refuse(&mut writer, &peer, &reason);
            return;
        }
        Ok(None) => return,
        Err(e) => {
            refuse(&mut writer, &peer, &e.to_string());
            return;
        }
    };
    // The producer proves it knows the cluster's secret before anything about the edge is
    // said to it.
    let mut nonce = [0u8; anduin_wire::auth::NONCE_LEN];
    if getrandom::fill(&mut nonce).is_err() {
        refuse(&mut writer, &peer, "cannot draw a random challenge");
        return;
    }
    let challenged = write_frame(
        &mut writer,
        &Frame::Message {
            body: nonce.to_vec(),
        },
    );
    let proof = match (challenged, reader.read_frame()) {
        (Ok(()), Ok(Some(Frame::Message { body }))) => body,
        _ => {
            refuse(&mut writer, &peer, "no answer to the challenge");
            return;
        }
    };
    if !anduin_wire::auth::verify(secret, &nonce, &proof) {
        refuse(
            &mut writer,
            &peer,
            "the peer does not know the cluster's secret: give every process the same --cluster-secret-file",
        );
        return;
    }
    if hello.edge == HANDOFF_EDGE {
        if let Err(reason) = handoff::take(&mut reader, &mut writer, &hello, &shared.handoffs) {
            refuse(&mut writer, &peer, &reason);
        }
        return;
    }
    let wait = Duration::from_millis(shared.wait_ms.load(Ordering::Relaxed));
    let end = match accept(&hello, &shared.ends, &shared.wired, wait) {
        Ok(end) => end,
        Err(refusal) => {
            refuse(&mut writer, &peer, &refusal.to_string());
            return;
        }
    };
    // A restored producer replaces the connection of the one it restores: that one is cut
    // (its process is gone or given up), and its bridge lets go of what has arrived. A
    // producer older than one accepted before is stale (its instance was restored elsewhere
    // while it was paused or cut off) and is turned away.
    if end.expecting.resumable.is_some() {
        let mut current = end.current.lock().unwrap_or_else(|p| p.into_inner());
        if hello.incarnation < current.incarnation {
            let stale = Refusal::StaleProducer {
                query: hello.query.clone(),
                edge: hello.edge,
                got: hello.incarnation,
                current: current.incarnation,
            };
            drop(current);
            refuse(&mut writer, &peer, &stale.to_string());
            return;
        }
        current.incarnation = hello.incarnation;
        if let Some(old) = current.stream.take() {
            let _ = old.shutdown(std::net::Shutdown::Both);
        }
        current.stream = writer.try_clone().ok();
        current.connections += 1;
        if std::mem::take(&mut current.lost) {
            if let Some(n) = &end.expecting.notices {
                let _ = n.send(crate::channel::Notice::ProducerBack);
            }
        }
    }
    let connection = end
        .current
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .connections;
    let mut seen = end.seen.lock().unwrap_or_else(|p| p.into_inner());
    let from = match seen.connect(hello.from_epoch) {
        Ok(from) => from,
        Err(e) => {
            drop(seen);
            refuse(&mut writer, &peer, &e.to_string());
            end.expecting
                .failures
                .record(&end.expecting.name, &NetError::Resume(e));
            give_up(&shared.ends, &hello, &end);
            return;
        }
    };
    let reply = Hello {
        version: PROTOCOL_VERSION,
        from_epoch: from,
        ..hello.clone()
    };
    let e = &end.expecting;
    if let Err(err) = write_frame(&mut writer, &Frame::Hello(reply)) {
        e.failures.record(&e.name, &NetError::Frame(err));
        return;
    }
    let _ = writer.set_read_timeout(None);
    tracing::debug!(edge = %e.name, %peer, from, "channel connected");
    // Closed when the bridge ends, whoever else holds the stream.
    let _close = writer.try_clone().ok().map(Closer);
    if let Err(err) = inbound::run(reader, writer, e, &mut seen, window) {
        if e.resumable.is_some() && err.is_lost_peer() {
            tracing::warn!(edge = %e.name, error = %err, "lost the producer of an edge: waiting for it to be restored");
            // Unless a restored producer has connected meanwhile, the task hears of it.
            let mut current = end.current.lock().unwrap_or_else(|p| p.into_inner());
            if current.connections == connection && !current.lost {
                if let Some(n) = &e.notices {
                    current.lost = true;
                    let _ = n.send(crate::channel::Notice::ProducerLost);
                }
            }
        } else if e.from_copy && e.resumable.is_none() && err.is_lost_peer() {
            // The copy's own failure says why; `end`, let go of on return, closes the queue.
            tracing::warn!(edge = %e.name, error = %err, "lost the copy of a hot standby producing this edge: its stream ends as lost");
        } else {
            e.failures.record(&e.name, &err);
            if e.resumable.is_some() {
                give_up(&shared.ends, &hello, &end);
            }
        }
    }
}

/// A resumable edge that cannot go on (a restored producer's replay is not what arrived
/// before, or starts where the consumer cannot take it): no producer may connect to it again,
/// and once the connection's bridge lets go of it the consumer task's queue closes, so that
/// the task fails (its part is restored, or the query rolls back) rather than waits for ever.
fn give_up(ends: &Mutex<Ends>, hello: &Hello, end: &Arc<End>) {
    let mut ends = ends.lock().unwrap_or_else(|p| p.into_inner());
    let k = key(hello);
    if ends
        .waiting
        .get(&k)
        .is_some_and(|(_, kept)| Arc::ptr_eq(kept, end))
    {
        ends.waiting.remove(&k);
    }
}

/// The waiting end `hello` names, taken (waiting up to `wait` for it to be expected); or why
/// the edge is refused.
fn accept(
    hello: &Hello,
    ends: &Mutex<Ends>,
    wired: &Condvar,
    wait: Duration,
) -> Result<Arc<End>, Refusal> {
    let deadline = std::time::Instant::now() + wait;
    let mut ends = ends.lock().unwrap_or_else(|p| p.into_inner());
    let k = key(hello);
    while hello.version == PROTOCOL_VERSION && !ends.waiting.contains_key(&k) {
        let now = std::time::Instant::now();
        if now >= deadline {
            break;
        }
        ends = wired
            .wait_timeout(ends, deadline - now)
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0);
    }
    let queries: Vec<String> = ends.queries.iter().cloned().collect();
    let Some((attempt, _)) = ends.waiting.get(&k) else {
        // Version first, then which query or edge is unknown.
        check_hello(
            hello,
            &Expected {
                queries: &queries,
                edges: &[],
                attempt: hello.attempt,
            },
        )?;
        return Err(Refusal::UnknownEdge {
            query: hello.query.clone(),
            edge: hello.edge,
        });
    };
    check_hello(
        hello,
        &Expected {
            queries: &queries,
            edges: &[hello.edge],
            attempt: *attempt,
        },
    )?;
    let (_, end) = ends.waiting.get(&k).expect("looked up just above");
    let end = Arc::clone(end);
    if end.expecting.resumable.is_none() {
        ends.waiting.remove(&k);
    }
    Ok(end)
}

/// Shuts its stream down when dropped.
struct Closer(TcpStream);

impl Drop for Closer {
    fn drop(&mut self) {
        let _ = self.0.shutdown(std::net::Shutdown::Both);
    }
}

fn refuse(writer: &mut TcpStream, peer: &str, reason: &str) {
    tracing::warn!(%peer, reason, "refused a channel connection");
    let _ = write_frame(
        writer,
        &Frame::Refused {
            reason: reason.to_string(),
        },
    );
}

pub(super) fn kind_name(f: &Frame) -> &'static str {
    match f {
        Frame::Hello(_) => "hello",
        Frame::Data { .. } => "data",
        Frame::Watermark { .. } => "watermark",
        Frame::Idle { .. } => "idle",
        Frame::Barrier { .. } => "barrier",
        Frame::End { .. } => "end",
        Frame::Exhausted { .. } => "exhausted",
        Frame::GaveUp { .. } => "gave up",
        Frame::Credit { .. } => "credit",
        Frame::Refused { .. } => "refused",
        Frame::Message { .. } => "message",
        Frame::KeyGroups { .. } => "key groups",
        Frame::KeyGroupsTaken => "key groups taken",
    }
}
