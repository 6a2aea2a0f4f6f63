//! The Kafka sink: rows to records of one topic, exactly once through Kafka transactions
//! tied to checkpoints (see [`super::journal`]), or at least once.
//!
//! Exactly once: the rows of each checkpoint epoch wait in the journal (and in the
//! checkpoint) until that checkpoint completes; then one transaction writes them, each with
//! the headers `anduin.sink` (the instance's `transactional.id`), `anduin.epoch` and
//! `anduin.index`, and commits. Each instance has a stable `transactional.id`
//! (`{prefix}-{instance}`): a resumed run's producer fences the killed run's and aborts its
//! open transaction, then writes what the checkpoint's journal holds and the topic does not
//! show yet. Readers with `isolation.level = read_committed` see every row once. Rows become
//! visible one checkpoint interval late.
//!
//! At least once: rows are produced as they come; each checkpoint waits until every record
//! sent is acknowledged. A restore writes the rows after the checkpoint again.
//!
//! A broker lost while running stalls the sink, which tries again until it answers (see
//! [`super::outage`]). A row too large for a record (the producer's `message.max.bytes`)
//! fails the run when it reaches the sink, naming it, before a checkpoint holds it.

use std::cell::Cell;
use std::collections::HashSet;
use std::time::{Duration, Instant};

use anduin_operator_api::{
    Collector, Operator, OperatorError, RestoreIn, SnapshotOut, StopRequest,
};
use anduin_types::{Epoch, SnapshotKind};
use arrow::record_batch::RecordBatch;
use rdkafka::error::{KafkaError as RdError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, Producer};

use super::deliveries::Deliveries;
use super::encode::RowEncoder;
use super::error::KafkaError;
use super::journal::{Journal, Record};
use super::options::{Client, Delivery};
use super::read_back::read_back;

mod send;

/// How long a restore's read-back of the topic may take.
const READ_BACK_TIMEOUT: Duration = Duration::from_secs(60);

/// librdkafka's `message.max.bytes` when the sink's properties do not set it.
const DEFAULT_MAX_MESSAGE: usize = 1_000_000;

/// What a sink instance is made of (read from its params when bound).
#[derive(Clone)]
pub(crate) struct SinkConfig {
    pub name: String,
    pub client: Client,
    pub topic: String,
    pub delivery: Option<Delivery>,
    pub transactional_prefix: Option<String>,
    pub key_columns: Vec<usize>,
}

/// Where the sink's read-back starts in each partition, as a checkpoint keeps it.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Inline {
    /// The instance's `transactional.id`.
    transactional_id: String,
    /// Each partition's end offset when the checkpoint was taken: records sent after it
    /// (every record of the journal) are at or after it.
    from: Vec<(i32, i64)>,
}

/// The producer of sink instance `id`: transactional when it writes exactly once (then
/// [`fence`] it before its first transaction).
fn producer(
    config: &SinkConfig,
    delivery: Delivery,
    id: &str,
) -> Result<BaseProducer<Deliveries>, KafkaError> {
    let c = &config.client;
    let mut settings = vec![("enable.idempotence", "true"), ("acks", "all")];
    match delivery {
        Delivery::ExactlyOnce => {
            // A record not delivered within this makes its transaction fail; the sink then
            // writes the transaction again (see `KafkaSink::transact`).
            settings.push(("message.timeout.ms", "60000"));
            settings.push(("transactional.id", id));
            settings.push(("transaction.timeout.ms", "60000"));
        }
        // librdkafka keeps a record until it is delivered, however long the broker is lost.
        Delivery::AtLeastOnce => settings.push(("message.timeout.ms", "0")),
    }
    let producer: BaseProducer<Deliveries> = c
        .config(&settings)
        .create_with_context(Deliveries::default())
        .map_err(|e| KafkaError::Settings(e.to_string()))?;
    Ok(producer)
}

/// Starts the transactional `producer` of a sink writing exactly once, which fences the
/// producers of earlier runs with its `transactional.id` and aborts their open transactions.
fn fence(
    producer: &BaseProducer<Deliveries>,
    config: &SinkConfig,
    delivery: Delivery,
) -> Result<(), KafkaError> {
    if delivery != Delivery::ExactlyOnce {
        return Ok(());
    }
    let c = &config.client;
    producer.init_transactions(c.connect_timeout).map_err(|e| {
        unreachable_or(
            &c.servers,
            c.connect_timeout,
            "starting the transactional producer",
            e,
        )
    })
}

/// A running Kafka sink instance.
pub(crate) struct KafkaSink {
    config: SinkConfig,
    delivery: Delivery,
    producer: BaseProducer<Deliveries>,
    /// `{prefix}-{instance}`: names the producer (exactly once) and marks its records.
    id: String,
    partitions: Vec<i32>,
    /// Each partition's end offset when last read (at the start, then at each checkpoint):
    /// every record the sink sends later is at or after it.
    from: Vec<(i32, i64)>,
    /// Whether [`KafkaSink::connect`] was done: not yet in a run that only commits.
    connected: bool,
    /// The producer's `message.max.bytes`: no record may be larger.
    max_message: usize,
    values: RowEncoder,
    keys: RowEncoder,
    journal: Journal,
    /// Since when calls to the broker fail, if they do (see [`super::outage`]).
    lost_since: Cell<Option<Instant>>,
    /// The run's stop: rows left uncommitted at the end of a stopped run are the resumed
    /// run's to write; at the end of a run not stopped, they make the run fail.
    stop: StopRequest,
    /// The rows a stopped run left uncommitted (its `uncommitted_rows` figure, which the
    /// stopped run's last line names).
    left: u64,
}

impl KafkaSink {
    /// Connects; exactly once, fences the producers of earlier runs with the same id.
    pub(crate) fn open(
        config: SinkConfig,
        values: RowEncoder,
        keys: RowEncoder,
        ctx: &anduin_operator_api::BuildContext,
    ) -> Result<Self, KafkaError> {
        let delivery = match (config.delivery, ctx.checkpointing) {
            (Some(Delivery::ExactlyOnce), false) => {
                return Err(KafkaError::Settings(
                    "`sink.delivery-guarantee = 'exactly-once'` needs checkpoints (anduin run --checkpoint-store …): its transactions commit with them".into(),
                ))
            }
            (Some(d), _) => d,
            (None, true) => Delivery::ExactlyOnce,
            (None, false) => Delivery::AtLeastOnce,
        };
        let prefix = config.transactional_prefix.clone().unwrap_or_else(|| {
            format!(
                "anduin-{}-{}",
                ctx.query.as_deref().unwrap_or("query"),
                config.name
            )
        });
        let id = format!("{prefix}-{}", ctx.instance);
        let producer = producer(&config, delivery, &id)?;
        let max_message = config
            .client
            .properties
            .iter()
            .find(|(k, _)| k == "message.max.bytes")
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(DEFAULT_MAX_MESSAGE);
        let mut sink = Self {
            config,
            delivery,
            producer,
            id,
            partitions: Vec::new(),
            from: Vec::new(),
            connected: false,
            max_message,
            values,
            keys,
            journal: Journal::default(),
            stop: ctx.stop.clone(),
            lost_since: Cell::new(None),
            left: 0,
        };
        // Run only to commit what a finished query's checkpoint holds, it connects when its
        // restore finds something (probe42: a finished query run again needed the broker).
        if !ctx.commit_only {
            sink.connect()?;
        }
        Ok(sink)
    }

    /// Reads the topic's partitions and their end offsets; exactly once, fences the
    /// producers of earlier runs with the sink's `transactional.id`.
    fn connect(&mut self) -> Result<(), KafkaError> {
        let c = &self.config.client;
        self.partitions = super::metadata::partitions(
            self.producer.client(),
            &self.config.topic,
            &c.servers,
            c.connect_timeout,
        )?;
        self.from = ends(&self.producer, &self.config, &self.partitions)?;
        fence(&self.producer, &self.config, self.delivery)?;
        self.connected = true;
        Ok(())
    }

    fn error(&self, e: KafkaError) -> OperatorError {
        e.for_operator(&self.config.name)
    }
}

/// Each partition of the sink's topic's end offset now.
fn ends(
    producer: &BaseProducer<Deliveries>,
    config: &SinkConfig,
    partitions: &[i32],
) -> Result<Vec<(i32, i64)>, KafkaError> {
    partitions
        .iter()
        .map(|&p| {
            producer
                .client()
                .fetch_watermarks(&config.topic, p, config.client.connect_timeout)
                .map(|(_, high)| (p, high))
                .map_err(|e| {
                    KafkaError::client(format!("reading the end offset of {}/{p}", config.topic), e)
                })
        })
        .collect()
}

/// A failed first call: the brokers could not be reached, or something else.
fn unreachable_or(servers: &str, timeout: Duration, what: &str, e: RdError) -> KafkaError {
    match e.rdkafka_error_code() {
        Some(
            RDKafkaErrorCode::OperationTimedOut
            | RDKafkaErrorCode::BrokerTransportFailure
            | RDKafkaErrorCode::AllBrokersDown,
        ) => KafkaError::Unreachable {
            servers: servers.to_string(),
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            cause: e.to_string(),
        },
        _ => KafkaError::client(what, e),
    }
}

impl Operator for KafkaSink {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        if self.left > 0 {
            vec![("uncommitted_rows", self.left)]
        } else {
            Vec::new()
        }
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let values = self.values.rows(&batch);
        let keys = if self.config.key_columns.is_empty() {
            None
        } else {
            let projected = batch
                .project(&self.config.key_columns)
                .map_err(|e| OperatorError::internal(&self.config.name, e.to_string()))?;
            Some(self.keys.rows(&projected))
        };
        for (i, value) in values.into_iter().enumerate() {
            let key = keys.as_ref().and_then(|k| k.get(i).cloned());
            let r = Record { key, value };
            if self.may_be_too_large(&r) {
                // Found only at the commit, it would fail every run resumed from the
                // checkpoint that holds it (probe41 M1).
                return Err(self.error(self.too_large(&r)));
            }
            match self.delivery {
                Delivery::ExactlyOnce => self.journal.push(r),
                Delivery::AtLeastOnce => {
                    self.send(&r, None).map_err(|e| self.error(e))?;
                }
            }
        }
        self.producer.poll(Duration::ZERO);
        Ok(())
    }

    fn is_stateless(&self) -> bool {
        false
    }

    fn commits_only_with_checkpoints(&self) -> bool {
        self.delivery == Delivery::ExactlyOnce
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        match self.delivery {
            Delivery::AtLeastOnce => self.flush(),
            Delivery::ExactlyOnce => {
                self.journal.close(out.epoch().0);
                // With the broker lost, the ends read before are still before every record
                // sent later: the checkpoint is taken, and the commit waits for the broker.
                // Not asked while the broker is known lost (a stop would wait for the answer).
                let read = match self.lost_since.get() {
                    Some(_) => None,
                    None => Some(ends(&self.producer, &self.config, &self.partitions)),
                };
                match read {
                    Some(Ok(from)) => self.from = from,
                    Some(Err(e)) => {
                        self.lost_since.set(Some(Instant::now()));
                        tracing::info!(operator = %self.config.name, error = %e, "the checkpoint keeps the end offsets read before")
                    }
                    None => {}
                }
                let inline = Inline {
                    transactional_id: self.id.clone(),
                    from: self.from.clone(),
                };
                let stream = out.stream(SnapshotKind::Full)?;
                self.journal.write(stream).map_err(|e| OperatorError::Io {
                    operator: self.config.name.clone(),
                    path: "checkpoint".into(),
                    source: e,
                })?;
                out.inline_typed(&self.config.name, &inline)
            }
        }
    }

    fn restore(&mut self, mut state: RestoreIn) -> Result<(), OperatorError> {
        if self.delivery == Delivery::AtLeastOnce {
            return Ok(());
        }
        let inline: Inline = state.inline_as(&self.config.name)?;
        let Some(file) = state.files.last_mut() else {
            return Err(self.error(KafkaError::Checkpoint(
                "it holds no journal of this sink".into(),
            )));
        };
        let mut journal = Journal::read(file.as_mut()).map_err(|e| {
            self.error(KafkaError::Checkpoint(format!(
                "its journal cannot be read: {e}"
            )))
        })?;
        if !self.connected {
            // Only committing: nothing to do without a journal; else under the checkpoint's id.
            if journal.uncommitted() == (0, 0) {
                return Ok(());
            }
            self.id = inline.transactional_id.clone();
            self.producer =
                producer(&self.config, self.delivery, &self.id).map_err(|e| self.error(e))?;
            self.connect().map_err(|e| self.error(e))?;
        }
        if inline.transactional_id != self.id {
            // The query was renamed (or its prefix changed) since the checkpoint: the sink
            // goes on under the checkpoint's id, which fences the killed run's producer and
            // marks the records the read-back must find (probe41 H4: it read back under the
            // new id, found none, and wrote the committed records again).
            tracing::info!(operator = %self.config.name, was = %inline.transactional_id, now = %self.id, "the sink's transactional.id changed since the checkpoint: it keeps the checkpoint's");
            let adopted = producer(&self.config, self.delivery, &inline.transactional_id)
                .and_then(|p| fence(&p, &self.config, self.delivery).map(|()| p))
                .map_err(|e| self.error(e))?;
            self.producer = adopted;
            self.id = inline.transactional_id.clone();
        }
        let visible = read_back(
            &self.config.client,
            &self.config.topic,
            &self.id,
            &inline.from,
            READ_BACK_TIMEOUT,
        )
        .map_err(|e| self.error(e))?;
        for (epoch, records) in journal.take_through(state.epoch.0) {
            self.transact(epoch, &records, &visible)
                .map_err(|e| self.error(e))?;
        }
        Ok(())
    }

    fn handle_commit(&mut self, epoch: Epoch) -> Result<(), OperatorError> {
        let mut taken = self.journal.take_through(epoch.0).into_iter();
        while let Some((e, records)) = taken.next() {
            let written = if self.stop.asked() && self.lost_since.get().is_some() {
                Err(self
                    .outage()
                    .stopped(&format!("committing checkpoint {e}"), "not tried"))
            } else {
                self.transact(e, &records, &HashSet::new())
            };
            match written {
                Ok(()) => {}
                // The run stops while the broker is lost: the rows stay in the journal, so
                // that the stop's last checkpoint keeps them too, and the run ends as a
                // stopped one does (the resumed run writes them).
                Err(err @ KafkaError::Stopped { .. }) => {
                    tracing::warn!(operator = %self.config.name, epoch = e, error = %err, "not committed: the run stops while the Kafka broker is lost");
                    self.journal
                        .put_back(std::iter::once((e, records)).chain(taken));
                    return Ok(());
                }
                Err(err) => return Err(self.error(err)),
            }
        }
        Ok(())
    }

    fn on_end_of_input(&mut self, _out: &mut dyn Collector) -> Result<(), OperatorError> {
        match self.delivery {
            Delivery::AtLeastOnce => self.flush(),
            Delivery::ExactlyOnce => {
                let (current, pending) = self.journal.uncommitted();
                if current + pending == 0 {
                    return Ok(());
                }
                if self.stop.asked() {
                    tracing::warn!(operator = %self.config.name, after_last_barrier = current, pending, "rows not committed at the end: a run resumed from the last checkpoint writes them");
                    self.left = (current + pending) as u64;
                    return Ok(());
                }
                // The input ended without a stop, but the last checkpoint failed (probe42: the
                // run ended as finished, exit 0, with rows missing from the topic).
                Err(OperatorError::Execution {
                    operator: self.config.name.clone(),
                    message: format!(
                        "{} row(s) were not committed to topic `{}`: the last checkpoint failed; run the query again with the same --checkpoint-store to resume from the last complete checkpoint and commit them",
                        current + pending,
                        self.config.topic
                    ),
                })
            }
        }
    }
}
