//! The NATS sink: one message a row, published to a subject of a JetStream stream, exactly
//! once within the stream's duplicate window through message ids (see [`super::dedup`]).
//!
//! Each row is published as it comes, with the `Nats-Msg-Id` of its place in the instance's
//! output; the acknowledgements are awaited in bulk, and all of them before the instance's
//! part of a checkpoint is taken, so that a completed checkpoint never covers a row the
//! stream did not store. The checkpoint keeps the count of rows and the lineage. A resumed
//! run publishes the rows after the checkpoint again with the ids they had: JetStream drops
//! those it already holds, when it stored them within its duplicate window (2 minutes by
//! default). The sink refuses a stream whose window is shorter than `min_duplicate_window`.
//!
//! Rows are visible to readers as soon as they are stored, not one checkpoint late (there
//! are no transactions in JetStream); a reader may thus see rows of a run that is then
//! killed, and sees them once.

use std::time::Duration;

use anduin_operator_api::{Collector, Operator, OperatorError, RestoreIn, SnapshotOut};
use arrow::record_batch::RecordBatch;
use async_nats::jetstream;
use async_nats::jetstream::context::PublishAckFuture;
use async_nats::jetstream::message::PublishMessage;

use super::connection::Connection;
use super::dedup::{
    beyond_window, check_window, fresh_lineage, message_id, resumed_lineage, WindowCheck,
};
use super::error::NatsError;
use crate::kafka::encode::RowEncoder;

/// How many publishes may wait for their acknowledgement before the sink waits for them
/// (below the client's own limit of 5 000 in flight).
const MAX_PENDING: usize = 1024;

/// What a sink instance is made of (read from its params when bound).
#[derive(Clone)]
pub(crate) struct SinkConfig {
    pub name: String,
    pub server: String,
    pub stream: String,
    pub subject: String,
    pub connect_timeout: Duration,
    pub min_duplicate_window: Duration,
    /// `delivery = 'exactly-once'` (the default): a resumed run gives rows the ids they had.
    /// Otherwise each start draws a lineage of its own and a resumed run writes again the
    /// rows after its checkpoint under new ids.
    pub exactly_once: bool,
}

/// What a checkpoint keeps of a sink instance.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Inline {
    /// The lineage of the ids (set at a fresh start).
    lineage: String,
    /// The rows received before the checkpoint: the number of the next one.
    next_row: u64,
    /// The digest of the query that took the checkpoint (`BuildContext::query_digest`);
    /// `None` in a checkpoint of an older anduin, or from a runner that does not say.
    #[serde(default)]
    query: Option<String>,
    /// When the checkpoint was taken (wall clock, ms since the epoch); `None` in a
    /// checkpoint of an older anduin.
    #[serde(default)]
    taken_at_ms: Option<u64>,
}

/// Rows stored and rows the stream dropped as duplicates.
#[derive(Debug, Default, Clone, Copy)]
struct Acked {
    stored: u64,
    duplicates: u64,
}

/// A running NATS sink instance.
pub(crate) struct NatsSink {
    config: SinkConfig,
    conn: Connection,
    encoder: RowEncoder,
    /// `{query}`, `{sink}` and `{instance}` of the ids.
    query: String,
    instance: usize,
    lineage: String,
    /// The digest of the query as it runs, and the checkpoint it was restored from.
    digest: Option<String>,
    restore_epoch: u64,
    /// Whether the lineage began with this run (no restore).
    fresh: bool,
    /// Whether it said that a fresh start met duplicates.
    warned: bool,
    /// How long the stream keeps message ids.
    window: Duration,
    next_row: u64,
    /// Publishes not yet acknowledged, in order.
    pending: Vec<PublishAckFuture>,
    acked: Acked,
}

impl NatsSink {
    /// Connects, finds the stream, and checks that it stores the subject and keeps message
    /// ids long enough.
    pub(crate) fn open(
        config: SinkConfig,
        encoder: RowEncoder,
        ctx: &anduin_operator_api::BuildContext,
    ) -> Result<Self, NatsError> {
        let conn = Connection::open(
            &config.server,
            config.connect_timeout,
            &format!("anduin {}", config.name),
        )?;
        let stream = conn.stream(&config.stream)?;
        let info = stream.cached_info();
        super::check_subject(
            super::Role::Sink,
            &config.subject,
            &config.stream,
            &info.config.subjects,
        )?;
        let window = info.config.duplicate_window;
        let exactly_once = ctx.checkpointing && config.exactly_once;
        let interval = ctx.checkpoint_interval;
        match check_window(window, config.min_duplicate_window, exactly_once, interval) {
            WindowCheck::Enough | WindowCheck::NotNeeded => {}
            WindowCheck::ShorterThanCheckpoints => {
                return Err(NatsError::WindowShorterThanCheckpoints {
                    sink: config.name.clone(),
                    stream: config.stream.clone(),
                    window_ms: millis(window),
                    interval_ms: millis(interval.unwrap_or_default()),
                })
            }
            WindowCheck::TooShort => {
                return Err(NatsError::ShortDuplicateWindow {
                    stream: config.stream.clone(),
                    window_ms: millis(window),
                    needed_ms: millis(config.min_duplicate_window),
                })
            }
        }
        Ok(Self {
            query: ctx.query.as_deref().unwrap_or("query").to_string(),
            instance: ctx.instance,
            lineage: fresh_lineage(exactly_once, ctx.lineage.as_deref()),
            digest: ctx.query_digest.as_deref().map(String::from),
            restore_epoch: ctx.restore_epoch.map_or(0, |e| e.0),
            fresh: true,
            warned: false,
            window,
            next_row: 0,
            pending: Vec::new(),
            acked: Acked::default(),
            config,
            conn,
            encoder,
        })
    }

    fn error(&self, e: NatsError) -> OperatorError {
        e.for_operator(&self.config.name)
    }

    /// Publishes `values`, the next rows, each with its id.
    fn publish(&mut self, values: Vec<Vec<u8>>) -> Result<(), NatsError> {
        let Self {
            config,
            conn,
            query,
            instance,
            lineage,
            next_row,
            pending,
            acked,
            ..
        } = self;
        let js = &conn.js;
        // A row larger than this fails to publish: said here with the row it is.
        let max_payload = js.client().max_payload();
        conn.block_on(async {
            for value in values {
                if pending.len() >= MAX_PENDING {
                    drain(pending, acked, config).await?;
                }
                let id = message_id(query, &config.name, *instance, lineage, *next_row);
                if value.len() > max_payload {
                    return Err(NatsError::client(
                        publishing_what(config),
                        format!("the row that begins {} is larger than the server takes (its `max_payload`: {max_payload} bytes); raise `max_payload` in the server's configuration, or write smaller rows", crate::codec::row_beginning(&value)),
                    ));
                }
                let message = PublishMessage::build().payload(value.into()).message_id(id);
                let ack = js
                    .send_publish(config.subject.clone(), message)
                    .await
                    .map_err(|e| publishing(config, e))?;
                pending.push(ack);
                *next_row += 1;
            }
            Ok(())
        })
    }

    /// Waits for every publish's acknowledgement.
    fn flush(&mut self) -> Result<(), OperatorError> {
        let Self {
            config,
            conn,
            pending,
            acked,
            ..
        } = self;
        conn.block_on(drain(pending, acked, config))
            .map_err(|e| e.for_operator(&config.name))?;
        self.warn_once();
        Ok(())
    }

    /// Says once that a fresh start met duplicates (they are counted as acknowledgements are
    /// awaited, in bulk while publishing and at a flush).
    fn warn_once(&mut self) {
        if self.fresh && !self.warned && self.acked.duplicates > 0 {
            self.warned = true;
            tracing::warn!(operator = %self.config.name, stream = %self.config.stream, "this run started afresh, and the stream already held rows with its message ids (an earlier run of this query within the duplicate window): it keeps those and drops these. Expected after a run killed before its first checkpoint; if this run started over on purpose, give it another --name or wait out the window");
        }
    }
}

/// The wall clock in milliseconds since the epoch (0 before it).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, millis)
}

/// `d` in milliseconds, for messages.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Waits for the acknowledgements of `pending`, counting them into `acked`.
async fn drain(
    pending: &mut Vec<PublishAckFuture>,
    acked: &mut Acked,
    config: &SinkConfig,
) -> Result<(), NatsError> {
    for ack in pending.drain(..) {
        let a = ack.await.map_err(|e| publishing(config, e))?;
        if a.duplicate {
            acked.duplicates += 1;
        } else {
            acked.stored += 1;
        }
    }
    Ok(())
}

/// A publish that failed. No stream taking the subject is said in the user's terms: the
/// sink does not wait for its stream to come back (a publish that nobody stores is not
/// retried; the query fails and resumes from its checkpoint once the stream is there).
fn publishing(config: &SinkConfig, e: jetstream::context::PublishError) -> NatsError {
    if e.kind() == jetstream::context::PublishErrorKind::StreamNotFound {
        return NatsError::client(
            publishing_what(config),
            format!(
                "{e}: the stream is gone (deleted, or the server came back without its store) or JetStream is not up yet; recreate the stream if it is gone (`nats stream add {} --subjects {}`) and run the query again, which resumes from its last checkpoint",
                config.stream, config.subject
            ),
        );
    }
    NatsError::client(publishing_what(config), e)
}

/// What a sink does when a publish fails, for its message: the subject, the stream and the
/// server.
fn publishing_what(config: &SinkConfig) -> String {
    format!(
        "publishing to subject `{}` of stream `{}` on the NATS server at {}",
        config.subject,
        config.stream,
        super::connection::shown(&config.server)
    )
}

impl Operator for NatsSink {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let values = self.encoder.rows(&batch);
        self.publish(values).map_err(|e| self.error(e))?;
        self.warn_once();
        Ok(())
    }

    fn is_stateless(&self) -> bool {
        false
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        self.flush()?;
        let inline = Inline {
            lineage: self.lineage.clone(),
            next_row: self.next_row,
            query: self.digest.clone(),
            taken_at_ms: Some(now_ms()),
        };
        out.inline_typed(&self.config.name, &inline)
    }

    fn restore(&mut self, state: RestoreIn) -> Result<(), OperatorError> {
        let inline: Inline = state.inline_as(&self.config.name)?;
        // At least once, a resumed run keeps the lineage it drew: the rows after the
        // checkpoint, in whatever order they come, are written again under new ids. Exactly
        // once, it numbers them on from the checkpoint's count, in the checkpoint's lineage if
        // the same query took it, else in one of their own (`resumed_lineage`).
        if self.config.exactly_once {
            self.lineage = resumed_lineage(
                &inline.lineage,
                inline.query.as_deref(),
                self.digest.as_deref(),
                self.restore_epoch,
            );
            self.fresh = false;
            self.next_row = inline.next_row;
            // probe48 M3: resumed after the window, rows may be stored twice; say so.
            let beyond = inline
                .taken_at_ms
                .and_then(|t| beyond_window(t, now_ms(), self.window));
            if let Some(beyond) = beyond {
                tracing::warn!(
                    operator = %self.config.name,
                    stream = %self.config.stream,
                    epoch = state.epoch.0,
                    window_s = self.window.as_secs_f64(),
                    beyond_s = beyond.as_secs_f64(),
                    "checkpoint {} was taken more than the stream's duplicate window ago ({:.0} s beyond it): the rows written after it and written again now may be stored twice (exactly once holds only for a run resumed within the window; raise the stream's duplicate window to cover the longest outage)",
                    state.epoch.0,
                    beyond.as_secs_f64()
                );
            }
        }
        Ok(())
    }

    fn on_end_of_input(&mut self, _out: &mut dyn Collector) -> Result<(), OperatorError> {
        self.flush()?;
        tracing::debug!(operator = %self.config.name, stored = self.acked.stored, duplicates = self.acked.duplicates, "NATS sink done");
        Ok(())
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        let mut metrics = vec![
            ("messages_stored", self.acked.stored),
            ("duplicates_dropped", self.acked.duplicates),
        ];
        // Published, their acknowledgements not awaited: a run that stopped without ending
        // the sink (an operator before it gave up the end of its input) leaves them so
        // (probe40 L9: the summary counted them nowhere). The resumed run publishes them
        // again, and the stream drops those it stored.
        if !self.pending.is_empty() {
            metrics.push(("messages_unconfirmed", self.pending.len() as u64));
        }
        metrics
    }
}
