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
//! What is not here yet: replaying a producer's unacknowledged output to a restored consumer
//! (upstream backup); authentication of peers (listeners bind to the address they are given:
//! loopback unless the cluster has a secret).

mod codec;
mod inbound;
pub mod listener;
mod outbound;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use anduin_wire::{Hello, PROTOCOL_VERSION};
use crossbeam_channel::Receiver;

use crate::channel::Envelope;
use crate::error::RuntimeError;
use crate::topology::{Channel, WorkerId};

pub use listener::EdgeListener;

/// What a consumer's bridge says when it closes an edge because its task has stopped.
const CONSUMER_STOPPED: &str = "the consuming task has stopped";

/// Why a network edge failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NetError {
    #[error("{0}")]
    Frame(#[from] anduin_wire::FrameError),
    #[error("{0}")]
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
}

impl NetError {
    /// Whether this is only the consequence of a failure elsewhere (which says why itself).
    fn is_secondary(&self) -> bool {
        matches!(
            self,
            NetError::ProducerClosed | NetError::ProducerGone | NetError::ConsumerGone
        )
    }
}

/// The first failure of a network edge that was not a consequence of another failure.
#[derive(Clone, Default)]
pub(crate) struct Failures {
    first: Arc<Mutex<Option<RuntimeError>>>,
    abort: Arc<AtomicBool>,
}

impl Failures {
    pub(crate) fn new(abort: Arc<AtomicBool>) -> Self {
        Self {
            first: Arc::default(),
            abort,
        }
    }

    /// Records `error` of edge `edge` (a primary one stops the sources, as a task's does).
    fn record(&self, edge: &str, error: &NetError) {
        tracing::warn!(edge, %error, "network edge failed");
        if error.is_secondary() {
            return;
        }
        self.abort.store(true, Ordering::Relaxed);
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

/// Where each instance runs and how this process reaches the others: what a run needs to cut
/// its channels across processes.
pub(crate) struct NetWiring {
    pub query: String,
    pub listener: Arc<EdgeListener>,
    /// The data address of every worker.
    pub addresses: BTreeMap<WorkerId, SocketAddr>,
    pub failures: Failures,
    /// The worker this process is, when it runs only part of the instances; `None`: it runs
    /// every worker's.
    pub here: Option<WorkerId>,
    /// The query's attempt, in every handshake.
    pub attempt: u64,
    /// Producer ends built and waiting to connect.
    pending: Vec<(Receiver<Envelope>, Hello, SocketAddr, String)>,
    running: Vec<JoinHandle<()>>,
}

impl NetWiring {
    pub(crate) fn new(
        query: String,
        listener: Arc<EdgeListener>,
        addresses: BTreeMap<WorkerId, SocketAddr>,
        failures: Failures,
        here: Option<WorkerId>,
        attempt: u64,
    ) -> Self {
        Self {
            query,
            listener,
            addresses,
            failures,
            here,
            attempt,
            pending: Vec::new(),
            running: Vec::new(),
        }
    }

    fn hello(&self, c: &Channel, attempt: u64) -> Hello {
        Hello {
            version: PROTOCOL_VERSION,
            query: self.query.clone(),
            edge: u32::try_from(c.plan_channel).unwrap_or(u32::MAX),
            from_instance: u32::try_from(c.from.instance).unwrap_or(u32::MAX),
            to_instance: u32::try_from(c.to.instance).unwrap_or(u32::MAX),
            attempt,
        }
    }

    /// Whether this process runs the instances of `worker`.
    pub(crate) fn runs(&self, worker: WorkerId) -> bool {
        self.here.is_none_or(|h| h == worker)
    }

    /// The producer's end of channel `c`, whose consumer runs on worker `to`: the bridge
    /// takes what the producer puts on `rx` once [`NetWiring::connect`] starts it.
    pub(crate) fn producer_end(
        &mut self,
        c: &Channel,
        to: WorkerId,
        rx: Receiver<Envelope>,
        name: String,
    ) -> Result<(), RuntimeError> {
        let addr = *self
            .addresses
            .get(&to)
            .ok_or_else(|| RuntimeError::Network {
                edge: name.clone(),
                message: format!("no address for worker {}", to.0),
            })?;
        let hello = self.hello(c, self.attempt);
        self.pending.push((rx, hello, addr, name));
        Ok(())
    }

    /// The consumer's end of channel `c`: the listener hands what arrives to `tx`.
    pub(crate) fn consumer_end(
        &self,
        c: &Channel,
        tx: crossbeam_channel::Sender<Envelope>,
        name: String,
        schema: Option<arrow::datatypes::SchemaRef>,
    ) {
        let hello = self.hello(c, self.attempt);
        self.listener.expect(
            &hello,
            listener::Expecting {
                tx,
                name,
                failures: self.failures.clone(),
                schema,
            },
        );
    }

    /// Starts the producer ends' bridges: each connects to its consumer's worker.
    pub(crate) fn connect(&mut self) -> Result<(), RuntimeError> {
        for (rx, hello, addr, name) in self.pending.drain(..) {
            let failures = self.failures.clone();
            let secret = self.listener.secret();
            let thread = format!("anduin-net-out-{}", hello.edge);
            let handle = std::thread::Builder::new()
                .name(thread)
                .spawn(move || {
                    if let Err(e) = outbound::run(rx, addr, &hello, secret.as_deref()) {
                        failures.record(&name, &e);
                    }
                })
                .map_err(|cause| RuntimeError::SpawnHelper {
                    thread: "anduin-net-out",
                    cause,
                })?;
            self.running.push(handle);
        }
        Ok(())
    }

    /// Waits for every producer end to have sent all it had (or failed).
    pub(crate) fn join(&mut self) {
        for h in self.running.drain(..) {
            let _ = h.join();
        }
    }
}

/// A channel's name in errors and logs.
pub(crate) fn edge_name(c: &Channel, from: &str, to: &str) -> String {
    format!("channel {} ({from} -> {to}, port {})", c.id.0, c.to_input)
}

#[cfg(test)]
mod tests;
