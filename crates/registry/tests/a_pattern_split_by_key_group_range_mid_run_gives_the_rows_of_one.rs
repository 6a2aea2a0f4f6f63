//! Live rescaling's primitive on the `pattern` operator: a checkpoint of one instance, its
//! keyed table cut into two ranges of key groups (`KeyedTable::export`), restores two
//! instances that, fed the rows the hash exchange sends each (by `KeyEncoder::instance`),
//! together give the rows of one instance that ran straight through. Partitions and the rows
//! still waiting for the watermark when the checkpoint was taken must both move with their
//! partition key's key group: a waiting row left behind would be lost or matched twice.

use crate::common;

use std::num::NonZeroU16;
use std::sync::Arc;

use anduin_operator_api::keys::KeyEncoder;
use anduin_operator_api::{Collector, Operator, OperatorError, RestoreIn};
use anduin_state::{assign_ranges, BackendKind, KeyedTable, TableError, DEFAULT_MAX_KEY_GROUPS};
use anduin_types::{Epoch, Watermark};
use arrow::array::{Array, ArrayRef, Int64Array, StringArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;

/// (event time, key, value)
type Row = (i64, i64, i64);
/// (event time, key, value, MATCH_NUMBER, CLASSIFIER)
type Out = (i64, i64, i64, i64, String);

const FLOW: &str = r#"type name = "T" { column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "value", type = "int" }
operator name = "g", type = "generator" { output name = "in", type = "T" }
operator name = "op", type = "pattern" {
  input name = "in"
  param partition_by = "k" param order_by = "ts" param pattern = "A+ B"
  param define = "A AS value < 6"
  param define = "B AS value >= 6"
  param rows_per_match = "all"
  param measures = "MATCH_NUMBER() AS m, CLASSIFIER() AS cls"
  output name = "out" }
operator name = "d", type = "discard" { input name = "out" }"#;

#[derive(Default)]
struct Collect(Vec<Out>);

impl Collector for Collect {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        let int = |i: usize| -> Vec<i64> {
            let c = b.column(i);
            if let Some(a) = c.as_any().downcast_ref::<TimestampMillisecondArray>() {
                return a.values().to_vec();
            }
            let a = c.as_any().downcast_ref::<Int64Array>().expect("int");
            a.values().to_vec()
        };
        let (ts, k, v, m) = (int(0), int(1), int(2), int(3));
        let cls = b
            .column(4)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("string");
        for i in 0..b.num_rows() {
            self.0
                .push((ts[i], k[i], v[i], m[i], cls.value(i).to_string()));
        }
        Ok(())
    }
}

fn batch(rows: &[Row]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        Field::new("k", DataType::Int64, true),
        Field::new("value", DataType::Int64, true),
    ]));
    let col = |f: fn(&Row) -> i64| rows.iter().map(f).collect::<Vec<_>>();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(TimestampMillisecondArray::from(col(|r| r.0))),
            Arc::new(Int64Array::from(col(|r| r.1))),
            Arc::new(Int64Array::from(col(|r| r.2))),
        ],
    )
    .expect("valid")
}

/// Seeded batches of rows of 40 keys, a little out of order, each followed by a watermark
/// 50 ms behind the latest time (so that many rows wait when a checkpoint is taken).
fn input(seed: u64) -> Vec<(Vec<Row>, i64)> {
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut batches = Vec::new();
    let mut t = 1_000;
    for _ in 0..60 {
        let rows: Vec<Row> = (0..20)
            .map(|_| {
                t += 3;
                let ts = t - (next() % 20) as i64;
                (ts, (next() % 40) as i64, (next() % 10) as i64)
            })
            .collect();
        batches.push((rows, t - 50));
    }
    batches
}

/// Which of `instances` instances the exchange sends each row of `rows` to.
fn routes(rows: &[Row], instances: u16) -> Vec<usize> {
    let keys: ArrayRef = Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1)));
    let encoder = KeyEncoder::new([DataType::Int64]).expect("an encoder");
    let encoded = encoder.encode(&[keys]).expect("encodes");
    let p = NonZeroU16::new(instances).expect("not zero");
    encoded
        .iter()
        .map(|k| KeyEncoder::instance(k.as_ref(), p))
        .collect()
}

fn feed(op: &mut dyn Operator, rows: &[Row], wm: i64, out: &mut Collect) {
    op.process_batch(0, batch(rows), out).expect("processes");
    op.handle_watermark(Watermark(wm), out).expect("advances");
}

fn finish(op: &mut dyn Operator, out: &mut Collect) {
    op.handle_watermark(Watermark::MAX, out).expect("advances");
    op.on_end_of_input(out).expect("ends");
}

#[test]
fn two_instances_restored_from_two_key_group_ranges_give_the_rows_of_one() -> Result<(), TableError>
{
    for seed in [1u64, 7, 0x5eed] {
        let batches = input(seed);
        let mut expected = Collect::default();
        let mut one = common::operator(FLOW);
        for (rows, wm) in &batches {
            feed(one.as_mut(), rows, *wm, &mut expected);
        }
        finish(one.as_mut(), &mut expected);
        expected.0.sort();
        assert!(
            !expected.0.is_empty(),
            "seed {seed}: the case finds matches"
        );

        // One instance up to half-way, then a full checkpoint.
        let (before, after) = batches.split_at(batches.len() / 2);
        let mut got = Collect::default();
        let mut first = common::operator(FLOW);
        for (rows, wm) in before {
            feed(first.as_mut(), rows, *wm, &mut got);
        }
        let checkpoint = common::checkpoint(&mut first, false);

        // Its table cut into the key groups of two instances.
        let mut table = KeyedTable::new("op", BackendKind::Heap, None);
        let mut waiting = 0;
        table.restore(&mut checkpoint.bytes.as_slice(), &mut [], |e| {
            waiting += usize::from(e.sub_key.first() == Some(&b'w'));
            Ok::<(), TableError>(())
        })?;
        assert!(waiting > 0, "seed {seed}: rows wait at the checkpoint");
        let ranges = assign_ranges(DEFAULT_MAX_KEY_GROUPS, NonZeroU16::new(2).expect("2"))
            .expect("2 <= max");
        let mut halves = Vec::new();
        for range in &ranges {
            let mut bytes = Vec::new();
            let _ = table.export(*range, &mut bytes)?;
            halves.push(bytes);
        }

        let mut instances: Vec<Box<dyn Operator>> = halves
            .into_iter()
            .map(|bytes| {
                let mut op = common::operator(FLOW);
                op.restore(RestoreIn {
                    epoch: Epoch(1),
                    inline: checkpoint.inline.clone(),
                    files: vec![Box::new(std::io::Cursor::new(bytes))],
                })
                .expect("restores");
                op
            })
            .collect();
        for (rows, wm) in after {
            let to = routes(rows, 2);
            for (i, op) in instances.iter_mut().enumerate() {
                let mine: Vec<Row> = rows
                    .iter()
                    .zip(&to)
                    .filter(|(_, t)| **t == i)
                    .map(|(r, _)| *r)
                    .collect();
                feed(op.as_mut(), &mine, *wm, &mut got);
            }
        }
        for op in &mut instances {
            finish(op.as_mut(), &mut got);
        }
        got.0.sort();
        assert_eq!(got.0, expected.0, "seed {seed}");
    }
    Ok(())
}
