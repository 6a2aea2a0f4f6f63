//! The server: a listener bound at start, a tokio runtime on a thread of its own, the
//! router of [`crate::routes`], and a clean shutdown when it is dropped.

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::watch;

use crate::{ApiError, Registry};

/// The request body limit unless configured: 64 KiB (a param value is a line of text).
pub const DEFAULT_BODY_LIMIT: usize = 64 * 1024;

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
}

impl std::fmt::Debug for ApiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiConfig")
            .field("listen", &self.listen)
            .field("token", &self.token.as_ref().map(|_| "<secret>"))
            .field("body_limit", &self.body_limit)
            .finish()
    }
}

impl ApiConfig {
    /// `127.0.0.1:0`, no token, the default body limit.
    pub fn loopback() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            token: None,
            body_limit: DEFAULT_BODY_LIMIT,
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
            .map_err(|source| ApiError::Bind { listen, source })?;
        Self::serve(listener, token, config.body_limit, registry)
    }

    /// Serves on `listener`, already bound (a test's, or one handed down by a supervisor),
    /// as [`ApiServer::start`] would on its address; `config.listen` is ignored.
    pub fn start_on(
        listener: std::net::TcpListener,
        config: ApiConfig,
        registry: Registry,
    ) -> Result<Self, ApiError> {
        let listen = listener.local_addr().map_err(|source| ApiError::Bind {
            listen: config.listen,
            source,
        })?;
        let token = checked_token(&ApiConfig {
            listen,
            ..config.clone()
        })?;
        Self::serve(listener, token, config.body_limit, registry)
    }

    fn serve(
        listener: std::net::TcpListener,
        token: Option<String>,
        body_limit: usize,
        registry: Registry,
    ) -> Result<Self, ApiError> {
        let bind = |listen, source| ApiError::Bind { listen, source };
        let addr = listener
            .local_addr()
            .map_err(|e| bind(SocketAddr::from(([0, 0, 0, 0], 0)), e))?;
        listener.set_nonblocking(true).map_err(|e| bind(addr, e))?;
        let (stop, stopped) = watch::channel(false);
        let app = crate::routes::router(registry, token, body_limit, stopped.clone());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_name("anduin-api-call")
            .max_blocking_threads(16)
            .build()
            .map_err(|source| ApiError::Thread { source })?;
        let thread = std::thread::Builder::new()
            .name("anduin-api".into())
            .spawn(move || serve(runtime, listener, app, stopped))
            .map_err(|source| ApiError::Thread { source })?;
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
    if token.is_none() && !config.listen.ip().is_loopback() {
        return Err(ApiError::NonLoopbackWithoutToken {
            listen: config.listen,
        });
    }
    Ok(token)
}

/// The server's thread: serves until `stop` turns true, then lets requests in flight finish
/// (at most [`SHUTDOWN_GRACE`]).
fn serve(
    runtime: tokio::runtime::Runtime,
    listener: std::net::TcpListener,
    app: axum::Router,
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
        let mut graceful = stop.clone();
        let mut deadline = stop;
        let serving = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = graceful.wait_for(|s| *s).await;
            })
            .into_future();
        tokio::select! {
            r = serving => {
                if let Err(e) = r {
                    tracing::error!(error = %e, "the API server failed; the API is off");
                }
            }
            () = async move {
                let _ = deadline.wait_for(|s| *s).await;
                tokio::time::sleep(SHUTDOWN_GRACE).await;
            } => {
                tracing::warn!("API requests still running at shutdown were cut off");
            }
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
    fn an_empty_token_is_refused() {
        let config = ApiConfig {
            token: Some("  \n".into()),
            ..ApiConfig::loopback()
        };
        let e = ApiServer::start(config, Registry::new()).expect_err("refused");
        assert!(matches!(e, ApiError::EmptyToken), "{e}");
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
