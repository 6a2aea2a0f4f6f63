//! Issue 22, point 9, in the operators: `MIN` and `MAX` of a double column holding NaNs, ±0,
//! ±∞ and random numbers give SQL's total order's extremes (`-∞ < … < -0 < +0 < … < +∞ <
//! NaN`), bit for bit, whatever the order the rows arrive in: in every kind of window (a
//! sliding window merges its panes, a session merges the sessions a row joins, a count window
//! takes rows in arrival order), keyed and global, restored from a checkpoint half-way; and
//! in a pattern's measures.

use crate::common;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use anduin_expr::SqlFloat;
use anduin_operator_api::{Collector, Operator, OperatorError};
use anduin_types::Watermark;
use arrow::array::{Array, Float64Array, Int64Array, TimestampMillisecondArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;
use proptest::prelude::*;

/// (event time, key, value)
type Row = (i64, i64, f64);

/// (window start, window end, key, rows, bits of MIN, bits of MAX)
type Out = (i64, i64, i64, i64, u64, u64);

#[derive(Debug, Clone, Copy)]
enum Kind {
    Sliding(i64, i64),
    Session(i64),
    Count(u64),
}

fn window(kind: Kind, keyed: bool, lsm: bool) -> Box<dyn Operator> {
    let kind = match kind {
        Kind::Sliding(size, slide) => {
            format!(r#"param kind = "sliding" param size = "{size}ms" param slide = "{slide}ms""#)
        }
        Kind::Session(gap) => format!(r#"param kind = "session" param gap = "{gap}ms""#),
        Kind::Count(n) => format!(r#"param kind = "count" param size = {n}"#),
    };
    let keys = if keyed { r#"param keys = "k""# } else { "" };
    let backend = if lsm { "lsm" } else { "heap" };
    common::operator(&format!(
        r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "v", type = "double" }}
operator name = "g", type = "generator" {{ output name = "s", type = "T" }}
operator name = "op", type = "window" {{
  input name = "s" {kind} param time = "ts" {keys} param state_backend = "{backend}"
  param aggregates = "COUNT(*) AS n, MIN(v) AS lo, MAX(v) AS hi"
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    ))
}

fn batch(rows: &[Row]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Float64, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(TimestampMillisecondArray::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
            Arc::new(Float64Array::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
        ],
    )
    .expect("valid")
}

#[derive(Default)]
struct Collect(Vec<Out>);

impl Collector for Collect {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        let int = |i: usize| {
            let c = cast(b.column(i), &DataType::Int64).expect("casts");
            c.as_any()
                .downcast_ref::<Int64Array>()
                .expect("ints")
                .clone()
        };
        let float = |i: usize| {
            b.column(i)
                .as_any()
                .downcast_ref::<Float64Array>()
                .expect("doubles")
                .clone()
        };
        let keyed = usize::from(b.num_columns() == 6);
        let k = (keyed == 1).then(|| int(2));
        let (s, e, n, lo, hi) = (
            int(0),
            int(1),
            int(2 + keyed),
            float(3 + keyed),
            float(4 + keyed),
        );
        for i in 0..b.num_rows() {
            self.0.push((
                s.value(i),
                e.value(i),
                k.as_ref().map_or(0, |k| k.value(i)),
                n.value(i),
                lo.value(i).to_bits(),
                hi.value(i).to_bits(),
            ));
        }
        Ok(())
    }
}

/// Feeds the rows one batch of `per_batch` at a time, each followed by the watermark that no
/// row still to come is behind (so no row is late and windows fire on the way); with
/// `restart_at`, restores from a full checkpoint and a changelog before that batch.
fn run(
    kind: Kind,
    keyed: bool,
    rows: &[Row],
    per_batch: usize,
    restart_at: Option<(usize, bool)>,
) -> Vec<Out> {
    let lsm = restart_at.is_some_and(|(_, lsm)| lsm);
    let make = || window(kind, keyed, lsm);
    let mut op = make();
    let mut out = Collect::default();
    let mut full = None;
    for (i, chunk) in rows.chunks(per_batch).enumerate() {
        if let Some((at, _)) = restart_at {
            if let Some(fresh) = common::restart_point(i, at, &mut op, &mut full, make) {
                op = fresh;
            }
        }
        op.process_batch(0, batch(chunk), &mut out)
            .expect("processes");
        let rest = rows.get((i + 1) * per_batch..).unwrap_or_default();
        if let Some(wm) = rest.iter().map(|r| r.0).min() {
            op.handle_watermark(Watermark(wm), &mut out).expect("fires");
        }
    }
    op.handle_watermark(Watermark::MAX, &mut out)
        .expect("fires");
    out.0.sort();
    out.0
}

/// The extremes of `values` in SQL's order, one pair at a time; NaN as the canonical one.
fn extremes(values: impl Iterator<Item = f64>) -> (u64, u64) {
    let pick = |keep: Ordering| move |a: f64, b: f64| if a.sql_cmp(b) == keep { a } else { b };
    let values: Vec<f64> = values.collect();
    let lo = values.iter().copied().reduce(pick(Ordering::Less));
    let hi = values.iter().copied().reduce(pick(Ordering::Greater));
    let bits = |v: Option<f64>| v.expect("a row").canonical().to_bits();
    (bits(lo), bits(hi))
}

fn out(start: i64, end: i64, key: i64, rows: &[Row]) -> Out {
    let (lo, hi) = extremes(rows.iter().map(|r| r.2));
    (start, end, key, rows.len() as i64, lo, hi)
}

fn naive(kind: Kind, keyed: bool, rows: &[Row]) -> Vec<Out> {
    let mut by_key: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
    for r in rows {
        by_key
            .entry(if keyed { r.1 } else { 0 })
            .or_default()
            .push(*r);
    }
    let mut all = vec![];
    for (k, mut rs) in by_key {
        match kind {
            Kind::Sliding(size, slide) => {
                let mut windows: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
                for r in &rs {
                    let mut s = r.0.div_euclid(slide) * slide;
                    while s > r.0 - size {
                        windows.entry(s).or_default().push(*r);
                        s -= slide;
                    }
                }
                all.extend(windows.iter().map(|(s, w)| out(*s, s + size, k, w)));
            }
            Kind::Session(gap) => {
                rs.sort_by_key(|r| r.0);
                let mut current: Vec<Row> = vec![];
                for r in rs {
                    if current.last().is_some_and(|l| r.0 > l.0 + gap) {
                        all.push(out(
                            current[0].0,
                            current[current.len() - 1].0 + gap,
                            k,
                            &current,
                        ));
                        current.clear();
                    }
                    current.push(r);
                }
                if let (Some(f), Some(l)) = (current.first(), current.last()) {
                    all.push(out(f.0, l.0 + gap, k, &current));
                }
            }
            Kind::Count(n) => {
                for c in rs.chunks_exact(n as usize) {
                    let (lo, hi) = (c.iter().map(|r| r.0).min(), c.iter().map(|r| r.0).max());
                    all.push(out(lo.expect("a row"), hi.expect("a row") + 1, k, c));
                }
            }
        }
    }
    all.sort();
    all
}

fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(-f64::NAN),
        Just(f64::from_bits(0x7ff8_0000_dead_beef)),
        Just(0.0),
        Just(-0.0),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(1.5),
        any::<f64>(),
    ]
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Sliding(10, 10)),
        Just(Kind::Sliding(20, 5)),
        Just(Kind::Session(3)),
        Just(Kind::Count(3)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn windows_give_the_sql_order_s_extremes_in_any_arrival_order(
        kind in kind(),
        rows in prop::collection::vec((0i64..40, 0i64..2, value()), 1..40).prop_shuffle(),
        per_batch in 1usize..8,
        restart in any::<prop::sample::Index>(),
        lsm in any::<bool>(),
    ) {
        let batches = rows.len().div_ceil(per_batch);
        for keyed in [true, false] {
            let expected = naive(kind, keyed, &rows);
            prop_assert_eq!(&run(kind, keyed, &rows, per_batch, None), &expected, "{:?} keyed {}", kind, keyed);
            let at = Some((restart.index(batches + 1), lsm));
            prop_assert_eq!(&run(kind, keyed, &rows, per_batch, at), &expected, "{:?} keyed {} restored", kind, keyed);
        }
    }
}

/// `MIN` and `MAX` of `A+` (every row of a partition) in a pattern's one row per match, with
/// the values at times 1, 2, … in the order given.
fn pattern_extremes(values: &[f64]) -> (u64, u64) {
    let mut op = common::operator(
        r#"type name = "T" { column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "v", type = "double" }
operator name = "g", type = "generator" { output name = "in", type = "T" }
operator name = "op", type = "pattern" {
  input name = "in"
  param partition_by = "k" param order_by = "ts" param pattern = "A+"
  param measures = "MIN(A.v) AS lo, MAX(A.v) AS hi"
  output name = "out" }
operator name = "d", type = "discard" { input name = "out" }"#,
    );
    let rows: Vec<Row> = (1..).zip(values).map(|(t, v)| (t, 0, *v)).collect();
    struct Last(Option<(u64, u64)>);
    impl Collector for Last {
        fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
            let f = |name: &str| {
                let c = b.column_by_name(name).expect("a measure");
                c.as_any()
                    .downcast_ref::<Float64Array>()
                    .expect("doubles")
                    .value(0)
            };
            self.0 = Some((f("lo").to_bits(), f("hi").to_bits()));
            Ok(())
        }
    }
    let mut out = Last(None);
    op.process_batch(0, batch(&rows), &mut out)
        .expect("processes");
    op.handle_watermark(Watermark::MAX, &mut out)
        .expect("advances");
    op.on_end_of_input(&mut out).expect("ends");
    out.0.expect("one match")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_pattern_s_min_and_max_are_the_sql_order_s_extremes(values in prop::collection::vec(value(), 1..12).prop_shuffle()) {
        prop_assert_eq!(pattern_extremes(&values), extremes(values.iter().copied()));
    }
}

#[test]
fn the_issue_s_examples_in_a_pattern() {
    let (lo, _) = pattern_extremes(&[1.5, 0.0, -0.0, f64::NAN, f64::INFINITY]);
    assert_eq!(lo, (-0.0f64).to_bits());
    for values in [[1.5, f64::NAN], [f64::NAN, 1.5]] {
        let (lo, hi) = pattern_extremes(&values);
        assert_eq!(
            (f64::from_bits(lo), f64::from_bits(hi).is_nan()),
            (1.5, true)
        );
    }
}
