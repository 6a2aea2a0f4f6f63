//! The server: a listener bound at start, a tokio runtime on a thread of its own, the
//! router of [`crate::routes`], and a clean shutdown when it is dropped.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::{watch, Semaphore};

use crate::problem::Problem;
use crate::{ApiError, Registry};

/// The request body limit unless configured: 64 KiB (a param value is a line of text).
pub const DEFAULT_BODY_LIMIT: usize = 64 * 1024;

/// How long a client has to send a request's headers (also: how long a connection may sit
/// idle between requests) unless configured.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client has to send a request's body, once its headers are in, unless
/// configured. The time a request takes to be answered (a change waiting for its barrier)
/// does not count.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// How many connections are served at once unless configured; more are answered 503 and
/// closed at once, so that clients can never take the descriptors the query needs.
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;

/// How long requests still running at shutdown (a change waiting for its barrier) get to
/// finish before they are cut off.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How the server listens.
#[derive(Clone)]
pub struct ApiConfig {
    /// Where to listen; port 0 lets the system choose (see [`ApiServer::local_addr`]).
    pub listen: SocketAddr,
    /// The bearer token every request must carry. Required when `listen` is not loopback.
    pub token: Option<String>,
    /// The largest request body taken, in bytes (larger: 413).
    pub body_limit: usize,
    /// How long a client has to send a request's headers, and how long a connection may sit
    /// idle between requests: then it is closed.
    pub header_timeout: Duration,
    /// How long a client has to send a request's body once its headers are in: then it gets
    /// 408 and the connection is closed. Answering (a change waiting for its consistent
    /// point) does not count.
    pub body_timeout: Duration,
    /// How many connections are served at once; one more is answered 503 and closed.
    pub max_connections: usize,
}

impl std::fmt::Debug for ApiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiConfig")
            .field("listen", &self.listen)
            .field("token", &self.token.as_ref().map(|_| "<secret>"))
            .field("body_limit", &self.body_limit)
            .field("header_timeout", &self.header_timeout)
            .field("body_timeout", &self.body_timeout)
            .field("max_connections", &self.max_connections)
            .finish()
    }
}

impl ApiConfig {
    /// `127.0.0.1:0`, no token, the default limits and timeouts.
    pub fn loopback() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            token: None,
            body_limit: DEFAULT_BODY_LIMIT,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// A running API server. Dropping it (or [`ApiServer::shutdown`]) stops it: the event
/// streams end, requests in flight get a few seconds to finish, and the thread is joined.
#[derive(Debug)]
#[must_use = "the server stops when this is dropped"]
pub struct ApiServer {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl ApiServer {
    /// Binds `config.listen` and serves the queries of `registry` on a thread of its own.
    /// Refuses a non-loopback address without a token, and an empty token.
    pub fn start(config: ApiConfig, registry: Registry) -> Result<Self, ApiError> {
        let token = checked_token(&config)?;
        let listen = config.listen;
        let listener = std::net::TcpListener::bind(listen)
            .map_err(|reason| ApiError::Bind { listen, reason })?;
        Self::serve(listener, token, &config, registry)
    }

    /// Serves on `listener`, already bound (a test's, or one handed down by a supervisor),
    /// as [`ApiServer::start`] would on its address; `config.listen` is ignored.
    pub fn start_on(
        listener: std::net::TcpListener,
        config: ApiConfig,
        registry: Registry,
    ) -> Result<Self, ApiError> {
        let listen = listener.local_addr().map_err(|reason| ApiError::Bind {
            listen: config.listen,
            reason,
        })?;
        let token = checked_token(&ApiConfig {
            listen,
            ..config.clone()
        })?;
        Self::serve(listener, token, &config, registry)
    }

    fn serve(
        listener: std::net::TcpListener,
        token: Option<String>,
        config: &ApiConfig,
        registry: Registry,
    ) -> Result<Self, ApiError> {
        let bind = |listen, reason| ApiError::Bind { listen, reason };
        let addr = listener
            .local_addr()
            .map_err(|e| bind(SocketAddr::from(([0, 0, 0, 0], 0)), e))?;
        listener.set_nonblocking(true).map_err(|e| bind(addr, e))?;
        let (stop, stopped) = watch::channel(false);
        let body_limit = config.body_limit;
        let body_timeout = config.body_timeout;
        let app = crate::routes::router(registry, token, body_limit, stopped.clone()).layer(
            axum::middleware::from_fn(move |req, next| {
                read_body_in_time(req, next, body_timeout, body_limit)
            }),
        );
        let limits = Limits {
            header_timeout: config.header_timeout,
            max_connections: config.max_connections.max(1),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_name("anduin-api-call")
            .max_blocking_threads(16)
            .build()
            .map_err(|reason| ApiError::Thread { reason })?;
        let thread = std::thread::Builder::new()
            .name("anduin-api".into())
            .spawn(move || serve(runtime, listener, app, limits, stopped))
            .map_err(|reason| ApiError::Thread { reason })?;
        tracing::info!(%addr, "API listening");
        Ok(Self {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The address it listens on (with the port the system chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops the server and waits for its thread.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        // Nobody may listen any more (the thread ended early): then there is nothing to stop.
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                tracing::error!("the API server's thread panicked");
            }
        }
    }
}

/// The token of `config`, trimmed; refused when empty, or absent on a non-loopback address.
fn checked_token(config: &ApiConfig) -> Result<Option<String>, ApiError> {
    let token = match &config.token {
        Some(t) if t.trim().is_empty() => return Err(ApiError::EmptyToken),
        Some(t) => Some(t.trim().to_string()),
        None => None,
    };
    // It travels in a header: a character a header cannot carry as text (a control
    // character, anything beyond ASCII) would make every request fail as "no token".
    if let Some(bad) = token
        .as_deref()
        .and_then(|t| t.chars().find(|c| !(' '..='~').contains(c)))
    {
        return Err(ApiError::UnusableToken {
            character: bad.escape_default().to_string(),
        });
    }
    if token.is_none() && !config.listen.ip().is_loopback() {
        return Err(ApiError::NonLoopbackWithoutToken {
            listen: config.listen,
        });
    }
    Ok(token)
}

/// How the connections of [`serve`] are held in check.
#[derive(Debug, Clone, Copy)]
struct Limits {
    header_timeout: Duration,
    max_connections: usize,
}

/// Reads the whole body of `req` (up to `limit` bytes) within `timeout` before the route
/// sees it: a client that sends headers and then stalls gets 408 and its connection is
/// closed. Once the body is in, the answer may take as long as it takes.
async fn read_body_in_time(
    req: axum::extract::Request,
    next: axum::middleware::Next,
    timeout: Duration,
    limit: usize,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let (parts, body) = req.into_parts();
    let bytes = match tokio::time::timeout(timeout, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(e)) => {
            let too_large = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            let problem = if too_large {
                Problem::too_large(limit)
            } else {
                Problem::bad_body(e)
            };
            return close(problem.into_response());
        }
        Err(_) => {
            tracing::debug!(path = %parts.uri.path(), ?timeout, "API request whose body did not arrive in time: closed");
            return close(
                Problem::new(
                    axum::http::StatusCode::REQUEST_TIMEOUT,
                    "timeout",
                    format!("the request body did not arrive within {timeout:?}"),
                )
                .into_response(),
            );
        }
    };
    next.run(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
    .await
}

/// `response` with `Connection: close`: the connection ends after it.
fn close(mut response: axum::response::Response) -> axum::response::Response {
    response.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    response
}

/// What a connection beyond [`Limits::max_connections`] is told before it is closed.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: application/json\r\nconnection: close\r\ncontent-length: 83\r\n\r\n\
{\"error\":\"busy\",\"message\":\"the API serves too many connections at once; try again\"}";

/// How long the server pauses after a failed accept (out of descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// How long a refused connection is kept for the client to read the 503 at most.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// Answers `stream` 503 ([`BUSY`]) and closes it once the client has closed its side, or
/// after `linger`.
async fn refuse(
    mut stream: tokio::net::TcpStream,
    linger: Duration,
    _refusal: tokio::sync::OwnedSemaphorePermit,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = tokio::time::timeout(linger, async {
        stream.write_all(BUSY).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut left = DEFAULT_BODY_LIMIT;
        while left > 0 {
            match stream.read(&mut sink).await? {
                0 => break,
                n => left = left.saturating_sub(n),
            }
        }
        Ok::<(), std::io::Error>(())
    })
    .await;
}

/// The server's thread: accepts connections (at most [`Limits::max_connections`] at once)
/// until `stop` turns true, then lets requests in flight finish (at most [`SHUTDOWN_GRACE`]).
fn serve(
    runtime: tokio::runtime::Runtime,
    listener: std::net::TcpListener,
    app: axum::Router,
    limits: Limits,
    stop: watch::Receiver<bool>,
) {
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(error = %e, "the API cannot use its listener; the API is off");
                return;
            }
        };
        let slots = Arc::new(Semaphore::new(limits.max_connections));
        let refusals = Arc::new(Semaphore::new(limits.max_connections));
        let mut stopping = stop.clone();
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                () = async { let _ = stopping.wait_for(|s| *s).await; } => break,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors, or a connection reset before it was taken: the
                    // next one may do; a pause, so as not to spin on a persistent error.
                    tracing::warn!(error = %e, "the API could not accept a connection");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            };
            let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                tracing::debug!(
                    max = limits.max_connections,
                    "API connection refused: too many at once"
                );
                // Told why, then closed once the client has sent what it had (closing with
                // its request unread would reset the connection before it reads the 503).
                // As many refusals as connections at most; beyond that, closed at once.
                if let Ok(refusal) = Arc::clone(&refusals).try_acquire_owned() {
                    let linger = limits.header_timeout.min(REFUSAL_LINGER);
                    tokio::spawn(refuse(stream, linger, refusal));
                }
                continue;
            };
            let service = hyper_util::service::TowerToHyperService::new(app.clone());
            let mut stop = stop.clone();
            tokio::spawn(async move {
                let mut builder = hyper::server::conn::http1::Builder::new();
                builder
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(limits.header_timeout);
                let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                tokio::pin!(conn);
                let served = tokio::select! {
                    r = conn.as_mut() => r,
                    () = async { let _ = stop.wait_for(|s| *s).await; } => {
                        conn.as_mut().graceful_shutdown();
                        conn.await
                    }
                };
                if let Err(e) = served {
                    tracing::debug!(error = %e, "API connection ended");
                }
                drop(slot);
            });
        }
        drop(listener);
        // Every slot back: every connection has ended.
        let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
        if tokio::time::timeout(SHUTDOWN_GRACE, slots.acquire_many(all))
            .await
            .is_err()
        {
            tracing::warn!("API requests still running at shutdown were cut off");
        }
    });
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_loopback_address_without_a_token_is_refused_before_anything_listens() {
        let config = ApiConfig {
            listen: SocketAddr::from(([0, 0, 0, 0], 0)),
            ..ApiConfig::loopback()
        };
        let e = ApiServer::start(config, Registry::new()).expect_err("refused");
        assert!(matches!(e, ApiError::NonLoopbackWithoutToken { .. }), "{e}");
        assert!(e.to_string().contains("--api-token-file"), "{e}");
    }

    #[test]
    fn a_token_a_header_cannot_carry_is_refused() {
        for token in ["caf\u{e9}", "a\u{1}b", "tab\tinside"] {
            let config = ApiConfig {
                token: Some(token.into()),
                ..ApiConfig::loopback()
            };
            let e = ApiServer::start(config, Registry::new()).expect_err("refused");
            assert!(
                matches!(e, ApiError::UnusableToken { .. }),
                "{token:?}: {e}"
            );
            assert!(e.to_string().contains("printable ASCII"), "{e}");
        }
        let config = ApiConfig {
            token: Some("a+b/c= with spaces~".into()),
            ..ApiConfig::loopback()
        };
        let server = ApiServer::start(config, Registry::new()).expect("printable ASCII is taken");
        server.shutdown();
    }

    #[test]
    fn an_empty_token_is_refused() {
        let config = ApiConfig {
            token: Some("  \n".into()),
            ..ApiConfig::loopback()
        };
        let e = ApiServer::start(config, Registry::new()).expect_err("refused");
        assert!(matches!(e, ApiError::EmptyToken), "{e}");
    }

    #[test]
    fn a_port_in_use_is_told_once_with_the_system_s_reason() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
        let config = ApiConfig {
            listen: taken.local_addr().expect("bound"),
            ..ApiConfig::loopback()
        };
        let e = ApiServer::start(config, Registry::new()).expect_err("in use");
        assert!(matches!(e, ApiError::Bind { .. }), "{e}");
        // As `anduin run` prints it: the error and its causes.
        let chain = format!("{:#}", anyhow::Error::from(e));
        assert_eq!(chain.matches("(os error").count(), 1, "{chain}");
    }

    #[test]
    fn a_listener_handed_over_is_served() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
        let addr = listener.local_addr().expect("bound");
        let server =
            ApiServer::start_on(listener, ApiConfig::loopback(), Registry::new()).expect("serves");
        assert_eq!(server.local_addr(), addr);
        let queries = crate::Client::new(&server.url(), None)
            .expect("a URL")
            .queries()
            .expect("answers");
        assert!(queries.is_empty());
    }

    /// Sends `request` on a new connection to `addr` and reads until the server closes it
    /// (a minute at most, so that a server that never does fails the test instead of
    /// hanging it).
    fn send_and_read_until_closed(addr: SocketAddr, request: &[u8]) -> String {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(addr).expect("connects");
        s.set_read_timeout(Some(Duration::from_secs(60)))
            .expect("a timeout");
        s.write_all(request).expect("sent");
        let mut answer = Vec::new();
        s.read_to_end(&mut answer)
            .expect("the server closes the connection");
        String::from_utf8_lossy(&answer).into_owned()
    }

    const STALLED_BODY: &[u8] =
        b"PUT /api/v1/queries/q/operators/low/params/condition HTTP/1.1\r\n\
Host: localhost\r\nContent-Length: 100\r\n\r\n{";

    fn quick(config: ApiConfig) -> ApiConfig {
        ApiConfig {
            header_timeout: Duration::from_millis(50),
            body_timeout: Duration::from_millis(50),
            ..config
        }
    }

    #[test]
    fn a_connection_that_stalls_in_its_body_gets_408_and_is_closed() {
        let server =
            ApiServer::start(quick(ApiConfig::loopback()), Registry::new()).expect("binds");
        let answer = send_and_read_until_closed(server.local_addr(), STALLED_BODY);
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("did not arrive"), "{answer}");
    }

    #[test]
    fn a_connection_that_stalls_in_its_headers_or_sends_nothing_is_closed() {
        let server =
            ApiServer::start(quick(ApiConfig::loopback()), Registry::new()).expect("binds");
        send_and_read_until_closed(server.local_addr(), b"GET /metrics HTTP/1.1\r\nHost: local");
        send_and_read_until_closed(server.local_addr(), b"");
    }

    /// A query whose `set` waits until the test lets it answer.
    struct Gated {
        inner: crate::fake::FakeQuery,
        entered: std::sync::Mutex<std::sync::mpsc::Sender<()>>,
        release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
    }

    impl crate::QueryControl for Gated {
        fn info(&self) -> crate::QueryInfo {
            self.inner.info()
        }
        fn params(&self, operator: &str) -> Result<Vec<crate::ParamInfo>, crate::ControlFailure> {
            self.inner.params(operator)
        }
        fn set(
            &self,
            request: crate::ChangeRequest,
        ) -> Result<crate::ChangeRecord, crate::ControlFailure> {
            let _ = self.entered.lock().expect("not poisoned").send(());
            let _ = self.release.lock().expect("not poisoned").recv();
            self.inner.set(request)
        }
        fn history(&self) -> Vec<crate::ChangeRecord> {
            self.inner.history()
        }
        fn checkpoints(&self) -> Result<Vec<crate::CheckpointInfo>, crate::ControlFailure> {
            self.inner.checkpoints()
        }
        fn checkpoint(&self) -> Result<u64, crate::ControlFailure> {
            self.inner.checkpoint()
        }
        fn stop(&self) -> Result<(), crate::ControlFailure> {
            self.inner.stop()
        }
        fn metrics(&self) -> crate::QueryMetrics {
            self.inner.metrics()
        }
    }

    #[test]
    fn a_change_whose_body_is_in_may_wait_longer_than_the_timeouts_for_its_answer() {
        let (entered_tx, entered) = std::sync::mpsc::channel();
        let (release, release_rx) = std::sync::mpsc::channel();
        let registry = Registry::new();
        registry
            .add(Arc::new(Gated {
                inner: crate::fake::FakeQuery::new("sensors"),
                entered: std::sync::Mutex::new(entered_tx),
                release: std::sync::Mutex::new(release_rx),
            }))
            .expect("a new name");
        let server = ApiServer::start(quick(ApiConfig::loopback()), registry).expect("binds");
        let addr = server.local_addr();
        let change = std::thread::spawn(move || {
            let body = r#"{"value": "value < 30"}"#;
            send_and_read_until_closed(
                addr,
                format!(
                    "PUT /api/v1/queries/sensors/operators/low/params/condition HTTP/1.1\r\n\
                     Host: localhost\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            )
        });
        entered.recv().expect("the change reaches the query");
        // While it waits, another connection's body times out: the body timeout has passed
        // for the change as well.
        let other = send_and_read_until_closed(addr, STALLED_BODY);
        assert!(other.starts_with("HTTP/1.1 408"), "{other}");
        release.send(()).expect("the query waits");
        let answer = change.join().expect("the client thread");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }

    #[test]
    fn a_connection_beyond_the_cap_gets_503_and_a_freed_slot_is_used_again() {
        use std::io::Write;
        let config = ApiConfig {
            max_connections: 2,
            ..ApiConfig::loopback()
        };
        let server = ApiServer::start(config, Registry::new()).expect("binds");
        let addr = server.local_addr();
        // Two connections that hold their slots (accepted in the order they connected).
        let mut first = std::net::TcpStream::connect(addr).expect("connects");
        first.write_all(STALLED_BODY).expect("sent");
        let mut second = std::net::TcpStream::connect(addr).expect("connects");
        second.write_all(STALLED_BODY).expect("sent");
        let answer =
            send_and_read_until_closed(addr, b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        let body = answer.split("\r\n\r\n").nth(1).expect("a body");
        assert!(
            answer.contains(&format!("content-length: {}\r\n", body.len())),
            "{answer}"
        );
        let problem: crate::ErrorBody = serde_json::from_str(body).expect("the error body");
        assert_eq!(problem.error, "busy");
        drop(first);
        let client = crate::Client::new(&server.url(), None).expect("a URL");
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while client.queries().is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the slot was never freed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(second);
    }

    #[test]
    fn port_zero_gets_a_port_and_the_server_stops_when_dropped() {
        let server = ApiServer::start(ApiConfig::loopback(), Registry::new()).expect("binds");
        let addr = server.local_addr();
        assert_ne!(addr.port(), 0);
        drop(server);
        // The port is free again: the listener was closed with the thread.
        let again = std::net::TcpListener::bind(addr);
        assert!(again.is_ok(), "{again:?}");
    }
}
