//! The Kafka source: the records of its topics' partitions (its share of them, when it runs
//! in parallel), decoded into rows, with their offsets in the checkpoints.
//!
//! The partitions of every topic, in topic then partition order, are dealt to the instances
//! in turn (partition *i* to instance *i* mod parallelism); each instance reads its own with
//! a consumer assigned to them (no consumer group, no rebalancing: anduin's checkpoints
//! keep the offsets). An instance with no partition (more instances than partitions) ends at
//! once, so that it never holds event time back. A checkpoint records, per partition, the
//! offset of the first record not yet emitted, and with `bounded` the end offsets taken at
//! the first start, so that a resumed run stops where the interrupted one would have; a run
//! resumed at another parallelism deals the partitions again, each with the offsets the old
//! instance that read it kept ([`Source::rescale_inline`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anduin_operator_api::{
    DeadLetter, OperatorError, RejectedRecord, RescaleError, RestoreIn, SnapshotOut, Source,
    SourcePoll, WatermarkSpec,
};
use anduin_types::SharedClock;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use serde::Deserialize;

use super::decode::{Polled, RecordDecoder};
use super::error::KafkaError;
use super::options::{Client, Startup, Topics};
use super::position::{reshare, share, Position, SplitPosition};
use super::split_time::SplitTimes;

/// How long a poll waits for the first record at most (the runtime's deadline may be
/// shorter).
const POLL_WAIT: Duration = Duration::from_millis(100);

/// One partition an instance reads.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Split {
    topic: String,
    partition: i32,
    /// The offset of the first record not emitted yet (`None`: where `Startup` says).
    next: Option<i64>,
    /// With `bounded`: the offset it ends before.
    end: Option<i64>,
    /// Read to `end`.
    done: bool,
}

/// What a source instance is made of (read from its params when bound).
#[derive(Clone)]
pub(crate) struct SourceConfig {
    pub name: String,
    pub client: Client,
    pub topics: Topics,
    /// `topic-pattern` as the user wrote it, for messages (empty with `topic`).
    pub pattern_shown: String,
    pub startup: Startup,
    pub bounded: bool,
    pub fail_on_error: bool,
    pub watermarks: Option<WatermarkSpec>,
}

/// A running Kafka source instance.
pub(crate) struct KafkaSource {
    config: SourceConfig,
    consumer: BaseConsumer,
    /// Every partition of the topics, in topic then partition order (every instance's).
    all: Vec<(String, i32)>,
    /// This instance's share of them.
    splits: Vec<Split>,
    /// The index of each split by (topic, partition).
    index: BTreeMap<(String, i32), usize>,
    decoder: RecordDecoder,
    dead_letter: Arc<DeadLetter>,
    times: SplitTimes,
    clock: SharedClock,
    /// Whether the consumer was assigned its partitions (at the first poll, after a restore).
    assigned: bool,
    /// Records without a value, skipped.
    empty: u64,
}

impl KafkaSource {
    /// Connects, finds the partitions of every topic and takes this instance's share.
    pub(crate) fn open(
        config: SourceConfig,
        decoder: RecordDecoder,
        ctx: &anduin_operator_api::BuildContext,
    ) -> Result<Self, KafkaError> {
        let c = &config.client;
        let consumer: BaseConsumer = c
            .config(&[
                ("group.id", &format!("anduin-{}", config.name)),
                ("enable.auto.commit", "false"),
                ("enable.auto.offset.store", "false"),
                ("enable.partition.eof", "false"),
                ("auto.offset.reset", "earliest"),
            ])
            .create()
            .map_err(|e| KafkaError::Settings(e.to_string()))?;
        let topics = match &config.topics {
            Topics::Named(t) => t.clone(),
            Topics::Pattern(r) => {
                let found = super::metadata::matching(
                    consumer.client(),
                    r,
                    &config.pattern_shown,
                    &c.servers,
                    c.connect_timeout,
                )?;
                tracing::info!(operator = %config.name, pattern = %config.pattern_shown, topics = ?found, "Kafka source reads the topics its pattern matches");
                found
            }
        };
        let mut all = Vec::new();
        for topic in &topics {
            for p in super::metadata::partitions(
                consumer.client(),
                topic,
                &c.servers,
                c.connect_timeout,
            )? {
                all.push((topic.clone(), p));
            }
        }
        let mine = share(&all, ctx.instance, ctx.parallelism);
        tracing::debug!(
            operator = %config.name,
            instance = ctx.instance,
            parallelism = ctx.parallelism,
            partitions = all.len(),
            reads = mine.len(),
            "Kafka source instance takes its share of the partitions"
        );
        let mut splits = Vec::new();
        for (topic, partition) in mine {
            let end = if config.bounded {
                let (_, high) = consumer
                    .fetch_watermarks(&topic, partition, c.connect_timeout)
                    .map_err(|e| {
                        KafkaError::client(
                            format!("reading the end offset of {topic}/{partition}"),
                            e,
                        )
                    })?;
                Some(high)
            } else {
                None
            };
            splits.push(Split {
                topic,
                partition,
                next: None,
                end,
                done: false,
            });
        }
        let index = splits
            .iter()
            .enumerate()
            .map(|(i, s)| ((s.topic.clone(), s.partition), i))
            .collect();
        let idle_after = config
            .watermarks
            .and_then(|w| w.idle_timeout_ms)
            .map(Duration::from_millis);
        let times = SplitTimes::new(splits.len(), ctx.clock.now(), idle_after);
        Ok(Self {
            config,
            consumer,
            all,
            splits,
            index,
            decoder,
            dead_letter: Arc::clone(&ctx.dead_letter),
            times,
            clock: Arc::clone(&ctx.clock),
            assigned: false,
            empty: 0,
        })
    }

    fn error(&self, e: KafkaError) -> OperatorError {
        e.for_operator(&self.config.name)
    }

    /// Assigns the partitions not yet done, each from its offset.
    fn assign(&mut self) -> Result<(), KafkaError> {
        let timeout = self.config.client.connect_timeout;
        let mut tpl = TopicPartitionList::new();
        for i in 0..self.splits.len() {
            let Some(s) = self.splits.get(i).cloned() else {
                continue;
            };
            let start = match (s.next, self.config.startup) {
                (Some(n), _) => Offset::Offset(n),
                (None, Startup::Earliest) => Offset::Beginning,
                (None, Startup::Latest) => Offset::End,
                (None, Startup::Timestamp(ts)) => {
                    let mut q = TopicPartitionList::new();
                    q.add_partition_offset(&s.topic, s.partition, Offset::Offset(ts))
                        .map_err(|e| KafkaError::client("asking for offsets by time", e))?;
                    let found = self
                        .consumer
                        .offsets_for_times(q, timeout)
                        .map_err(|e| KafkaError::client("asking for offsets by time", e))?;
                    found
                        .find_partition(&s.topic, s.partition)
                        .map_or(Offset::End, |e| e.offset())
                }
            };
            // A partition starts at a known offset, which the checkpoints keep before its
            // first record (a resumed run would otherwise look for the latest offset again,
            // past what came in meanwhile), and a bounded one that starts at its end has
            // nothing to read.
            let at = match start {
                Offset::Offset(n) => n,
                _ => self.resolve(&s, start)?,
            };
            let done = s.done || s.end.is_some_and(|end| at >= end);
            if let Some(split) = self.splits.get_mut(i) {
                split.done = done;
                split.next = Some(at);
            }
            if !done {
                tpl.add_partition_offset(&s.topic, s.partition, Offset::Offset(at))
                    .map_err(|e| KafkaError::client("assigning partitions", e))?;
            }
        }
        for (i, s) in self.splits.iter().enumerate() {
            if s.done {
                self.times.finish(i);
            }
        }
        self.consumer
            .assign(&tpl)
            .map_err(|e| KafkaError::client("assigning partitions", e))?;
        self.assigned = true;
        Ok(())
    }

    /// Where a partition starting at `start` (its beginning, its end, or the end for a
    /// timestamp after its last record) starts, as an offset.
    fn resolve(&self, s: &Split, start: Offset) -> Result<i64, KafkaError> {
        let (low, high) = self
            .consumer
            .fetch_watermarks(&s.topic, s.partition, self.config.client.connect_timeout)
            .map_err(|e| {
                KafkaError::client(
                    format!("reading the offsets of {}/{}", s.topic, s.partition),
                    e,
                )
            })?;
        Ok(match start {
            Offset::Beginning => low,
            Offset::Offset(n) => n,
            _ => high,
        })
    }

    /// With `bounded`: marks done every partition whose consumer position reached its end
    /// (control records of transactions take offsets no record is read at).
    fn check_ends(&mut self) -> Result<(), KafkaError> {
        if !self.config.bounded {
            return Ok(());
        }
        let position = self
            .consumer
            .position()
            .map_err(|e| KafkaError::client("reading the consumer's position", e))?;
        for (i, s) in self.splits.iter_mut().enumerate() {
            if s.done {
                continue;
            }
            let at = match position
                .find_partition(&s.topic, s.partition)
                .map(|e| e.offset())
            {
                Some(Offset::Offset(n)) => Some(n),
                _ => s.next,
            };
            if let (Some(at), Some(end)) = (at, s.end) {
                if at >= end {
                    s.done = true;
                    self.times.finish(i);
                }
            }
        }
        Ok(())
    }

    /// Up to `max` records, waiting until `deadline` at most for the first.
    fn fetch(&mut self, max: usize, deadline: Instant) -> Result<Vec<Polled>, KafkaError> {
        let mut polled = Vec::new();
        while polled.len() < max {
            let wait = if polled.is_empty() {
                deadline
                    .saturating_duration_since(Instant::now())
                    .min(POLL_WAIT)
            } else {
                Duration::ZERO
            };
            let Some(got) = self.consumer.poll(wait) else {
                break;
            };
            let m = match got {
                Ok(m) => m,
                Err(e) => {
                    // librdkafka retries what it can on its own; what reaches here is for
                    // the user to see, not a reason to stop.
                    tracing::warn!(operator = %self.config.name, error = %e, "Kafka consumer error");
                    continue;
                }
            };
            let Some(&split) = self.index.get(&(m.topic().to_string(), m.partition())) else {
                continue;
            };
            let Some(s) = self.splits.get_mut(split) else {
                continue;
            };
            if s.done || s.end.is_some_and(|end| m.offset() >= end) {
                continue;
            }
            s.next = Some(m.offset() + 1);
            if s.end.is_some_and(|end| m.offset() + 1 >= end) {
                s.done = true;
                self.times.finish(split);
            }
            polled.push(Polled {
                split,
                offset: m.offset(),
                timestamp: m.timestamp().to_millis(),
                value: m.payload().map(<[u8]>::to_vec),
            });
        }
        Ok(polled)
    }

    /// Sends the records that did not decode to the dead letters (or fails).
    fn reject(&self, bad: Vec<super::decode::Bad>) -> Result<(), OperatorError> {
        for b in bad {
            let (topic, partition) = self
                .splits
                .get(b.split)
                .map_or(("?", -1), |s| (s.topic.as_str(), s.partition));
            let source = format!("{topic}/{partition}@{}", b.offset);
            if self.config.fail_on_error {
                return Err(OperatorError::BadRecord {
                    operator: self.config.name.clone(),
                    source_name: source,
                    line: u64::try_from(b.offset).unwrap_or(0),
                    reason: b.reason,
                });
            }
            let record = RejectedRecord {
                source,
                line: u64::try_from(b.offset).unwrap_or(0),
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

impl Source for KafkaSource {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn watermarks(&self) -> Option<WatermarkSpec> {
        self.config.watermarks
    }

    fn watermark_per_split(&self) -> bool {
        true
    }

    fn event_time_progress(&self) -> Option<i64> {
        self.times.progress(self.clock.now())
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        match self.empty {
            0 => Vec::new(),
            n => vec![("empty_records", n)],
        }
    }

    fn can_resume(&self) -> Result<(), String> {
        Ok(())
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        let position = Position {
            splits: self
                .splits
                .iter()
                .map(|s| SplitPosition {
                    topic: s.topic.clone(),
                    partition: s.partition,
                    next: s.next,
                    end: s.end,
                })
                .collect(),
        };
        out.inline_typed(&self.config.name, &position)
    }

    fn restore(&mut self, state: RestoreIn) -> Result<(), OperatorError> {
        let position: Position = state.inline_as(&self.config.name)?;
        for saved in position.splits {
            let Some(&i) = self.index.get(&(saved.topic.clone(), saved.partition)) else {
                return Err(self.error(KafkaError::Checkpoint(format!(
                    "it read {}/{}, which this run does not (the topics or their partitions changed)",
                    saved.topic, saved.partition
                ))));
            };
            if let Some(s) = self.splits.get_mut(i) {
                s.next = saved.next;
                if saved.end.is_some() {
                    s.end = saved.end;
                }
            }
        }
        Ok(())
    }

    /// The partitions every old instance kept, each to the instance that reads it now, with
    /// its offsets (see [`reshare`]).
    fn rescale_inline(
        &self,
        parts: &[Option<serde_json::Value>],
        instance: usize,
        parallelism: usize,
    ) -> Result<Option<serde_json::Value>, RescaleError> {
        let mut kept = Vec::with_capacity(parts.len());
        for (k, part) in parts.iter().enumerate() {
            let corrupt = |why: String| RescaleError::Corrupt { instance: k, why };
            kept.push(match part {
                Some(v) => Position::deserialize(v).map_err(|e| corrupt(e.to_string()))?,
                None => Position { splits: Vec::new() },
            });
        }
        let position = reshare(kept, &self.all, instance, parallelism).map_err(|e| {
            let super::position::ReshareError::Twice { second, .. } = &e;
            RescaleError::Corrupt {
                instance: *second,
                why: e.to_string(),
            }
        })?;
        serde_json::to_value(&position)
            .map(Some)
            .map_err(|e| RescaleError::Corrupt {
                instance,
                why: e.to_string(),
            })
    }

    fn poll(&mut self, max_rows: usize, deadline: Instant) -> Result<SourcePoll, OperatorError> {
        if !self.assigned {
            self.assign().map_err(|e| self.error(e))?;
        }
        if self.splits.iter().all(|s| s.done) {
            return Ok(SourcePoll::Exhausted);
        }
        let polled = self.fetch(max_rows, deadline).map_err(|e| self.error(e))?;
        if polled.is_empty() {
            self.check_ends().map_err(|e| self.error(e))?;
            return Ok(if self.splits.iter().all(|s| s.done) {
                SourcePoll::Exhausted
            } else {
                SourcePoll::Idle
            });
        }
        let rows = self
            .decoder
            .decode(&polled)
            .map_err(|e| OperatorError::Config {
                operator: self.config.name.clone(),
                message: e.to_string(),
            })?;
        self.empty += rows.empty;
        let now = self.clock.now();
        let times = match (&rows.batch, self.config.watermarks) {
            (Some(b), Some(w)) => anduin_operator_api::event_time::event_times(b, w.column),
            _ => Vec::new(),
        };
        let mut decoded = vec![false; polled.len()];
        for (row, &from) in rows.from.iter().enumerate() {
            if let Some(p) = polled.get(from) {
                self.times
                    .record(p.split, times.get(row).copied().flatten(), now);
            }
            if let Some(d) = decoded.get_mut(from) {
                *d = true;
            }
        }
        // Records without a row still show their partition is alive.
        for (p, _) in polled.iter().zip(&decoded).filter(|(_, d)| !**d) {
            self.times.record(p.split, None, now);
        }
        self.reject(rows.bad)?;
        Ok(match rows.batch {
            Some(b) if b.num_rows() > 0 => SourcePoll::Batch(b),
            _ => SourcePoll::Idle,
        })
    }
}
