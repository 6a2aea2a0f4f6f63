//! A filter following a control stream by event time, fed seeded random interleavings of
//! data rows (out of order within the watermark), control rows (each a new threshold from its
//! time on), and both streams' watermarks, and restored from a checkpoint at a random point,
//! keeps exactly the rows a naive reference keeps: each row under the last change at or
//! before its event time (of two at one time, the later arrival).

use crate::common;

use std::sync::Arc;

use anduin_operator_api::{Collector, OperatorError};
use anduin_types::Watermark;
use arrow::array::{Array, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;

use common::{checkpoint, operator, restored};

const QUERY: &str = r#"
type name = "Reading" {
  column name = "ts", type = "int"
  column name = "value", type = "int"
}
type name = "Change" {
  column name = "operator", type = "string"
  column name = "param", type = "string"
  column name = "value", type = "string"
  column name = "ts", type = "int"
}
operator name = "data", type = "generator" {
  param profile = "uniform"
  param event_time = "ts"
  output name = "readings", type = "Reading"
}
operator name = "changes", type = "reader" {
  param path = "changes.csv"
  output name = "changeRows", type = "Change"
}
operator name = "op", type = "filter" {
  input name = "readings"
  control name = "changeRows", time = "ts"
  param condition = "value < 50"
  output name = "out"
}
operator name = "sink", type = "discard" {
  input name = "out"
}
"#;

/// A small deterministic RNG (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % below
    }

    fn int(&mut self, below: u64) -> i64 {
        i64::try_from(self.next(below)).expect("small")
    }
}

/// A data row: (event time, value).
type Row = (i64, i64);

struct Rows(Vec<Row>);

impl Collector for Rows {
    fn collect(&mut self, _port: usize, batch: RecordBatch) -> Result<(), OperatorError> {
        let col = |i: usize| {
            batch
                .column(i)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("ints")
                .clone()
        };
        let (ts, v) = (col(0), col(1));
        self.0
            .extend((0..batch.num_rows()).map(|i| (ts.value(i), v.value(i))));
        Ok(())
    }
}

fn data(rows: &[(i64, i64)]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, true),
        Field::new("value", DataType::Int64, true),
    ]));
    let (ts, v): (Vec<i64>, Vec<i64>) = rows.iter().copied().unzip();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ts)),
            Arc::new(Int64Array::from(v)),
        ],
    )
    .expect("valid")
}

fn changes(rows: &[(i64, i64)]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("operator", DataType::Utf8, true),
        Field::new("param", DataType::Utf8, true),
        Field::new("value", DataType::Utf8, true),
        Field::new("ts", DataType::Int64, true),
    ]));
    let n = rows.len();
    let values: Vec<String> = rows.iter().map(|(_, k)| format!("value < {k}")).collect();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(vec!["op"; n])),
            Arc::new(StringArray::from(vec!["condition"; n])),
            Arc::new(StringArray::from(values)),
            Arc::new(Int64Array::from(
                rows.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
            )),
        ],
    )
    .expect("valid")
}

/// One seeded run: returns (what the operator kept, what the reference keeps), sorted.
fn run(seed: u64) -> (Vec<Row>, Vec<Row>) {
    let mut rng = Rng(seed);
    // Data rows about 10 apart, up to 30 out of order; changes about 200 apart.
    let n = 200 + rng.next(400) as usize;
    let data_rows: Vec<(i64, i64)> = (0..n)
        .map(|i| (i as i64 * 10 + rng.int(30), rng.int(100)))
        .collect();
    let m = 1 + rng.next(12) as usize;
    let mut control_rows: Vec<(i64, i64)> = (0..m)
        .map(|i| (i as i64 * 200 + rng.int(150), rng.int(100)))
        .collect();
    control_rows.sort_by_key(|(t, _)| *t);

    // The reference: each row under the last change at or before it.
    let mut expected: Vec<(i64, i64)> = data_rows
        .iter()
        .copied()
        .filter(|(t, v)| {
            let k = control_rows
                .iter()
                .rev()
                .find(|(at, _)| at <= t)
                .map_or(50, |(_, k)| *k);
            *v < k
        })
        .collect();
    expected.sort_unstable();

    let mut op = operator(QUERY);
    let mut out = Rows(Vec::new());
    let (mut di, mut ci) = (0, 0);
    let restart_at = rng.next(40);
    let mut step = 0;
    while di < data_rows.len() || ci < control_rows.len() {
        step += 1;
        if step == restart_at {
            let mem = checkpoint(&mut op, false);
            op = restored(|| operator(QUERY), vec![mem]);
        }
        if rng.next(3) > 0 && di < data_rows.len() {
            let k = (1 + rng.next(40) as usize).min(data_rows.len() - di);
            op.process_batch(0, data(&data_rows[di..di + k]), &mut out)
                .expect("data");
            di += k;
        } else if ci < control_rows.len() {
            let k = (1 + rng.next(2) as usize).min(control_rows.len() - ci);
            op.process_batch(1, changes(&control_rows[ci..ci + k]), &mut out)
                .expect("changes");
            ci += k;
        }
        // Watermarks: no row before them is still to come on their stream.
        let data_wm = data_rows[di..]
            .iter()
            .map(|r| r.0)
            .min()
            .unwrap_or(i64::MAX);
        let control_wm = control_rows[ci..]
            .iter()
            .map(|r| r.0)
            .min()
            .unwrap_or(i64::MAX);
        if rng.next(2) == 0 {
            op.handle_input_watermark(1, Watermark(control_wm), &mut out)
                .expect("control watermark");
            op.handle_watermark(Watermark(data_wm.min(control_wm)), &mut out)
                .expect("watermark");
        }
    }
    op.on_end_of_input(&mut out).expect("end");
    let mut got = out.0;
    got.sort_unstable();
    (got, expected)
}

#[test]
fn a_filter_following_a_control_stream_agrees_with_a_naive_reference() {
    for seed in 0..300 {
        let (got, expected) = run(seed);
        assert_eq!(got, expected, "seed {seed}");
    }
}
