//! `generator`: synthetic rows from a seed, at a rate or as fast as possible, for a count or
//! forever. For demos, tests and benchmarks.
//!
//! Two profiles:
//! - `uniform` (default): any column types. Row `i` is a pure function of the seed and `i`
//!   (ints uniform in `[0, int_max)`, doubles in `[0, 1)`, booleans, strings `k0`…`k99`,
//!   timestamps `start_ts + i * ts_step`), so a run can resume at any offset.
//! - `events`: exactly the rows of `shared/bench/gen_events.py` (ts, sensor, value): the
//!   benchmark file, generated in memory.

use std::sync::Arc;
use std::time::Instant;

use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_spec::OperatorDef;
use anduin_types::{ColumnType, Diagnostics};
use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, StringBuilder, TimestampMillisecondArray,
};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::RecordBatch;

use crate::declared_source_schema;
use crate::pace::Pace;
use anduin_operator_api::Bound;
use anduin_operator_api::Params;
use anduin_operator_api::{
    ControlError, OperatorError, RestoreIn, SnapshotOut, Source, SourcePoll,
};

/// The `generator` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "generator",
    doc: "produces synthetic rows of its output type from a seed",
    inputs: Arity::Exactly(0),
    outputs: Arity::Exactly(1),
    stateful: true,
    params: &[
        anduin_operator_api::event_time::EVENT_TIME_PARAMS[0],
        anduin_operator_api::event_time::EVENT_TIME_PARAMS[1],
        anduin_operator_api::event_time::EVENT_TIME_PARAMS[2],
        ParamSpec {
            name: "profile",
            required: false,
            kind: ParamKind::OneOf(&["uniform", "events"]),
            default: Some("uniform"),
            doc: "`uniform`: random values of each column's type; `events`: the rows of the benchmark generator (ts, sensor, value)",
        },
        ParamSpec {
            name: "count",
            required: false,
            kind: ParamKind::Int,
            default: None,
            doc: "how many rows; without it the generator runs forever",
        },
        ParamSpec {
            name: "rate",
            required: false,
            kind: ParamKind::Number,
            default: None,
            doc: "rows per second (0.001 to 1e12); without it, as fast as possible; adjustable while running",
        },
        ParamSpec {
            name: "seed",
            required: false,
            kind: ParamKind::Int,
            default: Some("42"),
            doc: "the random seed",
        },
        ParamSpec {
            name: "int_max",
            required: false,
            kind: ParamKind::Int,
            default: Some("1000"),
            doc: "`uniform`: ints are drawn from [0, int_max)",
        },
        ParamSpec {
            name: "start_ts",
            required: false,
            kind: ParamKind::Int,
            default: Some("1700000000000"),
            doc: "`uniform`: the timestamp of row 0, in epoch milliseconds",
        },
        ParamSpec {
            name: "ts_step",
            required: false,
            kind: ParamKind::Duration,
            default: Some("1ms"),
            doc: "`uniform`: event time between consecutive rows",
        },
    ],
};

/// The first timestamp of the `events` profile (as in `gen_events.py`).
const EVENTS_TS0: i64 = 1_700_000_000_000;
const EVENTS_SENSORS: usize = 1000;

#[derive(Clone, Copy, Debug)]
enum Profile {
    Uniform {
        int_max: u64,
        start_ts: i64,
        ts_step: i64,
    },
    Events,
}

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(
    op: &OperatorDef,
    declared: &[Option<SchemaRef>],
) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    let schema = declared_source_schema(op, declared)?;
    let watermarks = anduin_operator_api::event_time::watermark_spec(&p, &schema)?;
    let profile = match p.str_or("profile", "uniform").as_str() {
        "events" => {
            let kinds: Vec<Option<ColumnType>> = schema
                .fields()
                .iter()
                .map(|f| ColumnType::from_arrow(f.data_type()))
                .collect();
            let ok = matches!(
                kinds.as_slice(),
                [
                    Some(ColumnType::Timestamp | ColumnType::Int),
                    Some(ColumnType::Int),
                    Some(ColumnType::Int)
                ]
            );
            if !ok {
                return Err(p
                    .error(
                        "profile",
                        "profile \"events\" produces (ts timestamp or int, sensor int, value int): the output type must have exactly these three columns",
                    )
                    .into());
            }
            Profile::Events
        }
        _ => {
            let int_max = p.int("int_max").unwrap_or(1000);
            if int_max <= 0 {
                return Err(p.error("int_max", "must be at least 1").into());
            }
            Profile::Uniform {
                int_max: int_max.unsigned_abs(),
                start_ts: p.int("start_ts").unwrap_or(EVENTS_TS0),
                ts_step: i64::try_from(p.duration_ms_or("ts_step", 1)).unwrap_or(i64::MAX),
            }
        }
    };
    let count = match p.int("count") {
        Some(c) if c < 0 => return Err(p.error("count", "must not be negative").into()),
        Some(c) => Some(c.unsigned_abs()),
        None => None,
    };
    let rate = match p.number("rate") {
        Some(r) if !crate::pace::valid_rate(r) => {
            return Err(p.error("rate", crate::pace::RATE_RANGE).into())
        }
        r => r,
    };
    let seed = p.int("seed").unwrap_or(42) as u64;
    let name = op.name.to_string();
    let out = Arc::clone(&schema);
    Ok(Binding {
        bound: Bound::Source(Arc::new(move |ctx| {
            let mut g = Generator::new(name.clone(), Arc::clone(&out), profile, seed, count, rate);
            g.watermarks = watermarks;
            g.pace.set_clock(Arc::clone(&ctx.clock));
            Ok(Box::new(g))
        })),
        outputs: vec![schema],
        warnings: Diagnostics::default(),
        partition_by: Vec::new(),
    })
}

/// The params a running generator can change.
pub const ADJUSTABLE: &[&str] = &["rate"];

/// The splitmix64 step of `gen_events.py`.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    mix(*state)
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A running generator.
pub struct Generator {
    name: String,
    schema: SchemaRef,
    profile: Profile,
    seed: u64,
    count: Option<u64>,
    rate: Option<f64>,
    /// Rows produced so far (the offset of the next row).
    produced: u64,
    /// When rows are due, with `rate`.
    pace: Pace,
    watermarks: Option<anduin_operator_api::WatermarkSpec>,
    /// `events` profile state: the RNG and each sensor's last value.
    rng: u64,
    last: Vec<i64>,
}

impl Generator {
    fn new(
        name: String,
        schema: SchemaRef,
        profile: Profile,
        seed: u64,
        count: Option<u64>,
        rate: Option<f64>,
    ) -> Self {
        Self {
            name,
            schema,
            profile,
            seed,
            count,
            rate,
            produced: 0,
            pace: Pace::default(),
            watermarks: None,
            rng: seed,
            last: vec![50; EVENTS_SENSORS],
        }
    }

    fn make(&mut self, n: usize) -> Result<RecordBatch, OperatorError> {
        let columns = match self.profile {
            Profile::Events => self.events(n),
            Profile::Uniform {
                int_max,
                start_ts,
                ts_step,
            } => self.uniform(n, int_max, start_ts, ts_step),
        };
        self.produced += n as u64;
        RecordBatch::try_new(Arc::clone(&self.schema), columns).map_err(|e| {
            OperatorError::Execution {
                operator: self.name.clone(),
                message: e.to_string(),
            }
        })
    }

    fn events(&mut self, n: usize) -> Vec<ArrayRef> {
        let mut ts = Vec::with_capacity(n);
        let mut sensor = Vec::with_capacity(n);
        let mut value = Vec::with_capacity(n);
        let base = EVENTS_TS0 + self.produced as i64;
        for i in 0..n {
            let s = (splitmix64(&mut self.rng) % EVENTS_SENSORS as u64) as usize;
            let step = (splitmix64(&mut self.rng) % 7) as i64 - 3;
            let slot = self.last.get_mut(s).expect("sensor < EVENTS_SENSORS");
            let v = (*slot + step).clamp(0, 99);
            *slot = v;
            ts.push(base + i as i64);
            sensor.push(s as i64);
            value.push(v);
        }
        let ts: ArrayRef = match self.schema.field(0).data_type() {
            DataType::Timestamp(_, _) => Arc::new(TimestampMillisecondArray::from(ts)),
            _ => Arc::new(Int64Array::from(ts)),
        };
        vec![
            ts,
            Arc::new(Int64Array::from(sensor)),
            Arc::new(Int64Array::from(value)),
        ]
    }

    fn uniform(&self, n: usize, int_max: u64, start_ts: i64, ts_step: i64) -> Vec<ArrayRef> {
        let ncols = self.schema.fields().len() as u64;
        let first = self.produced;
        let draw = |row: u64, col: usize| -> u64 {
            mix(self.seed.wrapping_add(
                (row.wrapping_mul(ncols).wrapping_add(col as u64))
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ))
        };
        self.schema
            .fields()
            .iter()
            .enumerate()
            .map(|(c, f)| -> ArrayRef {
                let rows = first..first + n as u64;
                match ColumnType::from_arrow(f.data_type()) {
                    Some(ColumnType::Int) => Arc::new(Int64Array::from_iter_values(
                        rows.map(|r| (draw(r, c) % int_max) as i64),
                    )),
                    Some(ColumnType::Double) => Arc::new(Float64Array::from_iter_values(
                        rows.map(|r| (draw(r, c) >> 11) as f64 / (1u64 << 53) as f64),
                    )),
                    Some(ColumnType::Bool) => Arc::new(BooleanArray::from(
                        rows.map(|r| draw(r, c) & 1 == 1).collect::<Vec<_>>(),
                    )),
                    Some(ColumnType::Timestamp) => {
                        Arc::new(TimestampMillisecondArray::from_iter_values(rows.map(|r| {
                            start_ts.wrapping_add((r as i64).wrapping_mul(ts_step))
                        })))
                    }
                    _ => {
                        let mut b = StringBuilder::with_capacity(n, n * 3);
                        for r in rows {
                            b.append_value(format!("k{}", draw(r, c) % 100));
                        }
                        Arc::new(b.finish())
                    }
                }
            })
            .collect()
    }
}

/// Where a generator is, as a checkpoint's manifest keeps it.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Position {
    /// Rows produced so far.
    produced: u64,
    /// The `events` profile: its random generator's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rng: Option<u64>,
    /// The `events` profile: each sensor's last value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last: Option<Vec<i64>>,
}

impl Source for Generator {
    fn name(&self) -> &str {
        &self.name
    }

    fn adjustable_params(&self) -> &'static [&'static str] {
        ADJUSTABLE
    }

    /// A new rate counts from now: the next row comes one interval of the new rate after
    /// the change (the rows the old rate had not allowed yet are not owed).
    fn set_param(&mut self, param: &str, value: &str) -> Result<(), ControlError> {
        let rate = crate::pace::changed_rate(&self.name, param, value, ADJUSTABLE)?;
        self.rate = Some(rate);
        self.pace.change(self.produced);
        Ok(())
    }

    fn poll(&mut self, max_rows: usize, deadline: Instant) -> Result<SourcePoll, OperatorError> {
        let remaining = self.count.map_or(u64::MAX, |c| c - self.produced.min(c));
        if remaining == 0 {
            return Ok(SourcePoll::Exhausted);
        }
        let mut n = remaining.min(max_rows.max(1) as u64);
        if let Some(rate) = self.rate {
            let Some(due) = self.pace.due_before(rate, self.produced, deadline) else {
                return Ok(SourcePoll::Idle);
            };
            let available = due - self.produced;
            n = n.min(available);
        }
        let n = usize::try_from(n).expect("at most max_rows");
        self.make(n).map(SourcePoll::Batch)
    }

    fn can_resume(&self) -> Result<(), String> {
        Ok(())
    }

    fn watermarks(&self) -> Option<anduin_operator_api::WatermarkSpec> {
        self.watermarks
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        let events = matches!(self.profile, Profile::Events);
        let position = Position {
            produced: self.produced,
            rng: events.then_some(self.rng),
            last: events.then(|| self.last.clone()),
        };
        out.inline_typed(&self.name, &position)
    }

    fn restore(&mut self, state: RestoreIn) -> Result<(), OperatorError> {
        let bad = |what: &str| {
            OperatorError::Execution {
            operator: self.name.clone(),
            message: format!(
                "the manifest of checkpoint {} holds a malformed position: {what}; restore from an earlier checkpoint",
                state.epoch.0
            ),
        }
        };
        let position: Position = state.inline_as(&self.name)?;
        self.produced = position.produced;
        if matches!(self.profile, Profile::Events) {
            self.rng = position.rng.ok_or_else(|| bad("no `rng`"))?;
            let last = position.last.ok_or_else(|| bad("no `last`"))?;
            if last.len() != EVENTS_SENSORS {
                return Err(bad("`last` has the wrong length"));
            }
            self.last = last;
        }
        // A rate restarts from now: rows already produced are not owed again.
        self.pace.restart(self.produced);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{Field, Schema, TimeUnit};
    use std::time::Duration;

    fn events_schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
            Field::new("sensor", DataType::Int64, true),
            Field::new("value", DataType::Int64, true),
        ]))
    }

    fn rows(g: &mut Generator, max: usize) -> Vec<RecordBatch> {
        let mut out = vec![];
        let far = Instant::now() + Duration::from_secs(60);
        loop {
            match g.poll(max, far).expect("polls") {
                SourcePoll::Batch(b) => out.push(b),
                SourcePoll::Idle => {}
                SourcePoll::Exhausted => return out,
            }
        }
    }

    #[test]
    fn a_rate_on_a_manual_clock_produces_exactly_the_rows_its_time_allows() {
        let clock = Arc::new(anduin_types::ManualClock::new());
        let mut g = Generator::new(
            "g".into(),
            events_schema(),
            Profile::Events,
            42,
            None,
            Some(1000.0),
        );
        g.pace
            .set_clock(Arc::clone(&clock) as anduin_types::SharedClock);
        let now = Instant::now();
        let produced = |g: &mut Generator| -> usize {
            let mut n = 0;
            while let SourcePoll::Batch(b) = g.poll(10_000, now).expect("polls") {
                n += b.num_rows();
            }
            n
        };
        assert_eq!(produced(&mut g), 1, "the first row is due at once");
        clock.advance(Duration::from_millis(250));
        assert_eq!(produced(&mut g), 250);
        clock.advance(Duration::from_secs(2));
        assert_eq!(produced(&mut g), 2000);
        assert_eq!(produced(&mut g), 0, "the clock stands still");
    }

    #[test]
    fn the_events_profile_matches_gen_events_py() {
        // First rows of `python3 gen_events.py 5 -`.
        let mut g = Generator::new(
            "g".into(),
            events_schema(),
            Profile::Events,
            42,
            Some(5),
            None,
        );
        let b = arrow::compute::concat_batches(&events_schema(), &rows(&mut g, 2)).expect("concat");
        let sensors = b
            .column(1)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ints");
        let values = b
            .column(2)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ints");
        let expected = python_rows(5);
        let got: Vec<(i64, i64)> = sensors
            .values()
            .iter()
            .copied()
            .zip(values.values().iter().copied())
            .collect();
        assert_eq!(got, expected);
    }

    /// The rows of gen_events.py, recomputed the way the Python does it.
    fn python_rows(n: usize) -> Vec<(i64, i64)> {
        const MASK: u128 = (1 << 64) - 1;
        let mut state: u128 = 42;
        let mut last = vec![50i64; 1000];
        let mut draw = || {
            state = (state + 0x9E37_79B9_7F4A_7C15) & MASK;
            let mut z = state;
            z = ((z ^ (z >> 30)) * 0xBF58_476D_1CE4_E5B9) & MASK;
            z = ((z ^ (z >> 27)) * 0x94D0_49BB_1331_11EB) & MASK;
            z ^ (z >> 31)
        };
        (0..n)
            .map(|_| {
                let s = (draw() % 1000) as usize;
                let v = (last[s] + (draw() % 7) as i64 - 3).clamp(0, 99);
                last[s] = v;
                (s as i64, v)
            })
            .collect()
    }

    #[test]
    fn uniform_rows_depend_only_on_seed_and_offset() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("x", DataType::Float64, true),
            Field::new("n", DataType::Int64, true),
        ]));
        let profile = Profile::Uniform {
            int_max: 10,
            start_ts: 0,
            ts_step: 1,
        };
        let mut a = Generator::new("g".into(), Arc::clone(&schema), profile, 7, Some(100), None);
        let mut b = Generator::new("g".into(), Arc::clone(&schema), profile, 7, Some(100), None);
        let a = arrow::compute::concat_batches(&schema, &rows(&mut a, 7)).expect("concat");
        let b = arrow::compute::concat_batches(&schema, &rows(&mut b, 64)).expect("concat");
        assert_eq!(a, b);
        assert_eq!(a.num_rows(), 100);
        let n = a
            .column(2)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ints");
        assert!(n.values().iter().all(|v| (0..10).contains(v)));
    }
}
