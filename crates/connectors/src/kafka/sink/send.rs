//! How the Kafka sink writes: records sent one by one (waiting while librdkafka's queue is
//! full), a row too large for a record refused as it comes, an exactly-once epoch written in
//! one transaction, tried again while the broker is lost (see [`super::super::outage`]), and
//! an at-least-once flush.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anduin_operator_api::OperatorError;
use rdkafka::error::{KafkaError as RdError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseRecord, Producer};

use super::super::error::KafkaError;
use super::super::journal::{still_to_write, Record, RecordId};
use super::super::options::Delivery;
use super::super::outage::Outage;
use super::super::read_back::{EPOCH_HEADER, INDEX_HEADER, SINK_HEADER};
use super::KafkaSink;

/// What librdkafka adds to a record's key, value and headers before it compares its size
/// with `message.max.bytes` (`RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD`).
const RECORD_OVERHEAD: usize = 36;

impl KafkaSink {
    /// The tries of one piece of work while the broker is lost.
    pub(super) fn outage(&self) -> Outage<'_> {
        Outage::new(
            &self.config.name,
            &self.config.client.servers,
            &self.stop,
            &self.lost_since,
        )
    }

    /// How long one try of a commit, an abort or a flush waits for the broker.
    fn attempt(&self) -> Duration {
        self.config.client.connect_timeout
    }

    /// The error of a row too large for a record.
    pub(super) fn too_large(&self, r: &Record) -> KafkaError {
        KafkaError::client(
            format!("producing to topic `{}`", self.config.topic),
            format!(
                "the row that begins {} makes a record of up to {} bytes (with its key, librdkafka's overhead and, exactly once, anduin's headers), more than the producer's `message.max.bytes` of {} bytes; raise `properties.message.max.bytes` (and the topic's `max.message.bytes` on the brokers), or write smaller rows",
                crate::codec::row_beginning(&r.value),
                self.record_bound(r),
                self.max_message
            ),
        )
    }

    /// The most `r` may weigh once sent, as librdkafka compares it with `message.max.bytes`:
    /// key, value, overhead and, exactly once, the headers (the epoch and the index taken at
    /// 20 digits each, since they are not known yet).
    fn record_bound(&self, r: &Record) -> usize {
        let header = |name: &str, value: usize| {
            name.len() + value + varint_size(name.len()) + varint_size(value)
        };
        let headers = match self.delivery {
            Delivery::AtLeastOnce => 0,
            Delivery::ExactlyOnce => {
                header(SINK_HEADER, self.id.len())
                    + header(EPOCH_HEADER, 20)
                    + header(INDEX_HEADER, 20)
            }
        };
        RECORD_OVERHEAD + r.key.as_ref().map_or(0, Vec::len) + r.value.len() + headers
    }

    /// Whether `r` may be too large for a record once sent.
    pub(super) fn may_be_too_large(&self, r: &Record) -> bool {
        self.record_bound(r) > self.max_message
    }

    /// Sends one record, waiting while librdkafka's queue is full (for as long as the broker
    /// is lost; a stop ends the wait once it has lasted `connect.timeout`).
    pub(super) fn send(&self, r: &Record, headers: Option<OwnedHeaders>) -> Result<(), KafkaError> {
        let mut full_since: Option<Instant> = None;
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
                    let since = *full_since.get_or_insert_with(Instant::now);
                    if self.stop.asked() && since.elapsed() > self.attempt() {
                        return Err(self.outage().stopped(
                            &format!("producing to topic `{}`", self.config.topic),
                            &format!(
                                "the producer's queue stayed full for {:.1} s",
                                since.elapsed().as_secs_f64()
                            ),
                        ));
                    }
                    self.producer.poll(Duration::from_millis(100));
                }
                Err((RdError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge), _)) => {
                    return Err(self.too_large(r))
                }
                Err((e, _)) => {
                    // A fatal error says only "Fatal error"; its cause is the client's
                    // (probe48 L1: "Transactional Id authorization failed" was only in
                    // librdkafka's log lines).
                    let cause = match self.producer.client().fatal_error() {
                        Some((code, reason)) => format!("{e}: {reason} ({code:?})"),
                        None => e.to_string(),
                    };
                    return Err(KafkaError::client(
                        format!("producing to topic `{}`", self.config.topic),
                        cause,
                    ));
                }
            }
        }
    }

    /// Writes `records` of `epoch` (those not in `visible`) in one transaction. While the
    /// broker is lost, tries again until it answers: the commit (librdkafka says when it may
    /// be called again), or the whole transaction once the failed one is aborted (a record
    /// not delivered in time fails it).
    pub(super) fn transact(
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
        let mut outage = self.outage();
        loop {
            self.producer
                .begin_transaction()
                .map_err(|e| KafkaError::client(what("beginning"), e))?;
            if let Err(e) = self.send_all(epoch, &todo) {
                // What was sent is not visible to read_committed readers; a resumed run
                // writes it again from the checkpoint.
                let _ = self.producer.abort_transaction(self.attempt());
                return Err(e);
            }
            let failed = loop {
                match self.producer.commit_transaction(self.attempt()) {
                    Ok(()) => {
                        outage.over(&what("committing"));
                        tracing::debug!(operator = %self.config.name, epoch, records = todo.len(), "Kafka transaction committed");
                        return Ok(());
                    }
                    Err(e) if requires_abort(&e) => break e,
                    Err(e) => outage.wait(&what("committing"), &e)?,
                }
            };
            loop {
                match self.producer.abort_transaction(self.attempt()) {
                    Ok(()) => break,
                    Err(e) => outage.wait(&what("aborting"), &e)?,
                }
            }
            if let Some(RDKafkaErrorCode::MessageSizeTooLarge) = failed.rdkafka_error_code() {
                return Err(self.larger_than_the_topic_takes(&what("committing"), &todo, &failed));
            }
            outage.wait(&what("committing"), &failed)?;
        }
    }

    /// The brokers refused a record of a transaction as too large: the topic's limit is below
    /// the producer's. Names the transaction's largest row.
    fn larger_than_the_topic_takes(
        &self,
        what: &str,
        todo: &[(u64, &Record)],
        e: &RdError,
    ) -> KafkaError {
        let largest = todo
            .iter()
            .map(|(_, r)| r)
            .max_by_key(|r| r.value.len() + r.key.as_ref().map_or(0, Vec::len));
        KafkaError::client(
            what,
            format!(
                "{e}: the brokers take smaller records for topic `{}` (its `max.message.bytes`) than the producer's `message.max.bytes` ({} bytes); its largest row begins {}: raise the topic's `max.message.bytes`, or lower `properties.message.max.bytes` to it so that such rows are refused as they come",
                self.config.topic,
                self.max_message,
                largest.map_or_else(String::new, |r| crate::codec::row_beginning(&r.value))
            ),
        )
    }

    /// Sends the records of `epoch`'s transaction, each with the headers that name it.
    fn send_all(&self, epoch: u64, todo: &[(u64, &Record)]) -> Result<(), KafkaError> {
        let epoch_text = epoch.to_string();
        todo.iter().try_for_each(|(i, r)| {
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
        })
    }

    /// Waits until every record sent is acknowledged (for as long as the broker is lost);
    /// fails if one could not be delivered.
    pub(super) fn flush(&self) -> Result<(), OperatorError> {
        let what = "flushing the producer";
        let mut outage = self.outage();
        while let Err(e) = self.producer.flush(self.attempt()) {
            outage.wait(what, &e).map_err(|e| self.error(e))?;
        }
        outage.over(what);
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

/// The size of `n` as a Kafka record encodes a header's length: a zigzag varint.
fn varint_size(n: usize) -> usize {
    let mut z = (n as u64) << 1;
    let mut size = 1;
    while z >= 0x80 {
        z >>= 7;
        size += 1;
    }
    size
}

/// Whether a transaction call failed in a way that needs the transaction aborted.
fn requires_abort(e: &RdError) -> bool {
    matches!(e, RdError::Transaction(t) if t.txn_requires_abort())
}

#[cfg(test)]
mod tests {
    use super::varint_size;

    #[test]
    fn a_header_length_takes_the_bytes_of_its_zigzag_varint() {
        assert_eq!(varint_size(0), 1);
        assert_eq!(varint_size(63), 1);
        assert_eq!(varint_size(64), 2);
        assert_eq!(varint_size(8191), 2);
        assert_eq!(varint_size(8192), 3);
    }
}
