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

use std::collections::HashSet;
use std::time::Duration;

use anduin_operator_api::{
    Collector, Operator, OperatorError, RestoreIn, SnapshotOut, StopRequest,
};
use anduin_types::{Epoch, SnapshotKind};
use arrow::record_batch::RecordBatch;
use rdkafka::error::{KafkaError as RdError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

use super::deliveries::Deliveries;
use super::encode::RowEncoder;
use super::error::KafkaError;
use super::journal::{still_to_write, Journal, Record, RecordId};
use super::options::{Client, Delivery};
use super::read_back::{read_back, EPOCH_HEADER, INDEX_HEADER, SINK_HEADER};

/// How long a commit, or a flush, may take.
const COMMIT_TIMEOUT: Duration = Duration::from_secs(60);

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
    let mut settings = vec![
        ("enable.idempotence", "true"),
        ("acks", "all"),
        ("message.timeout.ms", "60000"),
    ];
    if delivery == Delivery::ExactlyOnce {
        settings.push(("transactional.id", id));
        settings.push(("transaction.timeout.ms", "60000"));
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
    values: RowEncoder,
    keys: RowEncoder,
    journal: Journal,
    /// The run's stop: rows left uncommitted at the end of a stopped run are the resumed
    /// run's to write; at the end of a run not stopped, they make the run fail.
    stop: StopRequest,
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
        let partitions = super::metadata::partitions(
            producer.client(),
            &config.topic,
            &config.client.servers,
            config.client.connect_timeout,
        )?;
        fence(&producer, &config, delivery)?;
        Ok(Self {
            config,
            delivery,
            producer,
            id,
            partitions,
            values,
            keys,
            journal: Journal::default(),
            stop: ctx.stop.clone(),
        })
    }

    fn error(&self, e: KafkaError) -> OperatorError {
        e.for_operator(&self.config.name)
    }

    /// Sends one record, waiting while librdkafka's queue is full.
    fn send(&self, r: &Record, headers: Option<OwnedHeaders>) -> Result<(), KafkaError> {
        loop {
            let mut rec: BaseRecord<'_, [u8], [u8]> =
                BaseRecord::to(&self.config.topic).payload(r.value.as_slice());
            if let Some(k) = &r.key {
                rec = rec.key(k.as_slice());
            }
            if let Some(h) = headers.clone() {
                rec = rec.headers(h);
            }
            match self.producer.send(rec) {
                Ok(()) => return Ok(()),
                Err((RdError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                    self.producer.poll(Duration::from_millis(100));
                }
                Err((e, _)) => {
                    return Err(KafkaError::client(
                        format!("producing to topic `{}`", self.config.topic),
                        e,
                    ))
                }
            }
        }
    }

    /// Writes `records` of `epoch` (those not in `visible`) in one transaction.
    fn transact(
        &self,
        epoch: u64,
        records: &[Record],
        visible: &HashSet<RecordId>,
    ) -> Result<(), KafkaError> {
        let todo = still_to_write(epoch, records, visible);
        if todo.is_empty() {
            return Ok(());
        }
        let what = |s: &str| format!("{s} the transaction of checkpoint {epoch}");
        self.producer
            .begin_transaction()
            .map_err(|e| KafkaError::client(what("beginning"), e))?;
        let epoch_text = epoch.to_string();
        let sent = todo.iter().try_for_each(|(i, r)| {
            let index = i.to_string();
            let headers = OwnedHeaders::new()
                .insert(Header {
                    key: SINK_HEADER,
                    value: Some(self.id.as_str()),
                })
                .insert(Header {
                    key: EPOCH_HEADER,
                    value: Some(epoch_text.as_str()),
                })
                .insert(Header {
                    key: INDEX_HEADER,
                    value: Some(index.as_str()),
                });
            self.send(r, Some(headers))
        });
        let committed = sent.and_then(|()| {
            self.producer
                .commit_transaction(COMMIT_TIMEOUT)
                .map_err(|e| KafkaError::client(what("committing"), e))
        });
        if let Err(e) = committed {
            // What was sent is not visible to read_committed readers; a resumed run writes
            // it again from the checkpoint.
            let _ = self.producer.abort_transaction(COMMIT_TIMEOUT);
            return Err(e);
        }
        tracing::debug!(operator = %self.config.name, epoch, records = todo.len(), "Kafka transaction committed");
        Ok(())
    }

    /// Each partition's end offset now.
    fn ends(&self) -> Result<Vec<(i32, i64)>, KafkaError> {
        self.partitions
            .iter()
            .map(|&p| {
                self.producer
                    .client()
                    .fetch_watermarks(&self.config.topic, p, self.config.client.connect_timeout)
                    .map(|(_, high)| (p, high))
                    .map_err(|e| {
                        KafkaError::client(
                            format!("reading the end offset of {}/{p}", self.config.topic),
                            e,
                        )
                    })
            })
            .collect()
    }
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
                let inline = Inline {
                    transactional_id: self.id.clone(),
                    from: self.ends().map_err(|e| self.error(e))?,
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
        let visible = read_back(
            &self.config.client,
            &self.config.topic,
            &self.id,
            &inline.from,
            COMMIT_TIMEOUT,
        )
        .map_err(|e| self.error(e))?;
        for (epoch, records) in journal.take_through(state.epoch.0) {
            self.transact(epoch, &records, &visible)
                .map_err(|e| self.error(e))?;
        }
        Ok(())
    }

    fn handle_commit(&mut self, epoch: Epoch) -> Result<(), OperatorError> {
        for (e, records) in self.journal.take_through(epoch.0) {
            self.transact(e, &records, &HashSet::new())
                .map_err(|err| self.error(err))?;
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

impl KafkaSink {
    /// Waits until every record sent is acknowledged; fails if one could not be delivered.
    fn flush(&self) -> Result<(), OperatorError> {
        self.producer
            .flush(COMMIT_TIMEOUT)
            .map_err(|e| self.error(KafkaError::client("flushing the producer", e)))?;
        match self.producer.context().take_failures() {
            None => Ok(()),
            Some((n, why)) => Err(self.error(KafkaError::client(
                format!(
                    "{n} record(s) to topic `{}` could not be delivered",
                    self.config.topic
                ),
                why,
            ))),
        }
    }
}
