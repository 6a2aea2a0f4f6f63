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

    /// Takes the broker down: it answers no connection until [`Cluster::up`].
    pub fn down(&self) {
        self.mock.broker_down(1).expect("the broker goes down");
    }

    /// Brings the broker back.
    pub fn up(&self) {
        self.mock.broker_up(1).expect("the broker comes back");
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

    /// The first offset partition `partition` of `topic` still holds.
    pub fn low_watermark(&self, topic: &str, partition: i32) -> i64 {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", self.servers())
            .create()
            .expect("a consumer");
        consumer
            .fetch_watermarks(topic, partition, Duration::from_secs(10))
            .expect("watermarks")
            .0
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

/// The query most Kafka tests run: rows `(ts, sensor, value)` read as CSV from topic
/// `events` of the cluster at `${SERVERS}`, those with `value < 50` written as CSV to topic
/// `out_topic`; `source` and `sink` are more lines of params of each (`param bounded = true`).
pub fn filter_query(source: &str, out_topic: &str, sink: &str) -> String {
    format!(
        r#"
type name = "Event" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
operator name = "in", type = "kafka" {{
  param topic = "events"
  param properties.bootstrap.servers = "${{SERVERS}}"
  param format = "csv"
  {source}
  output name = "events", type = "Event"
}}
operator name = "low", type = "filter" {{
  input name = "events"
  param condition = "value < 50"
  output name = "low", type = "Event"
}}
operator name = "out", type = "kafka" {{
  input name = "low"
  param topic = "{out_topic}"
  param properties.bootstrap.servers = "${{SERVERS}}"
  param format = "csv"
  {sink}
}}
"#
    )
}

/// `n` rows `ts,sensor,value` for topic `events` of [`filter_query`], and those it keeps
/// (`value < 50`), sorted.
pub fn filter_rows(n: u64) -> (Vec<String>, Vec<String>) {
    let input: Vec<String> = (0..n)
        .map(|i| format!("{},{},{}", 1_700_000_000_000 + i, i % 7, (i * 53) % 100))
        .collect();
    let mut kept: Vec<String> = input
        .iter()
        .filter(|r| r.rsplit(',').next().and_then(|v| v.parse::<u32>().ok()) < Some(50))
        .cloned()
        .collect();
    kept.sort();
    (input, kept)
}
