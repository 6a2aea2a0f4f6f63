//! Why the API server could not start.

use std::net::SocketAddr;

/// Why [`crate::ApiServer::start`] refused or failed. Nothing is listening.
#[derive(Debug, thiserror::Error)]
/// The system's reason is part of each message (and not a `source`, so that a chain of
/// causes prints it once).
#[non_exhaustive]
pub enum ApiError {
    /// A non-loopback address without a bearer token would let anyone on the network
    /// change and stop the query.
    #[error(
        "refusing to serve the API on {listen} without a token: an address other than loopback \
         lets anyone who can reach it change and stop the query; give a token \
         (--api-token-file FILE or ANDUIN_API_TOKEN), or listen on 127.0.0.1"
    )]
    NonLoopbackWithoutToken {
        /// The address asked for.
        listen: SocketAddr,
    },
    /// The token is empty or all white space.
    #[error("the API token is empty: put a secret of at least one visible character in it")]
    EmptyToken,
    /// The token has a character an HTTP header cannot carry as text: no request could
    /// ever present it.
    #[error(
        "the API token has the character '{character}', which an HTTP header cannot carry: \
         use printable ASCII only (letters, digits, punctuation), such as the output of \
         `openssl rand -hex 32`"
    )]
    UnusableToken {
        /// The first such character, escaped.
        character: String,
    },
    /// The address could not be bound.
    #[error("cannot listen on {listen} for the API: {reason} (is the port taken? --api 127.0.0.1:0 lets the system choose one)")]
    Bind {
        /// The address asked for.
        listen: SocketAddr,
        /// The system's reason.
        reason: std::io::Error,
    },
    /// The server's thread or runtime could not be made.
    #[error("cannot start the API server's thread: {reason}")]
    Thread {
        /// The system's reason.
        reason: std::io::Error,
    },
}
