//! An OVER window emits its rows in one order whatever watermarks come and whether it was
//! restored from a checkpoint on the way: a sink that names rows by their place (NATS
//! exactly once) writes each row once only if every run emits the same rows in one order.

use std::sync::Arc;

use anduin_operator_api::{BuildContext, Collector, Operator, OperatorError};
use anduin_types::Watermark;
use arrow::array::{Array, Int64Array, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;

use crate::checkpoint_tests::{restore, Memory};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        Field::new("k", DataType::Int64, true),
    ]))
}

fn over() -> Box<dyn Operator> {
    let src = r#"operator name = "o", type = "over" {
  input name = "s" param keys = "k" param time = "ts" param frame = "rows 2"
  param aggregates = "COUNT(*) AS n" output name = "out" }"#;
    let spec = anduin_spec::parse_flow(src).expect("parses");
    let op = spec.operators.first().expect("one operator");
    let binding = super::bind(op, &[("s", schema())]).expect("binds");
    let anduin_operator_api::Bound::Operator(factory) = binding.bound else {
        panic!("an OVER window is an operator with inputs")
    };
    factory(&BuildContext::default()).expect("builds")
}

/// Rows out: (ts, k, n), in order.
#[derive(Default)]
struct Out(Vec<(i64, i64, i64)>);

impl Collector for Out {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        let ts = b
            .column(0)
            .as_any()
            .downcast_ref::<TimestampMillisecondArray>();
        let k = b.column(1).as_any().downcast_ref::<Int64Array>();
        let n = b.column(2).as_any().downcast_ref::<Int64Array>();
        let (ts, k, n) = (ts.expect("ts"), k.expect("k"), n.expect("n"));
        self.0
            .extend((0..b.num_rows()).map(|i| (ts.value(i), k.value(i), n.value(i))));
        Ok(())
    }
}

/// Rows `(ts, key)` a little out of time order, keys in no order, from a seeded generator.
fn input(seed: u64, n: usize) -> Vec<(i64, i64)> {
    let mut rng = crate::test_rng::Lcg::new(seed);
    let mut next = || rng.bits();
    (0..n as i64)
        .map(|i| (i / 2 + next() % 3, next() % 12))
        .collect()
}

/// What the OVER window emits for `input` in batches of `batch` rows, each followed by a
/// watermark `lag` behind its latest time; restored from a checkpoint before batch
/// `restart_at`.
fn run(
    input: &[(i64, i64)],
    batch: usize,
    lag: i64,
    restart_at: Option<usize>,
) -> Vec<(i64, i64, i64)> {
    let mut op = over();
    let mut out = Out::default();
    for (i, chunk) in input.chunks(batch).enumerate() {
        if restart_at == Some(i) {
            let mut m = Memory::default();
            op.snapshot(&mut m).expect("snapshots");
            op = over();
            restore(&mut op, m);
        }
        let b = RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(TimestampMillisecondArray::from(
                    chunk.iter().map(|r| r.0).collect::<Vec<_>>(),
                )),
                Arc::new(Int64Array::from(
                    chunk.iter().map(|r| r.1).collect::<Vec<_>>(),
                )),
            ],
        )
        .expect("valid");
        op.process_batch(0, b, &mut out).expect("processes");
        let latest = chunk.iter().map(|r| r.0).max().expect("a chunk has rows");
        op.handle_watermark(Watermark(latest - lag), &mut out)
            .expect("releases");
    }
    op.on_end_of_input(&mut out).expect("ends");
    out.0
}

#[test]
fn an_over_window_emits_one_order_whatever_its_watermarks_and_restores() {
    for seed in 1..=5 {
        let rows = input(seed, 500);
        let reference = run(&rows, 50, 3, None);
        assert_eq!(reference.len(), rows.len(), "seed {seed}: no row is late");
        for (batch, restart_at) in [(50, Some(3)), (7, None), (7, Some(20)), (120, Some(2))] {
            assert_eq!(
                run(&rows, batch, 3, restart_at),
                reference,
                "seed {seed}: batches of {batch}, restored before {restart_at:?}"
            );
        }
    }
}

/// Rows in time order, three of each time, followed by a watermark at each batch's latest
/// time (a source without a delay): a row at the watermark's time is still on time, so no row
/// is dropped, however the batches cut the rows of one time apart.
#[test]
fn rows_at_the_watermark_s_time_are_on_time_however_the_input_is_batched() {
    let rows: Vec<(i64, i64)> = (0..300).map(|i| (i / 3, i % 5)).collect();
    let whole = run(&rows, 300, 0, None);
    assert_eq!(whole.len(), rows.len());
    for batch in [1, 2, 7] {
        assert_eq!(run(&rows, batch, 0, None), whole, "batches of {batch}");
        assert_eq!(
            run(&rows, batch, 0, Some(5)),
            whole,
            "batches of {batch}, restored"
        );
    }
}
