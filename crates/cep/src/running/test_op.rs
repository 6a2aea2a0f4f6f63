//! A pattern operator over rows of (event time, sensor, value), partitioned by sensor, and
//! what it emits: shared by the tests of the running operator.

use std::sync::Arc;

use anduin_operator_api::{BuildContext, Collector, OperatorError};
use arrow::array::{Array, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use super::super::compile;
use super::PatternOp;

/// Event time (ms), sensor, value.
pub(super) fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, true),
        Field::new("sensor", DataType::Int64, true),
        Field::new("value", DataType::Int64, true),
    ]))
}

/// A batch of rows (event time, sensor, value).
pub(super) fn batch(rows: &[(i64, i64, i64)]) -> RecordBatch {
    let col = |f: fn(&(i64, i64, i64)) -> i64| -> Arc<dyn Array> {
        Arc::new(Int64Array::from_iter_values(rows.iter().map(f)))
    };
    RecordBatch::try_new(schema(), vec![col(|r| r.0), col(|r| r.1), col(|r| r.2)]).expect("valid")
}

/// What the pattern emitted: a row (its port and int values), or a mark the test adds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Event {
    Row(usize, Vec<Option<i64>>),
    /// The end of event time, forwarded.
    End,
    Exhausted,
}

/// Collects what the pattern emits.
#[derive(Default)]
pub(super) struct Seen(pub(super) Vec<Event>);

impl Collector for Seen {
    fn collect(&mut self, port: usize, batch: RecordBatch) -> Result<(), OperatorError> {
        for r in 0..batch.num_rows() {
            let values = batch
                .columns()
                .iter()
                .map(|c| {
                    let c = c.as_any().downcast_ref::<Int64Array>().expect("ints");
                    (!c.is_null(r)).then(|| c.value(r))
                })
                .collect();
            self.0.push(Event::Row(port, values));
        }
        Ok(())
    }
}

/// A pattern over stream `s` with `params` (`.flow` param lines), partitioned by sensor; with
/// `timeout_output`, its second output is named `late`.
pub(super) fn pattern(params: &str) -> PatternOp {
    pattern_over(
        schema(),
        &format!("  param partition_by = \"sensor\"\n{params}"),
    )
}

/// A pattern over stream `s` of `schema`, ordered by its column `ts`, with `params`, as
/// [`pattern`] makes one.
pub(super) fn pattern_over(schema: SchemaRef, params: &str) -> PatternOp {
    pattern_built(schema, params, &BuildContext::default())
}

/// A pattern as [`pattern_over`] makes one, built with `ctx`.
pub(super) fn pattern_built(schema: SchemaRef, params: &str, ctx: &BuildContext) -> PatternOp {
    let late = if params.contains("timeout_output") {
        "  output name = \"late\"\n"
    } else {
        ""
    };
    let src = format!(
        "operator name = \"p\", type = \"pattern\" {{\n  input name = \"s\"\n  param order_by = \"ts\"\n{params}\n  output name = \"m\"\n{late}}}\n"
    );
    let spec = anduin_spec::parse_flow(&src).expect("parses");
    let def = spec.operators.into_iter().next().expect("one operator");
    let setup = compile(&def, &[("s", schema)]).unwrap_or_else(|e| panic!("compiles: {e:?}"));
    PatternOp::new(Arc::new(setup), ctx).expect("builds")
}

/// Rows and the watermark after them, batch by batch.
pub(super) type Input = [(Vec<(i64, i64, i64)>, Option<i64>)];

/// Random rows of up to 40 sensors, in event-time order but for some late ones, in batches
/// of 1–20, each followed now and then by a watermark some milliseconds behind, where
/// `watermark_at(batch, batches)` allows one.
pub(super) fn random_input(
    rng: &mut super::super::test_rng::Rng,
    watermark_at: impl Fn(u64, u64) -> bool,
) -> Box<Input> {
    let sensors = 1 + rng.below(40) as i64;
    let delay = rng.below(20) as i64;
    let n = 20 + rng.below(40);
    let mut ts = 0i64;
    let mut batches = Vec::new();
    for b in 0..n {
        let rows: Vec<_> = (0..1 + rng.below(20))
            .map(|_| {
                ts += rng.below(4) as i64;
                let t = if rng.below(10) == 0 {
                    ts - rng.below(30) as i64
                } else {
                    ts
                };
                (t, rng.below(sensors as u64) as i64, rng.below(120) as i64)
            })
            .collect();
        let wm = (watermark_at(b, n) && rng.below(3) > 0).then_some(ts - delay);
        batches.push((rows, wm));
    }
    batches.into()
}
