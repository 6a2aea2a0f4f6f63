//! What can go wrong talking to NATS, classified by what the user can do about it.

use anduin_operator_api::OperatorError;

/// A NATS connector's failure. Each names the operator when it becomes an
/// [`OperatorError`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NatsError {
    /// No server answered in time: the address is wrong, the server is down, or the timeout
    /// is too short for it to answer.
    #[error("no NATS server at {server} answered within {timeout_ms} ms ({cause}): {}", unreachable_advice(*.timeout_ms))]
    Unreachable {
        /// The `server` param.
        server: String,
        /// How long it waited.
        timeout_ms: u64,
        /// What the client said.
        cause: String,
    },
    /// Nothing listens at the address: the connection was refused at once.
    #[error("the connection to the NATS server at {server} was refused ({cause}): nothing listens there; check `server` (nats://host:port) or start the server")]
    Refused {
        /// The `server` param.
        server: String,
        /// What the client said.
        cause: String,
    },
    /// The connection failed at once, for a reason other than a refusal: a host name that
    /// does not resolve, a failed TLS handshake, a network that cannot reach the host.
    #[error("could not connect to the NATS server at {server} ({cause}): {}", .why.advice())]
    ConnectFailed {
        /// The `server` param.
        server: String,
        /// What failed.
        why: ConnectFailure,
        /// What the client said.
        cause: String,
    },
    /// The server answered but has no JetStream.
    #[error("the NATS server at {server} has no JetStream ({cause}): start it with JetStream enabled (`nats-server -js`)")]
    NoJetStream {
        /// The `server` param.
        server: String,
        /// What the client said.
        cause: String,
    },
    /// The stream does not exist on the server.
    #[error("stream `{stream}` does not exist on the NATS server at {server}: create it first (`nats stream add {stream} --subjects …`; anduin does not create streams)")]
    NoStream {
        /// The stream.
        stream: String,
        /// The `server` param.
        server: String,
    },
    /// A running source's stream went away: the server answered, again and again for the
    /// grace it gives, that the stream does not exist (deleted, or the server came back
    /// without its store).
    #[error("stream `{stream}` no longer exists on the NATS server at {server} (the source had read it up to sequence {read_to}, then found it gone for {waited_ms} ms: deleted, or the server came back without its store): recreate it (`nats stream add {stream} --subjects …`) and run the query again with --from-scratch: a stream made again numbers its messages from 1 again, so no checkpoint's position is one of its")]
    StreamLost {
        /// The stream.
        stream: String,
        /// The `server` param.
        server: String,
        /// How long the source found it missing before giving up.
        waited_ms: u64,
        /// The last sequence the source read (0: none).
        read_to: u64,
    },
    /// The stream a source reads (or its checkpoint read) is not the one it was: deleted and
    /// made again, it numbers its messages from 1 again, and reading on from the sequence
    /// reached would skip as many of the new stream's messages without a word.
    #[error("stream `{stream}` on the NATS server at {server} was made again ({then} then, {now} now){}. Run the query with --from-scratch to read the new stream from its start", remade_what(*.found, *.next))]
    StreamRemade {
        /// The stream.
        stream: String,
        /// The `server` param.
        server: String,
        /// When the stream read was made.
        then: String,
        /// When the stream there now was made.
        now: String,
        /// The sequence the source would read next.
        next: u64,
        /// When it was found.
        found: RemadeFound,
    },
    /// A source's or a sink's subject is not one the stream keeps.
    #[error("subject `{subject}` is not one of stream `{stream}`'s subjects ({subjects}): {}", .role.outside_stream())]
    SubjectOutsideStream {
        /// Whose subject: a source's filter or a sink's.
        role: Role,
        /// The `subject` param.
        subject: String,
        /// The stream.
        stream: String,
        /// The stream's subjects, comma-separated.
        subjects: String,
    },
    /// The stream forgets message ids sooner than a resumed run may write a row again.
    #[error("stream `{stream}` keeps message ids for {window_ms} ms, less than `min_duplicate_window` ({needed_ms} ms): a row written before a crash and written again by the resumed run after that would be stored twice; raise the stream's duplicate window to at least that (`nats stream edit {stream} --dupe-window {}s`), or lower `min_duplicate_window` knowingly", .needed_ms.div_ceil(1000))]
    ShortDuplicateWindow {
        /// The stream.
        stream: String,
        /// Its duplicate window.
        window_ms: u64,
        /// `min_duplicate_window`.
        needed_ms: u64,
    },
    /// An exactly-once sink's stream forgets message ids sooner than the run takes
    /// checkpoints: the rows a killed run wrote after its last checkpoint are written again by
    /// the resumed run up to an interval later, and stored twice.
    #[error("the NATS sink \"{sink}\" writes exactly once only if its stream `{stream}` still knows a row's message id when a resumed run writes the row again, but `{stream}` keeps message ids for {window_ms} ms and the run takes a checkpoint only every {interval_ms} ms: the rows written after the last checkpoint before a crash would be written again after the stream forgot their ids, and stored twice. Take checkpoints more often than the window (`--checkpoint-interval` below {window_ms} ms, with room for the restart), or raise the stream's duplicate window well above the interval (`nats stream edit {stream} --dupe-window {}s`), or give \"{sink}\" `delivery = \"at-least-once\"`", suggested_window_s(*.interval_ms))]
    WindowShorterThanCheckpoints {
        /// The sink.
        sink: String,
        /// Its stream.
        stream: String,
        /// The stream's duplicate window.
        window_ms: u64,
        /// The checkpoint interval.
        interval_ms: u64,
    },
    /// The client's background runtime could not be made.
    #[error("the NATS client's runtime could not start: {0}")]
    Runtime(String),
    /// A call to the server failed while running.
    #[error("{what}: {cause}")]
    Client {
        /// What was being done.
        what: String,
        /// What the client said.
        cause: String,
    },
    /// The checkpoint does not fit this run (its stream).
    #[error("the checkpoint does not fit: {0}; start over with --from-scratch")]
    Checkpoint(String),
}

/// Which end of a stream a `nats` operator is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Role {
    /// It reads the stream.
    Source,
    /// It publishes to the stream.
    Sink,
}

/// Why a connection failed before its timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectFailure {
    /// The host name does not resolve.
    UnknownHost,
    /// The TLS handshake failed.
    Tls,
    /// Another failure of the network (no route to the host, a reset connection).
    Network,
}

impl ConnectFailure {
    /// What to do about it.
    fn advice(self) -> &'static str {
        match self {
            ConnectFailure::UnknownHost => {
                "the host name does not resolve; check the host of `server` (nats://host:port)"
            }
            ConnectFailure::Tls => {
                "the TLS handshake failed; check whether the server requires TLS (a `tls://` address) and trusts this client, or serves no TLS at all (a `nats://` address)"
            }
            ConnectFailure::Network => {
                "check `server` (nats://host:port) and that the host is reachable from here"
            }
        }
    }
}

/// A timeout under which a live server may well not answer in time: a connection takes a
/// TCP handshake and the server's greeting, milliseconds on one machine, more across a
/// network.
const SHORT_CONNECT_TIMEOUT_MS: u64 = 1000;

/// What to do when no server answered within `timeout_ms`: first raise a timeout that may be
/// too short for a live server to answer, else check the address and the server.
fn unreachable_advice(timeout_ms: u64) -> String {
    if timeout_ms < SHORT_CONNECT_TIMEOUT_MS {
        format!("`connect.timeout` ({timeout_ms} ms) may be too short for a server to answer, even one that runs: raise it (10s by default); else check `server` (nats://host:port) and start the server")
    } else {
        "check `server` (nats://host:port), start the server, or raise `connect.timeout`".into()
    }
}

/// A duplicate window to suggest for checkpoints every `interval_ms`: twice the interval (room
/// for the restart and the replay), in whole seconds.
fn suggested_window_s(interval_ms: u64) -> u64 {
    interval_ms.saturating_mul(2).div_ceil(1000)
}

/// When a source found its stream made again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemadeFound {
    /// While it read it.
    Reading,
    /// On a restore: the checkpoint read another stream.
    Restoring,
    /// At a fresh start: the earlier run of the lineage (killed before its first checkpoint
    /// completed) read another stream, as the facts kept beside the lineage say.
    StartingAgain,
}

/// What a stream made again means for a source at sequence `next`, found as `found` says.
fn remade_what(found: RemadeFound, next: u64) -> String {
    match found {
        RemadeFound::Restoring => format!(" since the checkpoint: it numbers its messages from 1 again, so reading on from sequence {next} would skip the new stream's first messages"),
        RemadeFound::Reading => format!(" while the source read it: it numbers its messages from 1 again, so the source, reading on from the sequence it had reached, went past the new stream's first messages (it is at sequence {next}; what it read of the new stream since its last checkpoint is in no checkpoint)"),
        RemadeFound::StartingAgain => " since an earlier run of this query with these checkpoints, which stopped before its first checkpoint completed: it numbers its messages from 1 again, so this run would give the rows it makes of them the names the earlier run gave its rows (an exactly-once NATS sink's message ids) and they would be dropped as duplicates".to_string(),
    }
}

impl Role {
    /// What a subject outside the stream means for it, and what to do.
    fn outside_stream(self) -> &'static str {
        match self {
            Role::Source => "the source would read none of the stream's messages; filter on a subject of the stream, or leave `subject` out to read all of it",
            Role::Sink => "what the sink published would not be stored; write a subject of the stream, or add it to the stream",
        }
    }
}

impl NatsError {
    /// A failed call to the server while doing `what`.
    pub(crate) fn client(what: impl Into<String>, e: impl std::fmt::Display) -> Self {
        NatsError::Client {
            what: what.into(),
            cause: e.to_string(),
        }
    }

    /// This error as operator `operator`'s: a configuration problem when it is the user's
    /// to fix before starting, an execution error otherwise.
    pub(crate) fn for_operator(self, operator: &str) -> OperatorError {
        match self {
            NatsError::Client { .. } | NatsError::Runtime(_) => OperatorError::Execution {
                operator: operator.to_string(),
                message: self.to_string(),
            },
            _ => OperatorError::Config {
                operator: operator.to_string(),
                message: self.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_that_timed_out_under_a_second_says_the_timeout_may_be_too_short() {
        // Issue 19 (L2): with `connect.timeout = "1ms"` and a live server, the start said
        // only that no server answered.
        let unreachable = |timeout_ms| {
            NatsError::Unreachable {
                server: "nats://127.0.0.1:4222".into(),
                timeout_ms,
                cause: "timed out".into(),
            }
            .to_string()
        };
        let short = unreachable(1);
        assert!(
            short.starts_with("no NATS server at nats://127.0.0.1:4222 answered within 1 ms (timed out): `connect.timeout` (1 ms) may be too short for a server to answer, even one that runs: raise it"),
            "{short}"
        );
        let long = unreachable(10_000);
        assert!(!long.contains("too short"), "{long}");
        assert!(long.ends_with("or raise `connect.timeout`"), "{long}");
    }

    #[test]
    fn a_short_duplicate_window_is_told_the_window_it_needs() {
        let e = NatsError::ShortDuplicateWindow {
            stream: "OUT".into(),
            window_ms: 120_000,
            needed_ms: 300_000,
        }
        .to_string();
        assert!(
            e.contains("`nats stream edit OUT --dupe-window 300s`"),
            "{e}"
        );
    }
}
