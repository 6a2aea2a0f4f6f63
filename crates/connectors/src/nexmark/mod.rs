//! `nexmark`: the events of the Nexmark benchmark (people, auctions, bids), generated as the
//! nexmark-flink generator does, from a seed.
//!
//! Event `id` is a pure function of the seed and `id`: its kind is `id % 50` (person,
//! auction or bid in proportions 1:3:46), its event time comes from the rate, and its random
//! fields from an RNG seeded with the seed and `id`. So a run can resume at any position, and
//! parallel instances split the sequence between them without talking to each other.
//!
//! With `parallelism` N (or `anduin run --parallelism N`), instance `i` generates the events
//! whose number `n` (0-based position, before the `first_event_id` offset) has `n % N == i`:
//! interleaved, not contiguous ranges as nexmark-flink's `GeneratorConfig.split`, so that all
//! instances advance through event time together and the watermark downstream (the minimum
//! over the instances) stays tight; see [`split`]. An instance also advances its watermark
//! over the events it walks past without emitting (other kinds, or none of its kind: with
//! N = 2, every person is an even event), so that one without rows does not hold event time
//! back. Each instance checkpoints its own position; a checkpoint restores only at the
//! parallelism it was taken with (the checkpoint check refuses a change, naming the source).
//!
//! - [`ids`]: the configuration, the kinds and the id arithmetic;
//! - [`split`]: which event numbers each parallel instance generates;
//! - [`person`], [`auction`], [`bid`]: the columns of each kind;
//! - [`strings`]: the RNG, random strings, the `extra` padding and prices.
//!
//! The source has one output, named after the kind it carries: `person`, `auction` or `bid`.
//! Every instance walks the same event sequence and keeps the events of its kind, so three
//! `nexmark` operators with the same params give the three streams of one benchmark run.

pub mod auction;
pub mod bid;
pub mod ids;
pub mod person;
pub mod split;
pub mod strings;

use crate::pace::Pace;
use std::sync::Arc;
use std::time::Instant;

use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_spec::OperatorDef;
use anduin_types::{ColumnType, Diagnostic, Diagnostics};
use arrow::array::ArrayRef;
use arrow::datatypes::{Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;

use anduin_operator_api::Bound;
use anduin_operator_api::Params;
use anduin_operator_api::{OperatorError, RestoreIn, SnapshotOut, Source, SourcePoll};

pub use ids::{Config, Kind};
pub use split::Split;

/// The `nexmark` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "nexmark",
    doc: "produces the Nexmark benchmark's people, auctions or bids (the output named `person`, `auction` or `bid`)",
    inputs: Arity::Exactly(0),
    outputs: Arity::Exactly(1),
    stateful: true,
    params: &[
        anduin_operator_api::event_time::EVENT_TIME_PARAMS[0],
        anduin_operator_api::event_time::EVENT_TIME_PARAMS[1],
        anduin_operator_api::event_time::EVENT_TIME_PARAMS[2],
        ParamSpec {
            name: "events",
            required: false,
            kind: ParamKind::Int,
            default: None,
            doc: "how many events (of all three kinds) to generate; without it the source runs forever",
        },
        ParamSpec {
            name: "rate",
            required: false,
            kind: ParamKind::Number,
            default: Some("10000"),
            doc: "events per second of event time (all kinds together), 0.001 to 1e12",
        },
        ParamSpec {
            name: "throttle",
            required: false,
            kind: ParamKind::Bool,
            default: Some("false"),
            doc: "emit events at `rate` in wall-clock time too; otherwise as fast as possible",
        },
        ParamSpec {
            name: "seed",
            required: false,
            kind: ParamKind::Int,
            default: Some("42"),
            doc: "the random seed",
        },
        ParamSpec {
            name: "first_event_id",
            required: false,
            kind: ParamKind::Int,
            default: Some("0"),
            doc: "the id of the first event",
        },
        ParamSpec {
            name: "first_event_time",
            required: false,
            kind: ParamKind::Int,
            default: Some("1704067200000"),
            doc: "the event time of the first event, in epoch milliseconds (2024-01-01T00:00:00Z)",
        },
        ParamSpec {
            name: "out_of_order_group_size",
            required: false,
            kind: ParamKind::Int,
            default: Some("1"),
            doc: "events are shuffled within consecutive groups of this many (1: in order)",
        },
        ParamSpec {
            name: "parallelism",
            required: false,
            kind: ParamKind::Int,
            default: Some("1"),
            doc: "how many instances generate the events, instance i of N the event numbers n with n % N = i (default: the query's --parallelism)",
        },
    ],
};

/// Rows of one kind being built.
pub trait Columns: Send {
    /// Adds event `id` (of this kind).
    fn push(&mut self, config: &Config, id: u64);
    /// The columns of the rows added since the last call.
    fn finish(&mut self) -> Vec<ArrayRef>;
}

/// The columns of `kind`, in output order.
pub fn fields(kind: Kind) -> &'static [(&'static str, ColumnType)] {
    match kind {
        Kind::Person => person::FIELDS,
        Kind::Auction => auction::FIELDS,
        Kind::Bid => bid::FIELDS,
    }
}

/// The output schema of `kind`.
pub fn schema(kind: Kind) -> SchemaRef {
    Arc::new(Schema::new(
        fields(kind)
            .iter()
            .map(|(name, t)| Field::new(*name, t.arrow_type(), true))
            .collect::<Vec<_>>(),
    ))
}

fn columns(kind: Kind) -> Box<dyn Columns> {
    match kind {
        Kind::Person => Box::<person::People>::default(),
        Kind::Auction => Box::<auction::Auctions>::default(),
        Kind::Bid => Box::<bid::Bids>::default(),
    }
}

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(
    op: &OperatorDef,
    declared: &[Option<SchemaRef>],
) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    let Some(output) = op.outputs.first() else {
        return Err(Diagnostic::error(op.pos, "nexmark needs an output").into());
    };
    let Some(kind) = Kind::from_output(output.name.as_str()) else {
        return Err(Diagnostic::error(
            output.name.pos(),
            format!(
                "the output of nexmark \"{}\" names the kind it carries: `person`, `auction` or `bid`, not `{}`",
                op.name,
                output.name.as_str()
            ),
        )
        .into());
    };
    let schema = schema(kind);
    if let Some(Some(d)) = declared.first() {
        let same = d.fields().len() == schema.fields().len()
            && d.fields()
                .iter()
                .zip(schema.fields())
                .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
        if !same {
            let want: Vec<String> = fields(kind)
                .iter()
                .map(|(n, t)| format!("{n} {}", t.name()))
                .collect();
            return Err(Diagnostic::error(
                output.name.pos(),
                format!(
                    "the `{}` output of nexmark has the columns ({}): declare that type or none",
                    output.name.as_str(),
                    want.join(", ")
                ),
            )
            .into());
        }
    }
    let watermarks = anduin_operator_api::event_time::watermark_spec(&p, &schema)?;
    let non_negative = |name: &str, default: i64| match p.int(name) {
        Some(v) if v < 0 => Err(Diagnostics::from(p.error(name, "must not be negative"))),
        v => Ok(v.unwrap_or(default).unsigned_abs()),
    };
    let events = match p.int("events") {
        Some(_) => Some(non_negative("events", 0)?),
        None => None,
    };
    let rate = p.number("rate").unwrap_or(ids::DEFAULT_RATE);
    if !crate::pace::valid_rate(rate) {
        return Err(p
            .error(
                "rate",
                "must be a number of events per second from 0.001 to 1e12",
            )
            .into());
    }
    let group = non_negative("out_of_order_group_size", 1)?;
    if group == 0 || group % 953 == 0 {
        return Err(p
            .error(
                "out_of_order_group_size",
                "must be at least 1 and not a multiple of 953 (the shuffle's stride)",
            )
            .into());
    }
    let config = Config {
        seed: p.int("seed").unwrap_or(42) as u64,
        rate,
        first_event_time: p
            .int("first_event_time")
            .unwrap_or(ids::DEFAULT_FIRST_EVENT_TIME),
        first_event_id: non_negative("first_event_id", 0)?,
        out_of_order_group_size: group,
    };
    if p.int("parallelism").is_some_and(|n| n < 1) {
        return Err(p.error("parallelism", "must be at least 1").into());
    }
    let throttle = p.bool_or("throttle", false);
    let name = op.name.to_string();
    Ok(Binding {
        bound: Bound::Source(Arc::new(move |ctx| {
            let mut source = Nexmark::new(name.clone(), kind, config, events)
                .split(Split::new(ctx.instance, ctx.parallelism));
            source.throttle = throttle;
            source.watermarks = watermarks;
            source.pace.set_clock(Arc::clone(&ctx.clock));
            Ok(Box::new(source))
        })),
        outputs: vec![schema],
        warnings: Diagnostics::default(),
        partition_by: Vec::new(),
    })
}

/// Where a nexmark source is, as a checkpoint's manifest keeps it: its position and whose
/// share of the sequence it is (absent: the whole sequence's).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Position {
    /// The next event of its share.
    position: u64,
    /// The instance, from 0.
    #[serde(default)]
    instance: Option<u64>,
    /// How many instances share the sequence.
    #[serde(default)]
    parallelism: Option<u64>,
}

/// A running `nexmark` source.
pub struct Nexmark {
    name: String,
    kind: Kind,
    schema: SchemaRef,
    config: Config,
    /// How many events (positions of the stream) in all, over every instance.
    events: Option<u64>,
    /// The event numbers this instance generates.
    split: Split,
    /// The position of this instance's next event (events of every kind count): a number of
    /// its split.
    position: u64,
    /// The largest event time of the positions walked so far (emitted or not).
    walked_time: Option<i64>,
    throttle: bool,
    /// When events are due, when throttled.
    pace: Pace,
    watermarks: Option<anduin_operator_api::WatermarkSpec>,
    columns: Box<dyn Columns>,
}

impl Nexmark {
    /// A source of the events of `kind`, unthrottled and without watermarks, that generates
    /// the whole sequence (see [`Nexmark::split`]).
    pub fn new(name: String, kind: Kind, config: Config, events: Option<u64>) -> Self {
        Self {
            name,
            kind,
            schema: schema(kind),
            config,
            events,
            split: Split::whole(),
            position: 0,
            walked_time: None,
            throttle: false,
            pace: Pace::default(),
            watermarks: None,
            columns: columns(kind),
        }
    }

    /// This source as the instance that generates the event numbers of `split` only.
    pub fn split(mut self, split: Split) -> Self {
        self.split = split;
        self.position = split.first();
        self.pace.restart(0);
        self
    }

    /// The position of the next event.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Up to `max_rows` rows of this kind from this instance's positions in `position..end`.
    /// Walks at most `max_rows` × 50 positions, so that an instance that has few or no events
    /// of its kind returns (with fewer rows) and its event time still advances.
    fn make(&mut self, max_rows: usize, end: u64) -> Result<RecordBatch, OperatorError> {
        let mut rows = 0;
        let mut steps = (max_rows as u64).saturating_mul(ids::PROPORTION_DENOMINATOR);
        while self.position < end && rows < max_rows && steps > 0 {
            let id = self.config.event_id(self.position);
            self.position = self.split.after(self.position);
            steps -= 1;
            let time = self.config.timestamp_of_id(id);
            self.walked_time = Some(self.walked_time.map_or(time, |t| t.max(time)));
            if Kind::of(id) == self.kind {
                self.columns.push(&self.config, id);
                rows += 1;
            }
        }
        RecordBatch::try_new(Arc::clone(&self.schema), self.columns.finish()).map_err(|e| {
            OperatorError::Execution {
                operator: self.name.clone(),
                message: e.to_string(),
            }
        })
    }
}

impl Source for Nexmark {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&mut self, max_rows: usize, deadline: Instant) -> Result<SourcePoll, OperatorError> {
        let mut end = self.events.unwrap_or(u64::MAX);
        if self.position >= end {
            return Ok(SourcePoll::Exhausted);
        }
        if self.throttle {
            let rate = self.config.rate;
            let Some(due) = self.pace.due_before(rate, self.position, deadline) else {
                return Ok(SourcePoll::Idle);
            };
            end = end.min(due);
        }
        self.make(max_rows.max(1), end).map(SourcePoll::Batch)
    }

    fn can_resume(&self) -> Result<(), String> {
        Ok(())
    }

    fn watermarks(&self) -> Option<anduin_operator_api::WatermarkSpec> {
        self.watermarks
    }

    fn event_time_progress(&self) -> Option<i64> {
        self.walked_time
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        // Every event's randomness comes from the seed and its id: the position is all the
        // state there is. The split says which instance's position it is.
        let position = Position {
            position: self.position,
            instance: Some(self.split.instance),
            parallelism: Some(self.split.instances),
        };
        out.inline_typed(&self.name, &position)
    }

    fn restore(&mut self, state: RestoreIn) -> Result<(), OperatorError> {
        let Position {
            position,
            instance,
            parallelism,
        } = state.inline_as(&self.name)?;
        // A position without a split is the whole sequence's.
        let taken = (Some(instance.unwrap_or(0)), Some(parallelism.unwrap_or(1)));
        let mine = (Some(self.split.instance), Some(self.split.instances));
        if taken != mine || !self.split.owns(position) {
            return Err(OperatorError::Execution {
                operator: self.name.clone(),
                message: format!(
                    "the checkpoint holds the position of instance {} of {} (at event {position}), but this is instance {} of {}: a nexmark source resumes only at the parallelism it was checkpointed with",
                    fmt_field(taken.0),
                    fmt_field(taken.1),
                    self.split.instance,
                    self.split.instances
                ),
            });
        }
        self.position = position;
        // A throttled run restarts its clock: events already produced are not owed again.
        self.pace.restart(self.position);
        Ok(())
    }
}

fn fmt_field(v: Option<u64>) -> String {
    v.map_or_else(|| "?".into(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn config() -> Config {
        Config {
            seed: 42,
            rate: 10_000.0,
            first_event_time: 0,
            first_event_id: 0,
            out_of_order_group_size: 1,
        }
    }

    #[test]
    fn each_kind_keeps_its_share_of_the_events() {
        let far = Instant::now() + Duration::from_secs(60);
        for (kind, share) in [(Kind::Person, 1), (Kind::Auction, 3), (Kind::Bid, 46)] {
            let mut s = Nexmark::new("n".into(), kind, config(), Some(5000));
            let mut rows = 0;
            while let SourcePoll::Batch(b) = s.poll(64, far).expect("polls") {
                assert!(b.num_rows() <= 64);
                rows += b.num_rows();
            }
            assert_eq!(rows, 100 * share, "{kind:?}");
        }
    }

    /// Every row `s` generates, each as its values joined by commas.
    fn rows_of(mut s: Nexmark) -> Vec<String> {
        use arrow::util::display::{ArrayFormatter, FormatOptions};
        let far = Instant::now() + Duration::from_secs(60);
        let mut rows = vec![];
        while let SourcePoll::Batch(b) = s.poll(100, far).expect("polls") {
            let options = FormatOptions::default();
            let formatters: Vec<ArrayFormatter> = b
                .columns()
                .iter()
                .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).expect("formats"))
                .collect();
            for r in 0..b.num_rows() {
                let values: Vec<String> =
                    formatters.iter().map(|f| f.value(r).to_string()).collect();
                rows.push(values.join(","));
            }
        }
        rows
    }

    #[test]
    fn parallel_instances_together_generate_exactly_the_serial_events() {
        let mut c = config();
        c.out_of_order_group_size = 7;
        c.first_event_id = 30;
        for kind in [Kind::Person, Kind::Auction, Kind::Bid] {
            let mut serial = rows_of(Nexmark::new("n".into(), kind, c, Some(3001)));
            serial.sort();
            assert!(!serial.is_empty());
            for n in 1..=4 {
                let mut all: Vec<String> = (0..n)
                    .flat_map(|i| {
                        rows_of(
                            Nexmark::new("n".into(), kind, c, Some(3001)).split(Split::new(i, n)),
                        )
                    })
                    .collect();
                all.sort();
                assert_eq!(all, serial, "{kind:?} over {n} instances");
            }
        }
    }

    #[test]
    fn an_instance_without_events_of_its_kind_still_advances_event_time() {
        // With two instances every person (event id 50k) is an even event: instance 1 has none.
        let mut s = Nexmark::new("n".into(), Kind::Person, config(), None).split(Split::new(1, 2));
        let far = Instant::now() + Duration::from_secs(60);
        let mut last = None;
        for _ in 0..3 {
            let SourcePoll::Batch(b) = s.poll(10, far).expect("polls") else {
                panic!("an endless source has a batch, empty or not");
            };
            assert_eq!(b.num_rows(), 0);
            let progress = s.event_time_progress().expect("it walked some events");
            assert!(last.is_none_or(|l| progress > l));
            last = Some(progress);
        }
        assert_eq!(s.position() % 2, 1);
    }

    #[test]
    fn an_instance_refuses_a_position_checkpointed_at_another_parallelism() {
        let restore = |inline: serde_json::Value, split: Split| {
            Nexmark::new("bids".into(), Kind::Bid, config(), None)
                .split(split)
                .restore(RestoreIn {
                    epoch: anduin_types::Epoch(3),
                    inline: Some(inline),
                    files: vec![],
                })
        };
        let two = serde_json::json!({ "position": 41, "instance": 1, "parallelism": 2 });
        assert!(restore(two.clone(), Split::new(1, 2)).is_ok());
        let err = restore(two, Split::new(1, 3)).expect_err("refused");
        assert!(
            err.to_string().contains("bids")
                && err.to_string().contains("instance 1 of 2")
                && err.to_string().contains("instance 1 of 3"),
            "{err}"
        );
        // A checkpoint of the serial source (no split recorded) restores the whole sequence.
        assert!(restore(serde_json::json!({ "position": 40 }), Split::whole()).is_ok());
        assert!(restore(serde_json::json!({ "position": 40 }), Split::new(0, 2)).is_err());
    }

    #[test]
    fn a_throttled_source_waits_for_its_rate() {
        let mut s = Nexmark::new("n".into(), Kind::Bid, config(), None);
        s.throttle = true;
        s.config.rate = 1.0;
        let soon = Instant::now() + Duration::from_millis(20);
        let first = s.poll(1000, soon).expect("polls");
        assert!(matches!(first, SourcePoll::Batch(_)));
        assert_eq!(s.position(), 1);
        assert!(matches!(
            s.poll(1000, soon).expect("polls"),
            SourcePoll::Idle
        ));
    }
}
