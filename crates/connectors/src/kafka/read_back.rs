//! The exactly-once sink's read-back after a restore: which records of the checkpoint's
//! journal its earlier transactions made visible already (see [`super::journal`]).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};

use super::error::KafkaError;
use super::journal::RecordId;
use super::options::Client;

/// The header naming the sink instance that wrote a record.
pub(crate) const SINK_HEADER: &str = "anduin.sink";
/// The header with the record's checkpoint epoch.
pub(crate) const EPOCH_HEADER: &str = "anduin.epoch";
/// The header with the record's index in its epoch.
pub(crate) const INDEX_HEADER: &str = "anduin.index";

/// The records that the sink instance `id` made visible in `topic` from each partition's
/// offset in `from` on, as a `read_committed` consumer sees them, reading to each
/// partition's end as of now (within `timeout`).
pub(crate) fn read_back(
    client: &Client,
    topic: &str,
    id: &str,
    from: &[(i32, i64)],
    timeout: Duration,
) -> Result<HashSet<RecordId>, KafkaError> {
    let c = client;
    let consumer: BaseConsumer = c
        .config(&[
            ("group.id", &format!("{id}-read-back")),
            ("enable.auto.commit", "false"),
            ("isolation.level", "read_committed"),
        ])
        .create()
        .map_err(|e| KafkaError::Settings(e.to_string()))?;
    let what = "reading back what the sink wrote before the restore";
    let mut ends = Vec::new();
    let mut tpl = TopicPartitionList::new();
    for &(p, start) in from {
        let (low, high) = consumer
            .fetch_watermarks(topic, p, c.connect_timeout)
            .map_err(|e| KafkaError::client(what, e))?;
        // Read from there, the consumer would skip to the end and never reach it (probe48 M1:
        // it waited the whole timeout, then blamed the servers).
        if low > start && high > start {
            return Err(KafkaError::client(
                what,
                format!(
                    "partition {p} of topic `{topic}` no longer holds the records from offset {start} on (its log starts at {low}: retention deleted them), so which of the checkpoint's rows the sink committed before cannot be told; to write the query's output again from its sources' start, run it with --from-scratch"
                ),
            ));
        }
        if high > start {
            tpl.add_partition_offset(topic, p, Offset::Offset(start))
                .map_err(|e| KafkaError::client(what, e))?;
            ends.push((p, high));
        }
    }
    let mut visible = HashSet::new();
    if ends.is_empty() {
        return Ok(visible);
    }
    consumer
        .assign(&tpl)
        .map_err(|e| KafkaError::client(what, e))?;
    let deadline = Instant::now() + timeout;
    loop {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                if let Some(id) = m.headers().and_then(|h| ours(h, id)) {
                    visible.insert(id);
                }
            }
            Some(Err(e)) => {
                tracing::warn!(error = %e, "Kafka consumer error while reading back")
            }
            None => {
                let position = consumer
                    .position()
                    .map_err(|e| KafkaError::client(what, e))?;
                let reached = ends.iter().all(|(p, end)| {
                    matches!(
                        position.find_partition(topic, *p).map(|e| e.offset()),
                        Some(Offset::Offset(n)) if n >= *end
                    )
                });
                if reached {
                    return Ok(visible);
                }
                if Instant::now() >= deadline {
                    return Err(KafkaError::client(
                        what,
                        "the topic's end was not reached in time",
                    ));
                }
            }
        }
    }
}

/// The record id in `headers`, if this instance (`id`) wrote the record.
fn ours(headers: &rdkafka::message::BorrowedHeaders, id: &str) -> Option<RecordId> {
    let mut sink = None;
    let mut epoch = None;
    let mut index = None;
    for h in headers.iter() {
        let value = h.value.and_then(|v| std::str::from_utf8(v).ok());
        match h.key {
            SINK_HEADER => sink = value,
            EPOCH_HEADER => epoch = value.and_then(|v| v.parse().ok()),
            INDEX_HEADER => index = value.and_then(|v| v.parse().ok()),
            _ => {}
        }
    }
    (sink == Some(id)).then_some(())?;
    Some((epoch?, index?))
}
