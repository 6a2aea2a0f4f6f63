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

use super::error::{ConnectFailure, NatsError};

/// A client of one server (or cluster), connected.
pub(crate) struct Connection {
    /// `Some` until dropped: the drop shuts it down without waiting (it may be dropped on a
    /// thread inside another runtime).
    runtime: Option<tokio::runtime::Runtime>,
    /// The JetStream API of the client.
    pub js: jetstream::Context,
    /// The `server` param, for messages (a password in it shown as `***`).
    pub server: String,
}

impl Connection {
    /// Connects to `server` (`nats://[user:password@]host:port`, comma-separated for a
    /// cluster) as client `name`, failing within `timeout` when no server answers. The user
    /// and password (or a token: a user without a password) of the first address that has
    /// them log the client in; messages show the password as `***`.
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
        let login = addrs.iter().find_map(|a| login(a));
        // From here on, `server` is for messages.
        let server = &shown(server);
        let unreachable = |cause: String| NatsError::Unreachable {
            server: server.to_string(),
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            cause,
        };
        let options = ConnectOptions::new().name(name).connection_timeout(timeout);
        let options = match login {
            Some(Login::UserPassword(user, password)) => options.user_and_password(user, password),
            Some(Login::Token(token)) => options.token(token),
            None => options,
        };
        let failed = |why, cause| NatsError::ConnectFailed {
            server: server.to_string(),
            why,
            cause,
        };
        let connect = options.connect(addrs);
        let started = std::time::Instant::now();
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
                ConnectErrorKind::Dns => {
                    return Err(failed(ConnectFailure::UnknownHost, e.to_string()))
                }
                ConnectErrorKind::Tls => return Err(failed(ConnectFailure::Tls, e.to_string())),
                // An I/O failure well before the timeout is the network's answer, not
                // silence (issue 19, probe40 L5).
                ConnectErrorKind::Io if started.elapsed() < timeout / 2 => {
                    return Err(failed(ConnectFailure::Network, e.to_string()))
                }
                ConnectErrorKind::TimedOut
                | ConnectErrorKind::Io
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

/// How a client logs in.
#[derive(Debug, PartialEq, Eq)]
enum Login {
    UserPassword(String, String),
    Token(String),
}

/// The login written in address `addr` (`nats://user:password@host:port`, or
/// `nats://token@host:port`), percent-decoded; `None` without one, or when `addr` is not a
/// URL (the connect says why).
fn login(addr: &str) -> Option<Login> {
    let parsed: async_nats::ServerAddr = addr.parse().ok()?;
    let user = decoded(parsed.username()?);
    Some(match parsed.password() {
        Some(password) => Login::UserPassword(user, decoded(password)),
        None => Login::Token(user),
    })
}

/// `server` for messages: the password of each address shown as `***`.
pub(crate) fn shown(server: &str) -> String {
    server
        .split(',')
        .map(|addr| {
            let Some((scheme, rest)) = addr.split_once("://") else {
                return addr.to_string();
            };
            match rest.rsplit_once('@') {
                Some((login, host)) => match login.split_once(':') {
                    Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
                    None => format!("{scheme}://***@{host}"),
                },
                None => addr.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `s` with its `%XX` escapes decoded (as a URL's user and password are written).
fn decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_name_that_does_not_resolve_is_said_so_not_called_a_silent_server() {
        // Issue 19 (probe40 L5): an immediate DNS failure read "no NATS server … answered
        // within 30000 ms".
        let opened = Connection::open(
            "nats://no-such-host.invalid:4222",
            Duration::from_secs(30),
            "test",
        );
        let Err(e) = opened else {
            panic!("a host under .invalid resolved")
        };
        assert!(
            matches!(
                e,
                NatsError::ConnectFailed {
                    why: ConnectFailure::UnknownHost,
                    ..
                }
            ),
            "{e}"
        );
        let message = e.to_string();
        assert!(
            message.starts_with(
                "could not connect to the NATS server at nats://no-such-host.invalid:4222 ("
            ) && message.ends_with(
                "the host name does not resolve; check the host of `server` (nats://host:port)"
            ),
            "{message}"
        );
    }

    #[test]
    fn a_user_and_password_or_a_token_in_the_address_log_the_client_in() {
        assert_eq!(
            login("nats://u:p%40ss@127.0.0.1:4222"),
            Some(Login::UserPassword("u".into(), "p@ss".into()))
        );
        assert_eq!(
            login("nats://s3cr3t@127.0.0.1:4222"),
            Some(Login::Token("s3cr3t".into()))
        );
        assert_eq!(login("nats://127.0.0.1:4222"), None);
        assert_eq!(login("not a url"), None);
    }

    #[test]
    fn messages_show_no_password_or_token() {
        assert_eq!(
            shown("nats://u:p@a:1, nats://t@b:2,nats://c:3"),
            "nats://u:***@a:1, nats://***@b:2,nats://c:3"
        );
        assert_eq!(shown("nats://"), "nats://");
    }
}
