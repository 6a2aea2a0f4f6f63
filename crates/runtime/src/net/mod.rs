//! Channels between processes: the two ends of a channel whose producer and consumer run on
//! different workers, joined by a TCP connection that carries the channel's messages as the
//! wire crate's frames (batches as Arrow IPC), with credit-based flow control.
//!
//! Each end is a bridge thread between the in-process queue a task already uses and the
//! socket, so a task does not know whether its channel crosses a process:
//! - the producer's task sends on a bounded queue as always; [`outbound`]'s bridge takes the
//!   messages, sends each as a frame while it has credit, and waits for credit otherwise;
//! - the consumer's [`listener`] accepts the connection, checks its handshake (protocol
//!   version, query, edge, attempt) and hands it to [`inbound`]'s bridge, which puts each
//!   message on the consumer task's bounded queue and grants credit as it does.
//!
//! Memory per edge is bounded (the producer's queue, the credit window, the consumer's queue),
//! and a full consumer queue stops the credit, which stops the producer's bridge, which fills
//! the producer's queue: backpressure reaches the sources across processes as within one.
//!
//! In a cluster the edges are resumable ([`crate::config::Resumption`], [`resume`]): an end
//! that loses its peer waits for it to be restored (elsewhere: [`Peers`] says where), the
//! producer replays what the restored consumer's checkpoint does not cover (upstream backup),
//! and the consumer drops what a restored producer replays of what it already had.
//!
//! At a live rescale, the instances of the rescaled operator that run in different processes
//! hand key groups to one another over connections of their own to the same listeners
//! ([`handoff`]).

mod codec;
pub(crate) mod handoff;
mod inbound;
pub mod listener;
mod outbound;
mod peers;
mod resume;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anduin_wire::{Hello, PROTOCOL_VERSION};
use crossbeam_channel::Receiver;

use crate::channel::Envelope;
use crate::error::RuntimeError;
use crate::topology::{Channel, WorkerId};

pub(crate) use handoff::RemoteMate;
pub use listener::EdgeListener;
pub use peers::Peers;
pub use resume::BackupBudget;

/// What a consumer's bridge says when it closes an edge because its task has stopped.
const CONSUMER_STOPPED: &str = "the consuming task has stopped";

/// Why a network edge failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NetError {
    #[error(transparent)]
    Frame(#[from] anduin_wire::FrameError),
    #[error(transparent)]
    Codec(#[from] codec::CodecError),
    #[error("cannot connect to {to}: {cause}")]
    Connect {
        to: SocketAddr,
        cause: std::io::Error,
    },
    #[error("the consumer refused the edge: {0}")]
    Refused(String),
    #[error("the peer sent a {0} frame where none was expected")]
    Unexpected(&'static str),
    #[error("message {got} arrived after message {last}: messages were lost or reordered")]
    OutOfOrder { got: u64, last: u64 },
    #[error("message {seq} holds rows of another type than the channel's: {why} (is every process of the cluster running the same query and anduin version?)")]
    Schema { seq: u64, why: String },
    /// The producer closed the connection before the end of the channel (its task failed or
    /// its process went away; its own error says why).
    #[error("the producer closed the connection before the end of the channel")]
    ProducerClosed,
    /// The producer's task stopped without ending the channel (it failed).
    #[error("the producing task stopped without ending the channel")]
    ProducerGone,
    /// The consumer's task has stopped (it failed, and says why itself).
    #[error("the consuming task has stopped")]
    ConsumerGone,
    /// The consumer's process took the connection but closed it before answering the
    /// handshake: it went away (its executor ended as the connection came). A lost peer, as
    /// one that refused the connection: the edge waits for its restore.
    #[error("the consumer closed the connection before answering (its process went away)")]
    ClosedUnanswered,
    #[error("no address for the consumer's worker")]
    NoAddress,
    #[error("the peer did not come back within {waited:?} (last: {last})")]
    PeerNotBack { waited: Duration, last: String },
    #[error("cannot replay to the restored consumer: {0}")]
    Replay(resume::ReplayError),
    #[error("cannot resume the edge: {0}")]
    Resume(#[from] resume::ResumeError),
    /// Key groups of a live rescale that cannot be encoded.
    #[error("cannot encode the key groups: {0}")]
    KeyGroups(String),
}

impl NetError {
    /// Whether this is only the consequence of a failure elsewhere (which says why itself).
    fn is_secondary(&self) -> bool {
        matches!(
            self,
            NetError::ProducerClosed | NetError::ProducerGone | NetError::ConsumerGone
        )
    }

    /// Whether the peer may only be gone for now (its process died, the link was cut): a
    /// resumable edge waits for it to come back.
    fn is_lost_peer(&self) -> bool {
        matches!(
            self,
            NetError::Frame(anduin_wire::FrameError::Io(_))
                | NetError::Connect { .. }
                | NetError::ConsumerGone
                | NetError::ProducerClosed
                | NetError::ClosedUnanswered
        )
    }
}

/// The first failure of a network edge that was not a consequence of another failure.
#[derive(Clone, Default)]
pub(crate) struct Failures {
    first: Arc<Mutex<Option<RuntimeError>>>,
    abort: Arc<AtomicBool>,
    events: crate::Events,
}

impl Failures {
    /// Failures that set `abort` and are published to `events`.
    pub(crate) fn new(abort: Arc<AtomicBool>, events: crate::Events) -> Self {
        Self {
            first: Arc::default(),
            abort,
            events,
        }
    }

    /// Records `error` of edge `edge` (a primary one stops the sources, as a task's does, and
    /// is published: a cluster's executor ends at it, as at a task's own failure).
    fn record(&self, edge: &str, error: &NetError) {
        tracing::warn!(edge, %error, "network edge failed");
        if error.is_secondary() {
            return;
        }
        self.abort.store(true, Ordering::Relaxed);
        self.events.publish(crate::events::EngineEvent::EdgeFailed {
            edge: edge.to_string(),
            error: error.to_string(),
        });
        let mut first = self.first.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert_with(|| RuntimeError::Network {
            edge: edge.to_string(),
            message: error.to_string(),
        });
    }

    /// The first primary failure, if any.
    pub(crate) fn take(&self) -> Option<RuntimeError> {
        self.first.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// How this process reaches the others' listeners and takes their connections: what an end
/// of a channel or of a handoff needs, shared by the run's wiring and by the instances added
/// while it runs (`crate::grow`).
#[derive(Clone)]
pub(crate) struct NetReach {
    pub query: String,
    pub listener: Arc<EdgeListener>,
    pub failures: Failures,
    /// The query's attempt, in every handshake.
    pub attempt: u64,
    /// Resumable edges (a cluster's).
    pub resumption: Option<crate::config::Resumption>,
    peers: Arc<Peers>,
    /// The producer ends' bridges started, until the run joins them.
    running: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

/// Where each instance runs and how this process reaches the others: what a run needs to cut
/// its channels across processes.
pub(crate) struct NetWiring {
    reach: NetReach,
    /// The worker this process is, when it runs only part of the instances; `None`: it runs
    /// every worker's.
    pub here: Option<WorkerId>,
    /// The checkpoint this process's tasks were restored from (0: none): where their streams
    /// start.
    pub restored: u64,
    /// Producer ends built and waiting to connect.
    pending: Vec<(outbound::Outbound, String)>,
}

impl std::ops::Deref for NetWiring {
    type Target = NetReach;

    fn deref(&self) -> &NetReach {
        &self.reach
    }
}

impl NetWiring {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        query: String,
        listener: Arc<EdgeListener>,
        addresses: BTreeMap<WorkerId, SocketAddr>,
        failures: Failures,
        here: Option<WorkerId>,
        attempt: u64,
        restored: u64,
        resumption: Option<crate::config::Resumption>,
    ) -> Self {
        let peers = match &resumption {
            Some(r) => Arc::clone(&r.peers),
            None => Peers::new(addresses.iter().map(|(w, a)| (w.0, *a))),
        };
        Self {
            reach: NetReach {
                query,
                listener,
                failures,
                attempt,
                resumption,
                peers,
                running: Arc::default(),
            },
            here,
            restored,
            pending: Vec::new(),
        }
    }

    /// How this process reaches the others, for ends made while the run runs.
    pub(crate) fn reach(&self) -> NetReach {
        self.reach.clone()
    }

    /// Whether this process runs the instances of `worker`.
    pub(crate) fn runs(&self, worker: WorkerId) -> bool {
        self.here.is_none_or(|h| h == worker)
    }

    /// The producer's end of channel `c`, whose consumer runs on worker `to`: the bridge
    /// takes what the producer puts on `rx` once [`NetWiring::connect`] starts it.
    /// `to_copy`: the consumer is a copy of a hot standby (once it is lost, the producer is
    /// not held up: see [`outbound::Outbound::to_copy`]).
    pub(crate) fn producer_end(
        &mut self,
        c: &Channel,
        to: WorkerId,
        rx: Receiver<Envelope>,
        name: String,
        to_copy: bool,
    ) -> Result<(), RuntimeError> {
        let out = self
            .reach
            .outbound(c, (to, to_copy), rx, self.restored, &name)?;
        self.pending.push((out, name));
        Ok(())
    }

    /// The consumer's end of channel `c`, whose consumer is the task with checkpoint id
    /// `task`: the listener hands what arrives to `tx`.
    pub(crate) fn consumer_end(
        &self,
        c: &Channel,
        (task, tx): (usize, crossbeam_channel::Sender<Envelope>),
        name: String,
        schema: Option<arrow::datatypes::SchemaRef>,
        standby: StandbyEnd,
    ) {
        self.reach
            .consumer_end(c, (task, tx), (name, schema), standby, self.restored);
    }

    /// Starts the producer ends' bridges: each connects to its consumer's worker.
    pub(crate) fn connect(&mut self) -> Result<(), RuntimeError> {
        for (out, name) in std::mem::take(&mut self.pending) {
            self.reach.start(out, name)?;
        }
        Ok(())
    }

    /// Waits for every producer end to have sent all it had (or failed), those started while
    /// the run ran included.
    pub(crate) fn join(&mut self) {
        let running =
            std::mem::take(&mut *self.reach.running.lock().unwrap_or_else(|p| p.into_inner()));
        for h in running {
            let _ = h.join();
        }
    }
}

impl NetReach {
    /// The handshake of channel `c`, whose stream starts after the barrier of `from_epoch`.
    fn hello(&self, c: &Channel, from_epoch: u64) -> Hello {
        Hello {
            version: PROTOCOL_VERSION,
            query: self.query.clone(),
            edge: u32::try_from(c.plan_channel).unwrap_or(u32::MAX),
            from_instance: handshake_name(c.from, c.ids.0),
            to_instance: handshake_name(c.to, c.ids.1),
            attempt: self.attempt,
            from_epoch,
            incarnation: self.resumption.as_ref().map_or(0, |r| r.incarnation),
        }
    }

    /// The producer's end of channel `c` to worker `to` (`to_copy`: see
    /// [`NetWiring::producer_end`]), whose stream starts after the barrier of `from_epoch`,
    /// not started.
    fn outbound(
        &self,
        c: &Channel,
        (to, to_copy): (WorkerId, bool),
        rx: Receiver<Envelope>,
        from_epoch: u64,
        name: &str,
    ) -> Result<outbound::Outbound, RuntimeError> {
        if self.peers.reach(to).is_none() {
            return Err(RuntimeError::Network {
                edge: name.to_string(),
                message: format!("no address for worker {}", to.0),
            });
        }
        Ok(outbound::Outbound {
            rx,
            peers: Arc::clone(&self.peers),
            to,
            hello: self.hello(c, from_epoch),
            secret: self.listener.secret(),
            resumption: self.resumption.clone(),
            to_copy,
        })
    }

    /// Starts a producer end's bridge.
    fn start(&self, out: outbound::Outbound, name: String) -> Result<(), RuntimeError> {
        let failures = self.failures.clone();
        let thread = format!("anduin-net-out-{}", out.hello.edge);
        let handle = std::thread::Builder::new()
            .name(thread)
            .spawn(move || {
                if let Err(e) = out.run() {
                    failures.record(&name, &e);
                }
            })
            .map_err(|cause| RuntimeError::SpawnHelper {
                thread: "anduin-net-out",
                cause,
            })?;
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(handle);
        Ok(())
    }

    /// The producer's end of channel `c`, added while the run runs, to worker `to`: its
    /// bridge starts at once and sends what the producer puts on `rx`, a stream that starts
    /// after the barrier of `from_epoch`.
    pub(crate) fn producer_end_now(
        &self,
        c: &Channel,
        to: WorkerId,
        rx: Receiver<Envelope>,
        (name, from_epoch): (String, u64),
    ) -> Result<(), RuntimeError> {
        let out = self.outbound(c, (to, false), rx, from_epoch, &name)?;
        self.start(out, name)
    }

    /// The consumer's end of channel `c`, whose consumer is the task with checkpoint id
    /// `task`, and whose stream starts after the barrier of `from_epoch`: the listener hands
    /// what arrives to `tx`.
    pub(crate) fn consumer_end(
        &self,
        c: &Channel,
        (task, tx): (usize, crossbeam_channel::Sender<Envelope>),
        (name, schema): (String, Option<arrow::datatypes::SchemaRef>),
        standby: StandbyEnd,
        from_epoch: u64,
    ) {
        let hello = self.hello(c, from_epoch);
        self.listener.expect(
            &hello,
            listener::Expecting {
                tx,
                name,
                failures: self.failures.clone(),
                schema,
                restored: from_epoch,
                resumable: self.resumption.as_ref().map(|r| listener::Resumable {
                    task,
                    reports: r.reports.clone(),
                }),
                notices: standby.notices.filter(|_| self.resumption.is_some()),
                from_copy: standby.from_copy,
            },
        );
    }

    /// The way from instance `from` of rescalable `operator` to its instance `to`, which runs
    /// on worker `worker`, in another process: see [`handoff`].
    pub(crate) fn handoff_to(
        &self,
        operator: &str,
        from: usize,
        to: usize,
        worker: WorkerId,
    ) -> RemoteMate {
        let number = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
        RemoteMate {
            peers: Arc::clone(&self.peers),
            worker,
            hello: Hello {
                version: PROTOCOL_VERSION,
                query: self.query.clone(),
                edge: handoff::HANDOFF_EDGE,
                from_instance: number(from),
                to_instance: number(to),
                attempt: self.attempt,
                from_epoch: 0,
                incarnation: self.resumption.as_ref().map_or(0, |r| r.incarnation),
            },
            secret: self.listener.secret(),
            operator: operator.to_string(),
            wait_for_inbox: handoff::CONNECT_FOR,
        }
    }

    /// Instance `instance` of rescalable `operator`, which runs here, takes the key groups
    /// that instances in other processes hand it into `tx` (its inbox).
    /// Instances added to this query while it runs take handoffs that come before they are
    /// built into the inboxes `opener` opens.
    pub(crate) fn open_inboxes_as_they_come(&self, opener: handoff::Opener) {
        self.listener
            .handoffs()
            .open_as_they_come(&self.query, self.attempt, opener);
    }

    /// Instance `instance` of rescalable `operator` retired: its inbox here goes (see
    /// [`handoff::Inboxes::close`]).
    pub(crate) fn close_handoffs(&self, operator: &str, instance: usize) {
        self.listener
            .handoffs()
            .close(&self.query, operator, instance);
    }

    pub(crate) fn expect_handoffs(
        &self,
        operator: &str,
        instance: usize,
        tx: crossbeam_channel::Sender<crate::rescale::Handoff>,
    ) {
        self.listener
            .handoffs()
            .open(&self.query, operator, instance, self.attempt, tx);
    }
}

/// What a consumer end of a hot standby's channel is told of its producer.
pub(crate) struct StandbyEnd {
    /// Where to say that the producer was lost and is back, for a consumer that goes on
    /// without the input (a stream selector) on a resumable edge.
    pub notices: Option<crossbeam_channel::Sender<crate::channel::Notice>>,
    /// The producer is a copy of a hot standby (see [`listener::Expecting::from_copy`]).
    pub from_copy: bool,
}

/// What a channel's handshake calls instance `at`, number `id` in the run: a planned instance
/// (or one of a task split while running) by its index among its task's, which every process
/// and every restored part gives it alike; an instance added while running by its number in
/// the run, never taken again, since its index is taken again by an instance added after it
/// retired (so that a producer can never reach the retired one's end in its stead).
pub(crate) fn handshake_name(at: crate::topology::InstanceRef, id: usize) -> u32 {
    let name = if id >= crate::grow::GROWN_IDS {
        id
    } else {
        at.instance
    };
    u32::try_from(name).unwrap_or(u32::MAX)
}

/// A channel's name in errors and logs.
pub(crate) fn edge_name(c: &Channel, from: &str, to: &str) -> String {
    format!("channel {} ({from} -> {to}, port {})", c.id.0, c.to_input)
}

#[cfg(test)]
mod copy_tests;
#[cfg(test)]
mod resume_tests;
#[cfg(test)]
mod tests;
