//! A connection to a NATS server with JetStream, for one source or sink instance: the async
//! client on a runtime of its own (one worker thread, which also keeps the connection alive
//! between the instance's calls), and the calls the connector makes, each blocking.
//!
//! anduin's operators run on plain threads and block at most until a deadline; the client
//! is async (`async-nats`, on tokio). The instance calls [`Connection::block_on`] with a
//! bounded future; pings, reconnects and publish acknowledgements run on the worker thread
//! meanwhile.

use std::future::Future;
use std::time::Duration;

use async_nats::jetstream;
use async_nats::jetstream::context::{GetStreamErrorKind, RequestError, RequestErrorKind};
use async_nats::jetstream::stream::Stream;
use async_nats::{ConnectErrorKind, ConnectOptions};

use super::error::NatsError;

/// A client of one server (or cluster), connected.
pub(crate) struct Connection {
    /// `Some` until dropped: the drop shuts it down without waiting (it may be dropped on a
    /// thread inside another runtime).
    runtime: Option<tokio::runtime::Runtime>,
    /// The JetStream API of the client.
    pub js: jetstream::Context,
    /// The `server` param, for messages.
    pub server: String,
}

impl Connection {
    /// Connects to `server` (`nats://host:port`, comma-separated for a cluster) as client
    /// `name`, failing within `timeout` when no server answers.
    pub(crate) fn open(server: &str, timeout: Duration, name: &str) -> Result<Self, NatsError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("anduin-nats")
            .enable_all()
            .build()
            .map_err(|e| NatsError::Runtime(e.to_string()))?;
        let addrs: Vec<&str> = server
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let unreachable = |cause: String| NatsError::Unreachable {
            server: server.to_string(),
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            cause,
        };
        let connect = ConnectOptions::new()
            .name(name)
            .connection_timeout(timeout)
            .connect(addrs);
        let client = match runtime.block_on(async { tokio::time::timeout(timeout, connect).await })
        {
            Err(_) => return Err(unreachable("timed out".into())),
            Ok(Err(e)) => match e.kind() {
                ConnectErrorKind::Io if refused(&e) => {
                    return Err(NatsError::Refused {
                        server: server.to_string(),
                        cause: e.to_string(),
                    })
                }
                ConnectErrorKind::TimedOut
                | ConnectErrorKind::Io
                | ConnectErrorKind::Dns
                | ConnectErrorKind::MaxReconnects => return Err(unreachable(e.to_string())),
                _ => {
                    return Err(NatsError::client(
                        format!("connecting to the NATS server at {server}"),
                        e,
                    ))
                }
            },
            Ok(Ok(c)) => c,
        };
        // The context spawns its acknowledgement task on the runtime.
        let mut js = {
            let _entered = runtime.enter();
            jetstream::new(client)
        };
        js.set_timeout(timeout);
        Ok(Self {
            runtime: Some(runtime),
            js,
            server: server.to_string(),
        })
    }

    /// Runs `f` to its end on the client's runtime.
    pub(crate) fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.runtime
            .as_ref()
            .expect("only the drop takes the runtime")
            .block_on(f)
    }

    /// How many times the client has connected: 1 after [`Connection::open`], one more for
    /// each reconnection after a lost server (the client reconnects on its own).
    pub(crate) fn connects(&self) -> u64 {
        self.js
            .client()
            .statistics()
            .connects
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Stream `name`, with its info as of now; a missing stream, or a server without
    /// JetStream, is the user's to fix.
    pub(crate) fn stream(&self, name: &str) -> Result<Stream, NatsError> {
        let got = self.block_on(self.js.get_stream(name));
        got.map_err(|e| {
            let no_stream = || NatsError::NoStream {
                stream: name.to_string(),
                server: self.server.clone(),
            };
            match e.kind() {
                GetStreamErrorKind::JetStream(j)
                    if j.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND =>
                {
                    no_stream()
                }
                GetStreamErrorKind::JetStream(j)
                    if j.error_code() == jetstream::ErrorCode::JETSTREAM_NOT_ENABLED
                        || j.error_code()
                            == jetstream::ErrorCode::JETSTREAM_NOT_ENABLED_FOR_ACCOUNT =>
                {
                    NatsError::NoJetStream {
                        server: self.server.clone(),
                        cause: j.to_string(),
                    }
                }
                GetStreamErrorKind::InvalidStreamName | GetStreamErrorKind::EmptyName => {
                    no_stream()
                }
                GetStreamErrorKind::Request if no_responders(&e) => NatsError::NoJetStream {
                    server: self.server.clone(),
                    cause: e.to_string(),
                },
                _ => NatsError::client(format!("reading the info of stream `{name}`"), e),
            }
        })
    }
}

/// Whether a failed connection was refused (nothing listens at the address), as the OS
/// said, rather than left unanswered.
fn refused(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = e.source();
    while let Some(c) = cause {
        if c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            return true;
        }
        cause = c.source();
    }
    false
}

/// Whether a failed JetStream request found nobody answering (a server without JetStream).
fn no_responders(e: &(dyn std::error::Error + 'static)) -> bool {
    e.source()
        .and_then(|s| s.downcast_ref::<RequestError>())
        .is_some_and(|r| r.kind() == RequestErrorKind::NoResponders)
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}
