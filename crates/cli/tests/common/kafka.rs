//! A Kafka cluster for the tests: librdkafka's mock cluster, held by the test process (it
//! lives as long as the [`Cluster`] value, outside every `anduin run` the test starts and
//! kills), with helpers to fill a topic and read one back.

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseProducer, BaseRecord, DefaultProducerContext, Producer};
use rdkafka::{Offset, TopicPartitionList};

/// A mock Kafka cluster of one broker on loopback.
pub struct Cluster {
    mock: MockCluster<'static, DefaultProducerContext>,
}

impl Cluster {
    /// Starts it.
    pub fn start() -> Self {
        Self {
            mock: MockCluster::new(1).expect("the mock cluster starts"),
        }
    }

    /// Its `bootstrap.servers`.
    pub fn servers(&self) -> String {
        self.mock.bootstrap_servers()
    }

    /// Creates `topic` with `partitions` partitions.
    pub fn topic(&self, topic: &str, partitions: i32) {
        self.mock
            .create_topic(topic, partitions, 1)
            .expect("the topic is created");
    }

    /// Answers the next `errors.len()` requests of `api` with these errors.
    pub fn refuse(
        &self,
        api: rdkafka::types::RDKafkaApiKey,
        errors: &[rdkafka::types::RDKafkaRespErr],
    ) {
        self.mock.request_errors(api, errors);
    }

    /// Answers requests of `api` again.
    pub fn accept(&self, api: rdkafka::types::RDKafkaApiKey) {
        self.mock.clear_request_errors(api);
    }

    /// Writes `values` to `topic`, value `i` to partition `i % partitions`, and waits until
    /// every one is acknowledged.
    pub fn produce(&self, topic: &str, partitions: i32, values: &[String]) {
        self.produce_at(topic, partitions, values, |_| None);
    }

    /// [`Cluster::produce`], value `i` with the record timestamp `timestamp(i)` (epoch ms;
    /// `None`: the time of sending).
    pub fn produce_at(
        &self,
        topic: &str,
        partitions: i32,
        values: &[String],
        timestamp: impl Fn(usize) -> Option<i64>,
    ) {
        let producer: BaseProducer = ClientConfig::new()
            .set("bootstrap.servers", self.servers())
            .create()
            .expect("a producer");
        for (i, v) in values.iter().enumerate() {
            let partition = i32::try_from(i).expect("small") % partitions;
            let mut record = BaseRecord::<(), str>::to(topic)
                .payload(v.as_str())
                .partition(partition);
            if let Some(ts) = timestamp(i) {
                record = record.timestamp(ts);
            }
            loop {
                match producer.send(record) {
                    Ok(()) => break,
                    Err((_, r)) => {
                        record = r;
                        producer.poll(Duration::from_millis(50));
                    }
                }
            }
        }
        producer
            .flush(Duration::from_secs(30))
            .expect("every record is acknowledged");
    }

    /// Every value of `topic` up to its end as of now, as a `read_committed` consumer sees
    /// them, partition by partition.
    pub fn read_committed(&self, topic: &str) -> Vec<String> {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", self.servers())
            .set("group.id", "test-reader")
            .set("isolation.level", "read_committed")
            .set("enable.auto.commit", "false")
            .create()
            .expect("a consumer");
        let metadata = consumer
            .fetch_metadata(Some(topic), Duration::from_secs(10))
            .expect("metadata");
        let partitions: Vec<i32> = metadata.topics()[0]
            .partitions()
            .iter()
            .map(|p| p.id())
            .collect();
        let mut ends = Vec::new();
        let mut tpl = TopicPartitionList::new();
        for p in partitions {
            let (_, high) = consumer
                .fetch_watermarks(topic, p, Duration::from_secs(10))
                .expect("watermarks");
            if high > 0 {
                tpl.add_partition_offset(topic, p, Offset::Beginning)
                    .expect("partition");
                ends.push((p, high));
            }
        }
        let mut values = Vec::new();
        if ends.is_empty() {
            return values;
        }
        consumer.assign(&tpl).expect("assigned");
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut read = vec![0i64; 64];
        loop {
            match consumer.poll(Duration::from_millis(100)) {
                Some(Ok(m)) => {
                    read[m.partition() as usize] = m.offset() + 1;
                    values.push(
                        String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned(),
                    );
                }
                Some(Err(e)) => panic!("reading {topic}: {e}"),
                None => {
                    if ends.iter().all(|(p, end)| read[*p as usize] >= *end) {
                        return values;
                    }
                    assert!(Instant::now() < deadline, "{topic} was not read to its end");
                }
            }
        }
    }
}
