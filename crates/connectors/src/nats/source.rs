//! The NATS source: the messages of a JetStream stream (those of a subject, when it has a
//! filter), in stream order, decoded into rows, with the next stream sequence in the
//! checkpoints.
//!
//! It reads with an **ordered pull consumer**: an ephemeral consumer without acks that the
//! client creates again from the last sequence it delivered whenever it sees a gap, a missed
//! heartbeat or a lost server. It fits anduin's checkpoints: the position that counts is the
//! sequence kept in anduin's checkpoint, not a consumer's acknowledged floor on the server,
//! so nothing durable is left on the server by a run that is killed (an ephemeral consumer
//! goes away with its connection), and a resumed run starts a new consumer at the
//! checkpoint's sequence. A direct get (`$JS.API.DIRECT.GET`) would cost one request a
//! message, need `allow_direct` on the stream, and a subject filter with wildcards would have
//! to be walked message by message; the consumer pulls in batches with flow control.
//!
//! One instance reads the stream (a stream is one ordered log; several instances would each
//! read all of it): the operator takes no `parallelism`, and should it run more instances,
//! instance 0 reads and the others end at once.
//!
//! After a lost server, the client reconnects on its own; the ordered consumer would make
//! itself again only at its second missed idle heartbeat (a miss is noticed 30 s after the
//! last message or heartbeat, twice the 15 s heartbeat: a minute's stall), and from the
//! stream's first message when it had delivered none yet. So the source makes its consumer again itself, from the sequence after the last
//! message it emitted, as soon as it sees the client connected anew ([`Connection::connects`]);
//! a consumer that cannot be made yet (the server still gone, JetStream still starting) is
//! tried again with backoff while the source stays idle, for as long as it takes.
//!
//! A stream that the server says does not exist is another matter: deleted, or the server came
//! back without its store, it will not come back by waiting, and a source retrying for ever
//! would stall its query silently. So the source gives it a grace of `connect.timeout` from the
//! first answer that it is missing (room for an operator's script, or a cluster electing a
//! leader, to make it again), then fails the query naming the stream, the server and what to
//! do ([`NatsError::StreamLost`]). The ordered consumer does not say that its stream went away
//! while the client stayed connected (it makes itself again, for ever, on its own): so a
//! source idle for [`STREAM_CHECK`] while connected asks whether its stream is still there.
//! A stream deleted and made again numbers its messages from 1 again, and the consumer reads
//! on from its sequence in it: so the source keeps when its stream was made (in checkpoints
//! too), and compares at a restore, at each checkpoint, when it finds its stream again, and
//! every [`STREAM_CHECK`] while busy ([`NatsError::StreamRemade`]). Before the first
//! checkpoint, it keeps it beside the run's lineage (`BuildContext::lineage_facts`): a run
//! killed before its first checkpoint and started again takes the earlier run's lineage, and
//! its sink the earlier run's message ids; reading a stream made again in between, it would
//! give the new rows the ids of the earlier ones, dropped as duplicates. So a fresh start
//! refuses a stream made at another time than the one its lineage's earlier run read, and
//! `--from-scratch` (a new lineage) reads it.
//!
//! With `bounded`, it stops at the stream's last sequence as of its first start (kept in the
//! checkpoint, so that a resumed run stops where the interrupted one would have): after the
//! message at that sequence, or after the last message of its subject before it (the
//! consumer says how many messages of the subject are still pending).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anduin_operator_api::{
    DeadLetter, KeptFact, OperatorError, RejectedRecord, RestoreIn, SnapshotOut, Source,
    SourcePoll, WatermarkSpec,
};
use async_nats::jetstream::consumer::pull::{Ordered, OrderedConfig};
use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::stream::Stream;
use futures_util::StreamExt;

use super::connection::Connection;
use super::error::{NatsError, RemadeFound};
use crate::kafka::decode::{Bad, Polled, RecordDecoder};

/// How long a poll waits for the first message at most (the runtime's deadline may be
/// shorter).
const POLL_WAIT: Duration = Duration::from_millis(100);

/// The first wait before making a consumer again after a failed try; it doubles up to
/// [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(100);

/// The longest wait between two tries to make a consumer again.
const RETRY_MAX: Duration = Duration::from_secs(5);

/// How long a source connected to its server stays idle before it asks whether its stream
/// still exists.
const STREAM_CHECK: Duration = Duration::from_secs(5);

/// What a source instance is made of (read from its params when bound).
#[derive(Clone)]
pub(crate) struct SourceConfig {
    pub name: String,
    pub server: String,
    pub stream: String,
    /// The subject filter (`None`: every message of the stream).
    pub subject: Option<String>,
    pub connect_timeout: Duration,
    pub bounded: bool,
    pub fail_on_error: bool,
    pub watermarks: Option<WatermarkSpec>,
}

/// Where the source is, as a checkpoint keeps it.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Position {
    /// The stream read.
    stream: String,
    /// The sequence of the first message not emitted yet (1: the stream's start).
    next: u64,
    /// With `bounded`: the last sequence read.
    end: Option<u64>,
    /// When the stream read was made (as the server says it; absent in checkpoints of
    /// earlier versions).
    #[serde(default)]
    created: Option<String>,
}

/// A running NATS source instance.
pub(crate) struct NatsSource {
    config: SourceConfig,
    conn: Connection,
    stream: Stream,
    /// The sequence of the first message not emitted yet.
    next: u64,
    /// With `bounded`: the last sequence to read.
    end: Option<u64>,
    /// Read to its end (bounded only).
    done: bool,
    /// The consumer's messages, from the first poll (after a restore) on.
    messages: Option<Ordered>,
    decoder: RecordDecoder,
    dead_letter: Arc<DeadLetter>,
    /// Messages without a payload, skipped.
    empty: u64,
    /// Messages the stream removed before the source read them (its limits and discard
    /// policy, or a delete): counted in the run's summary (`messages_removed_unread`).
    removed: u64,
    /// A consumer was made once: a later failure to make one is retried, not fatal.
    started: bool,
    /// The client's [`Connection::connects`] when the consumer was made: another count means
    /// the server was lost and found again, and the consumer is made again.
    connects: u64,
    /// After a failed try to make the consumer again: when to try next, and the wait after
    /// that.
    retry: Option<(Instant, Duration)>,
    /// Since when the server has said the stream does not exist (until a consumer is made).
    missing_since: Option<Instant>,
    /// When the source last had a message, made its consumer, or saw its stream there.
    last_seen: Instant,
    /// When a busy source last asked whether its stream is the one it reads.
    stream_checked: Instant,
    /// When the stream read was made: a stream found again with another time was made
    /// again, and numbers its messages from 1 again ([`NatsError::StreamRemade`]).
    created: String,
}

impl NatsSource {
    /// Connects and finds the stream (and, with `bounded`, its last sequence).
    pub(crate) fn open(
        config: SourceConfig,
        decoder: RecordDecoder,
        ctx: &anduin_operator_api::BuildContext,
    ) -> Result<Self, NatsError> {
        let conn = Connection::open(
            &config.server,
            config.connect_timeout,
            &format!("anduin {}", config.name),
        )?;
        let stream = conn.stream(&config.stream)?;
        let info = stream.cached_info();
        if let Some(subject) = &config.subject {
            super::check_subject(
                super::Role::Source,
                subject,
                &config.stream,
                &info.config.subjects,
            )?;
        }
        let end = config.bounded.then_some(info.state.last_sequence);
        let created = info.created.to_string();
        // A stream is one ordered log: instance 0 reads it, the others have nothing to read.
        let others = ctx.instance > 0;
        if others {
            tracing::info!(operator = %config.name, instance = ctx.instance, "a NATS stream is read by instance 0 of its source: this one ends at once");
        } else if ctx.restore_epoch.is_none() {
            same_stream_as_earlier_run(&config, &created, ctx)?;
        }
        Ok(Self {
            config,
            conn,
            stream,
            next: 1,
            end,
            done: others,
            messages: None,
            decoder,
            dead_letter: Arc::clone(&ctx.dead_letter),
            empty: 0,
            removed: 0,
            started: false,
            connects: 0,
            retry: None,
            missing_since: None,
            last_seen: Instant::now(),
            stream_checked: Instant::now(),
            created,
        })
    }

    /// Refuses the stream `info` describes when it is not the one read so far (made at
    /// another time).
    fn same_stream(&self, info: &async_nats::jetstream::stream::Info) -> Result<(), NatsError> {
        let now = info.created.to_string();
        if now == self.created {
            return Ok(());
        }
        Err(NatsError::StreamRemade {
            stream: self.config.stream.clone(),
            server: super::connection::shown(&self.config.server),
            then: self.created.clone(),
            now,
            next: self.next,
            found: RemadeFound::Reading,
        })
    }

    fn error(&self, e: NatsError) -> OperatorError {
        e.for_operator(&self.config.name)
    }

    /// Starts the consumer at `next`; with `bounded`, first sees whether anything is left.
    fn start(&mut self) -> Result<(), NatsError> {
        if self.end.is_some_and(|end| self.next > end) {
            self.done = true;
            return Ok(());
        }
        if self.started {
            // Found again (the open found it): the stream may be gone, or made again.
            self.stream = self.conn.stream(&self.config.stream)?;
            self.same_stream(self.stream.cached_info())?;
        }
        self.end_removed(self.stream.cached_info().state.first_sequence);
        if self.done {
            return Ok(());
        }
        let state = &self.stream.cached_info().state;
        let removed = removed_before(self.next, state.first_sequence);
        if removed > 0 {
            tracing::warn!(operator = %self.config.name, stream = %self.config.stream, from = self.next, first = state.first_sequence, removed, "the stream no longer holds the messages from the source's sequence to its first one (removed by its limits or deleted): they are not read, and the run's summary counts them (messages_removed_unread)");
            self.removed += removed;
            // Counted once: the consumer starts at the first message there is.
            self.next = state.first_sequence;
        }
        if self.next > state.last_sequence.saturating_add(1) {
            tracing::warn!(operator = %self.config.name, stream = %self.config.stream, from = self.next, last = state.last_sequence, "the checkpoint read further than the stream's last sequence: was the stream made again? messages are read from the checkpoint's sequence on");
        }
        let deliver_policy = match self.next {
            0 | 1 => DeliverPolicy::All,
            n => DeliverPolicy::ByStartSequence { start_sequence: n },
        };
        let config = OrderedConfig {
            filter_subject: self.config.subject.clone().unwrap_or_default(),
            deliver_policy,
            ..Default::default()
        };
        let what = || format!("starting a consumer of stream `{}`", self.config.stream);
        let consumer = self
            .conn
            .block_on(self.stream.create_consumer(config))
            .map_err(|e| NatsError::client(what(), e))?;
        if self.end.is_some() && consumer.cached_info().num_pending == 0 {
            self.done = true;
            return Ok(());
        }
        let messages = self
            .conn
            .block_on(consumer.messages())
            .map_err(|e| NatsError::client(what(), e))?;
        self.messages = Some(messages);
        Ok(())
    }

    /// Makes the consumer (again) unless a retry is not due yet; whether there is one now
    /// (or the source is done). The first start's failure is the query's; a later one (the
    /// server still gone, or back but JetStream not ready yet) is tried again with backoff,
    /// except a stream the server has said is missing for longer than the grace.
    fn ensure_consumer(&mut self) -> Result<bool, OperatorError> {
        if self.retry.is_some_and(|(at, _)| Instant::now() < at) {
            return Ok(false);
        }
        let connects = self.conn.connects();
        match self.start() {
            Ok(()) => {
                self.started = true;
                self.connects = connects;
                self.retry = None;
                self.missing_since = None;
                self.last_seen = Instant::now();
                Ok(true)
            }
            Err(e) if !self.started => Err(self.error(e)),
            Err(e @ NatsError::StreamRemade { .. }) => Err(self.error(e)),
            Err(e) => {
                let now = Instant::now();
                let mut wait = self.retry.map_or(RETRY_FIRST, |(_, w)| w);
                if matches!(e, NatsError::NoStream { .. }) {
                    let since = *self.missing_since.get_or_insert(now);
                    match missing_stream(now.duration_since(since), self.config.connect_timeout) {
                        Missing::GiveUp => return Err(self.error(self.lost(since, now))),
                        // The last try comes as the grace ends.
                        Missing::Wait(left) => wait = wait.min(left),
                    }
                }
                tracing::warn!(operator = %self.config.name, error = %e, retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX), "the NATS consumer cannot be made again yet");
                self.retry = Some((now + wait, (wait * 2).min(RETRY_MAX)));
                Ok(false)
            }
        }
    }

    /// The stream, missing from `since` to `now`, given up.
    fn lost(&self, since: Instant, now: Instant) -> NatsError {
        NatsError::StreamLost {
            stream: self.config.stream.clone(),
            server: super::connection::shown(&self.config.server),
            waited_ms: u64::try_from(now.duration_since(since).as_millis()).unwrap_or(u64::MAX),
            read_to: self.next.saturating_sub(1),
        }
    }

    /// Fails with [`NatsError::StreamRemade`] when the server, if it can be asked now, has
    /// another stream of that name than the one read (once one is read).
    fn check_same_stream(&self) -> Result<(), OperatorError> {
        if !self.started || !self.connected() {
            return Ok(());
        }
        match self.conn.stream(&self.config.stream) {
            Ok(stream) => self
                .same_stream(stream.cached_info())
                .map_err(|e| self.error(e)),
            // Gone, or not to be asked now: the polls find out and wait or fail.
            Err(_) => Ok(()),
        }
    }

    /// Whether the client is connected now (a lookup would otherwise wait for the server).
    fn connected(&self) -> bool {
        self.conn.js.client().connection_state() == async_nats::connection::State::Connected
    }

    /// After [`STREAM_CHECK`] without a message while connected: whether the stream is still
    /// there. When the server says it is not, the consumer is dropped, so that the next polls
    /// make it again, within the grace, or fail.
    fn check_stream(&mut self) -> Result<(), OperatorError> {
        let now = Instant::now();
        if self.messages.is_none() || now.duration_since(self.last_seen) < STREAM_CHECK {
            return Ok(());
        }
        self.last_seen = now;
        if !self.connected() {
            return Ok(());
        }
        match self.conn.stream(&self.config.stream) {
            Err(e @ NatsError::NoStream { .. }) => {
                tracing::warn!(operator = %self.config.name, error = %e, "the source's stream went away while it read it: it is looked for again until `connect.timeout` is out");
                self.missing_since = Some(now);
                self.messages = None;
                Ok(())
            }
            // Anything else (the server lost meanwhile, JetStream restarting) is the
            // consumer's and the client's to get over.
            Err(e) => {
                tracing::debug!(operator = %self.config.name, error = %e, "the source's stream could not be looked up");
                Ok(())
            }
            Ok(stream) => {
                let info = stream.cached_info();
                self.same_stream(info).map_err(|e| self.error(e))?;
                self.end_removed(info.state.first_sequence);
                Ok(())
            }
        }
    }

    /// A bounded source whose stream's first message is now past the end (those up to it
    /// were purged or deleted before it read them) has nothing left to read: it is done, and
    /// counts what was removed (without a subject filter, where every sequence is its own).
    fn end_removed(&mut self, first: u64) {
        let Some(end) = self.end.filter(|end| first > *end) else {
            return;
        };
        let removed = if self.config.subject.is_none() {
            removed_before(self.next, end + 1)
        } else {
            0
        };
        tracing::warn!(operator = %self.config.name, stream = %self.config.stream, from = self.next, end, first, removed, "the stream no longer holds the messages from the source's sequence to its end (purged or deleted): they are not read, the source ends, and the run's summary counts them (messages_removed_unread)");
        self.removed += removed;
        self.next = end + 1;
        self.done = true;
    }

    /// Up to `max` messages, waiting until `deadline` at most for the first.
    fn fetch(&mut self, max: usize, deadline: Instant) -> Result<Vec<Polled>, NatsError> {
        let Some(messages) = self.messages.as_mut() else {
            return Ok(Vec::new());
        };
        let first_wait = deadline
            .saturating_duration_since(Instant::now())
            .min(POLL_WAIT);
        let end = self.end;
        let from = self.next;
        let stream = self.config.stream.as_str();
        let name = self.config.name.as_str();
        // Without a filter, every sequence is the source's: one skipped was removed.
        let every_sequence = self.config.subject.is_none();
        let (polled, next, done, removed) = self.conn.block_on(async {
            let mut polled = Vec::new();
            let mut next = None;
            let mut done = false;
            let mut removed = 0;
            while polled.len() < max && !done {
                let wait = if polled.is_empty() {
                    first_wait
                } else {
                    Duration::ZERO
                };
                let m = match tokio::time::timeout(wait, messages.next()).await {
                    Err(_) => break,
                    Ok(None) => {
                        return Err(NatsError::client(
                            format!("reading stream `{stream}`"),
                            "the consumer ended",
                        ))
                    }
                    Ok(Some(Err(e))) => {
                        // The ordered consumer recreates itself where it can; what reaches
                        // here is for the user to see, not a reason to stop.
                        tracing::warn!(operator = %name, error = %e, "NATS consumer error");
                        continue;
                    }
                    Ok(Some(Ok(m))) => m,
                };
                let info = m
                    .info()
                    .map_err(|e| NatsError::client("reading a message's metadata", e))?;
                let seq = info.stream_sequence;
                // Emitted already: a consumer the client made again on its own starts at the
                // stream's first message when the one before had delivered none.
                if seq < next.unwrap_or(from) {
                    tracing::debug!(operator = %name, seq, "a message before the source's position, skipped");
                    continue;
                }
                if let Some(end) = end.filter(|end| seq > *end) {
                    // Past the end: the messages up to it that were not read were removed
                    // (a purge, then messages published after it).
                    if every_sequence {
                        removed += removed_before(next.unwrap_or(from), end + 1);
                    }
                    done = true;
                    break;
                }
                if every_sequence {
                    removed += removed_before(next.unwrap_or(from), seq);
                }
                next = Some(seq + 1);
                // The last message of the stream as of the start, or the last of the subject
                // before it.
                if end.is_some_and(|end| seq >= end || info.pending == 0) {
                    done = true;
                }
                let published = info.published.unix_timestamp_nanos() / 1_000_000;
                polled.push(Polled {
                    split: 0,
                    offset: i64::try_from(seq).unwrap_or(i64::MAX),
                    timestamp: i64::try_from(published).ok(),
                    value: Some(m.payload.to_vec()),
                });
            }
            Ok((polled, next, done, removed))
        })?;
        if let Some(n) = next {
            self.next = n;
        }
        if removed > 0 {
            tracing::warn!(operator = %self.config.name, stream = %self.config.stream, removed, "messages of the stream were removed before the source read them (by its limits, or deleted): they are not read, and the run's summary counts them (messages_removed_unread)");
            self.removed += removed;
        }
        self.done |= done;
        Ok(polled)
    }

    /// Sends the messages that did not decode to the dead letters (or fails).
    fn reject(&self, bad: Vec<Bad>) -> Result<(), OperatorError> {
        for b in bad {
            let source = format!("{}@{}", self.config.stream, b.offset);
            let line = u64::try_from(b.offset).unwrap_or(0);
            if self.config.fail_on_error {
                return Err(OperatorError::BadRecord {
                    operator: self.config.name.clone(),
                    source_name: source,
                    line,
                    reason: b.reason,
                });
            }
            let record = RejectedRecord {
                source,
                line,
                reason: b.reason,
                record: b.record,
            };
            self.dead_letter
                .reject(&self.config.name, &record)
                .map_err(|e| self.dead_letter.write_error(&self.config.name, e))?;
        }
        Ok(())
    }
}

impl Source for NatsSource {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn watermarks(&self) -> Option<WatermarkSpec> {
        self.config.watermarks
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        [
            ("empty_records", self.empty),
            ("messages_removed_unread", self.removed),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect()
    }

    fn can_resume(&self) -> Result<(), String> {
        Ok(())
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        // The consumer reads on from its sequence in a stream made again without a word:
        // no checkpoint keeps a position in it (the rows read from it since the last one
        // are then in none).
        self.check_same_stream()?;
        let position = Position {
            stream: self.config.stream.clone(),
            next: self.next,
            end: self.end,
            created: Some(self.created.clone()),
        };
        out.inline_typed(&self.config.name, &position)
    }

    fn restore(&mut self, state: RestoreIn) -> Result<(), OperatorError> {
        let position: Position = state.inline_as(&self.config.name)?;
        if position.stream != self.config.stream {
            return Err(self.error(NatsError::Checkpoint(format!(
                "it read stream `{}`, this run reads `{}`",
                position.stream, self.config.stream
            ))));
        }
        if let Some(then) = position.created.filter(|c| *c != self.created) {
            return Err(self.error(NatsError::StreamRemade {
                stream: self.config.stream.clone(),
                server: super::connection::shown(&self.config.server),
                then,
                now: self.created.clone(),
                next: position.next,
                found: RemadeFound::Restoring,
            }));
        }
        self.next = position.next;
        if position.end.is_some() {
            self.end = position.end;
        }
        Ok(())
    }

    fn poll(&mut self, max_rows: usize, deadline: Instant) -> Result<SourcePoll, OperatorError> {
        if self.messages.is_some() && self.conn.connects() != self.connects {
            tracing::info!(operator = %self.config.name, stream = %self.config.stream, from = self.next, "connected to the NATS server again: the consumer is made again from the source's position");
            self.messages = None;
        }
        if self.messages.is_none() && !self.done && !self.ensure_consumer()? {
            return Ok(SourcePoll::Idle);
        }
        if self.done {
            return Ok(SourcePoll::Exhausted);
        }
        let polled = self.fetch(max_rows, deadline).map_err(|e| self.error(e))?;
        if polled.is_empty() {
            if self.done {
                return Ok(SourcePoll::Exhausted);
            }
            self.check_stream()?;
            return Ok(SourcePoll::Idle);
        }
        self.last_seen = Instant::now();
        // A busy source's consumer reads on from its sequence in a stream made again: it asks
        // every STREAM_CHECK, before passing on what it read.
        if self.last_seen.duration_since(self.stream_checked) >= STREAM_CHECK {
            self.stream_checked = self.last_seen;
            self.check_same_stream()?;
        }
        let rows = self
            .decoder
            .decode(&polled)
            .map_err(|e| OperatorError::Config {
                operator: self.config.name.clone(),
                message: e.to_string(),
            })?;
        self.empty += rows.empty;
        self.reject(rows.bad)?;
        Ok(match rows.batch {
            Some(b) if b.num_rows() > 0 => SourcePoll::Batch(b),
            // Only rejects: a bounded source that is done says so at the next poll.
            _ => SourcePoll::Idle,
        })
    }
}

/// At a fresh start with a lineage: refuses a stream made at another time than the one the
/// earlier run of the lineage read (a run killed before its first checkpoint, started again),
/// as kept beside the lineage; keeps this one's when none is kept.
fn same_stream_as_earlier_run(
    config: &SourceConfig,
    created: &str,
    ctx: &anduin_operator_api::BuildContext,
) -> Result<(), NatsError> {
    let Some(facts) = &ctx.lineage_facts else {
        return Ok(());
    };
    let kept = facts
        .keep(&config.name, STREAM_CREATED, created)
        .map_err(|e| NatsError::client("keeping when the stream was made beside the lineage", e))?;
    match kept {
        KeptFact::Differs { kept } => Err(NatsError::StreamRemade {
            stream: config.stream.clone(),
            server: super::connection::shown(&config.server),
            then: kept,
            now: created.to_string(),
            next: 1,
            found: RemadeFound::StartingAgain,
        }),
        _ => Ok(()),
    }
}

/// The fact a source keeps beside the lineage: when its stream was made.
const STREAM_CREATED: &str = "stream.created";

/// How many messages the stream removed before a source whose next message is at sequence
/// `next` came to them, when the first it has (or delivers) is at `first`: none at the start
/// of the stream (`next` 1: a stream whose first messages went before the source ever read
/// it has lost nothing of the source's).
fn removed_before(next: u64, first: u64) -> u64 {
    if next > 1 {
        first.saturating_sub(next)
    } else {
        0
    }
}

/// What a source does about a stream the server has said is missing for `missing`.
#[derive(Debug, PartialEq, Eq)]
enum Missing {
    /// Look for it again, at the latest once this is out (the rest of the grace).
    Wait(Duration),
    /// Fail the query: it did not come back within the grace.
    GiveUp,
}

/// Whether a stream missing for `missing` may still come back within `grace`.
fn missing_stream(missing: Duration, grace: Duration) -> Missing {
    match grace.checked_sub(missing) {
        Some(left) if !left.is_zero() => Missing::Wait(left),
        _ => Missing::GiveUp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_removed_after_the_sources_position_are_counted_and_none_before_it_starts() {
        // Issue 19 (L3): messages lost to the stream's limits were only in a WARN.
        assert_eq!(removed_before(6, 16), 10);
        assert_eq!(removed_before(6, 6), 0);
        assert_eq!(removed_before(6, 3), 0, "a message before the position");
        assert_eq!(
            removed_before(1, 16),
            0,
            "a fresh start reads what there is"
        );
        assert_eq!(removed_before(0, 16), 0);
    }

    #[test]
    fn a_missing_stream_is_looked_for_again_until_the_grace_is_out_then_given_up() {
        let grace = Duration::from_secs(10);
        assert_eq!(missing_stream(Duration::ZERO, grace), Missing::Wait(grace));
        assert_eq!(
            missing_stream(Duration::from_secs(7), grace),
            Missing::Wait(Duration::from_secs(3))
        );
        assert_eq!(missing_stream(grace, grace), Missing::GiveUp);
        assert_eq!(
            missing_stream(Duration::from_secs(11), grace),
            Missing::GiveUp
        );
        assert_eq!(
            missing_stream(Duration::ZERO, Duration::ZERO),
            Missing::GiveUp
        );
    }

    #[test]
    fn a_lost_stream_names_itself_its_server_and_what_to_do() {
        let e = NatsError::StreamLost {
            stream: "EVENTS".into(),
            server: "nats://127.0.0.1:4222".into(),
            waited_ms: 10_000,
            read_to: 3,
        }
        .to_string();
        for part in [
            "stream `EVENTS` no longer exists on the NATS server at nats://127.0.0.1:4222",
            "up to sequence 3",
            "recreate it (`nats stream add EVENTS",
            "run the query again with --from-scratch",
        ] {
            assert!(e.contains(part), "{part} not in {e}");
        }
    }
}
