//! A window grouped by a double puts every NaN in one group, whatever its sign and payload
//! (`0.0 / 0.0` is a negative NaN on x86, `'NaN'` parses to a positive one), and reports its
//! key as the canonical NaN; `-0.0` and `0.0` are two groups, and nulls one more. A join on a
//! double pairs a NaN with a NaN of another sign. The key encoding does it, so the exchange,
//! windows, joins and patterns agree.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use anduin_operator_api::{Collector, Operator, OperatorError};
use anduin_types::Watermark;
use arrow::array::{Array, Float64Array, Int64Array, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;

const T0: i64 = 1_700_000_000_000;

fn negative_nan() -> f64 {
    f64::from_bits(f64::NAN.to_bits() | (1 << 63))
}

fn payload_nan() -> f64 {
    f64::from_bits(f64::NAN.to_bits() | 0x5)
}

fn batch(value: &str, rows: &[(i64, Option<f64>, i64)]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        Field::new("fk", DataType::Float64, true),
        Field::new(value, DataType::Int64, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(TimestampMillisecondArray::from(
                rows.iter().map(|r| T0 + r.0).collect::<Vec<_>>(),
            )),
            Arc::new(Float64Array::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
        ],
    )
    .expect("valid")
}

/// Per group key (the bits of the double, `None` for null): the rows and the sum of `v`, of
/// every result row.
#[derive(Default)]
struct Groups(Vec<(Option<u64>, i64, i64)>);

impl Collector for Groups {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        let schema = b.schema();
        let column = |name: &str| b.column(schema.index_of(name).expect("a column"));
        let fk = column("fk")
            .as_any()
            .downcast_ref::<Float64Array>()
            .expect("doubles");
        let n = column("n")
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ints");
        let s = column("s")
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ints");
        for i in 0..b.num_rows() {
            let key = fk.is_valid(i).then(|| fk.value(i).to_bits());
            self.0.push((key, n.value(i), s.value(i)));
        }
        Ok(())
    }
}

fn window(kind: &str) -> Box<dyn Operator> {
    common::operator(&format!(
        r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "fk", type = "double" column name = "v", type = "int" }}
operator name = "g", type = "generator" {{ output name = "s", type = "T" }}
operator name = "op", type = "window" {{
  input name = "s" {kind} param time = "ts" param keys = "fk"
  param aggregates = "COUNT(*) AS n, SUM(v) AS s"
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    ))
}

#[test]
fn a_window_grouped_by_a_double_has_one_group_of_nans() {
    let first = [
        (0, Some(negative_nan()), 1),
        (1, Some(0.0), 10),
        (2, Some(f64::NAN), 2),
        (3, None, 100),
    ];
    let second = [
        (4, Some(-0.0), 1000),
        (5, Some(payload_nan()), 4),
        (6, Some(-f64::NAN), 8),
        (7, None, 200),
        (8, Some(1.5), 5000),
    ];
    for kind in [
        r#"param kind = "tumbling" param size = "1s""#,
        r#"param kind = "session" param gap = "1s""#,
    ] {
        let mut op = window(kind);
        let mut out = Groups::default();
        for rows in [&first[..], &second[..]] {
            op.process_batch(0, batch("v", rows), &mut out)
                .expect("processes");
        }
        op.handle_watermark(Watermark::MAX, &mut out)
            .expect("advances");
        op.on_end_of_input(&mut out).expect("ends");
        let groups: BTreeMap<Option<u64>, (i64, i64)> =
            out.0.iter().map(|(k, n, s)| (*k, (*n, *s))).collect();
        assert_eq!(
            out.0.len(),
            groups.len(),
            "{kind}: a group twice: {:?}",
            out.0
        );
        let expected: BTreeMap<Option<u64>, (i64, i64)> = [
            (Some(f64::NAN.to_bits()), (4, 15)),
            (Some(0.0f64.to_bits()), (1, 10)),
            (Some((-0.0f64).to_bits()), (1, 1000)),
            (Some(1.5f64.to_bits()), (1, 5000)),
            (None, (2, 300)),
        ]
        .into_iter()
        .collect();
        assert_eq!(groups, expected, "{kind}");
    }
}

#[test]
fn a_join_on_a_double_pairs_nans_of_any_sign() {
    let mut op = common::operator(
        r#"type name = "L" { column name = "ts", type = "timestamp" column name = "fk", type = "double" column name = "v", type = "int" }
type name = "R" { column name = "ts", type = "timestamp" column name = "fk", type = "double" column name = "w", type = "int" }
operator name = "gl", type = "generator" { output name = "l", type = "L" }
operator name = "gr", type = "generator" { output name = "r", type = "R" }
operator name = "op", type = "join" {
  input name = "l" input name = "r" param kind = "interval" param lower = "-1s" param upper = "1s"
  param on = "l.fk = r.fk" param left_time = "ts" param right_time = "ts"
  output name = "out" }
operator name = "d", type = "discard" { input name = "out" }"#,
    );
    struct Pairs(Vec<(i64, i64)>);
    impl Collector for Pairs {
        fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
            let schema = b.schema();
            let int = |name: &str| {
                b.column(schema.index_of(name).expect("a column"))
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .expect("ints")
                    .clone()
            };
            let (v, w) = (int("v"), int("w"));
            self.0
                .extend((0..b.num_rows()).map(|i| (v.value(i), w.value(i))));
            Ok(())
        }
    }
    let mut out = Pairs(vec![]);
    op.process_batch(
        0,
        batch("v", &[(0, Some(f64::NAN), 1), (1, Some(0.0), 2)]),
        &mut out,
    )
    .expect("processes");
    op.process_batch(
        1,
        batch(
            "w",
            &[
                (2, Some(negative_nan()), 10),
                (3, Some(payload_nan()), 20),
                (4, Some(-0.0), 30),
            ],
        ),
        &mut out,
    )
    .expect("processes");
    op.handle_watermark(Watermark::MAX, &mut out)
        .expect("advances");
    out.0.sort();
    assert_eq!(
        out.0,
        vec![(1, 10), (1, 20)],
        "NaN pairs with every NaN; 0.0 not with -0.0"
    );
}
