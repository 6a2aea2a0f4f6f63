//! Interval and window joins, inner and left outer, over seeded random rows of two streams
//! that arrive out of order (some of them late), give what a naive recomputation from the
//! on-time rows gives; a join that takes a full snapshot and later a changelog, and is
//! restored from both (with its state in the heap or in the LSM backend), gives the same
//! results as one that ran straight through; and four instances, each fed the keys it owns, together
//! give the result of one. Some keys are null: as in SQL, a null key equals no key (not even
//! another null), so its row pairs with nothing and a left join gives its left row alone.

use crate::common;

use common::{checkpoint, restored, Memory};

use std::sync::Arc;

use anduin_operator_api::{Collector, Operator, OperatorError};
use anduin_registry::BuiltinCatalog;
use anduin_types::Watermark;
use arrow::array::{Array, Int64Array, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;
use proptest::prelude::*;

/// (event time, key, value)
type Row = (i64, Option<i64>, i64);

/// (window start, left time, key, left value, right time, right value)
type Out = (Option<i64>, i64, Option<i64>, i64, Option<i64>, Option<i64>);

#[derive(Debug, Clone, Copy)]
enum Kind {
    Interval(i64, i64),
    Window(i64),
}

/// The join; with `lsm`, its checkpointed state in the LSM backend.
fn join(kind: Kind, left_outer: bool, lsm: bool) -> Box<dyn Operator> {
    let kind_params = match kind {
        Kind::Interval(lower, upper) => format!(
            r#"param kind = "interval" param lower = "{}{}ms" param upper = "{}{}ms""#,
            if lower < 0 { "-" } else { "" },
            lower.abs(),
            if upper < 0 { "-" } else { "" },
            upper.abs()
        ),
        Kind::Window(size) => format!(r#"param kind = "window" param size = "{size}ms""#),
    };
    let how = if left_outer { "left" } else { "inner" };
    let backend = if lsm { "lsm" } else { "heap" };
    let src = format!(
        r#"type name = "L" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "v", type = "int" }}
type name = "R" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "w", type = "int" }}
operator name = "gl", type = "generator" {{ output name = "l", type = "L" }}
operator name = "gr", type = "generator" {{ output name = "r", type = "R" }}
operator name = "op", type = "join" {{
  input name = "l" input name = "r" {kind_params} param how = "{how}"
  param state_backend = "{backend}"
  param on = "l.k = r.k" param left_time = "ts" param right_time = "ts"
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    );
    common::operator(&src)
}

struct Collect {
    window: bool,
    rows: Vec<Out>,
}

impl Collector for Collect {
    fn collect(&mut self, port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        assert_eq!(port, 0);
        let first = if self.window { 2 } else { 0 };
        let int = |i: usize| -> Vec<Option<i64>> {
            let c = b.column(i);
            if let Some(a) = c.as_any().downcast_ref::<TimestampMillisecondArray>() {
                return a.iter().collect();
            }
            let a = c.as_any().downcast_ref::<Int64Array>().expect("int");
            a.iter().collect()
        };
        let ws = if self.window {
            int(0)
        } else {
            vec![None; b.num_rows()]
        };
        let (lt, k, v, rt, rk, w) = (
            int(first),
            int(first + 1),
            int(first + 2),
            int(first + 3),
            int(first + 4),
            int(first + 5),
        );
        if self.window {
            let we = int(1);
            for i in 0..b.num_rows() {
                assert!(we[i] > ws[i], "a window ends after it starts");
            }
        }
        for i in 0..b.num_rows() {
            assert!(
                rt[i].is_none() || (k[i].is_some() && rk[i] == k[i]),
                "a pair has equal keys, not null"
            );
            self.rows.push((
                ws[i],
                lt[i].expect("left time"),
                k[i],
                v[i].expect("value"),
                rt[i],
                w[i],
            ));
        }
        Ok(())
    }
}

fn batch(rows: &[Row]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
    ]));
    let col = |f: fn(&Row) -> i64| rows.iter().map(f).collect::<Vec<_>>();
    let keys: Vec<Option<i64>> = rows.iter().map(|r| r.1).collect();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(TimestampMillisecondArray::from(col(|r| r.0))),
            Arc::new(Int64Array::from(keys)),
            Arc::new(Int64Array::from(col(|r| r.2))),
        ],
    )
    .expect("valid")
}

/// One arrival: a batch of one side (0 left, 1 right).
type Arrival = (usize, Vec<Row>);

/// The watermark after each arrival: the smaller of both sides' largest time minus `delay`.
fn watermarks(arrivals: &[Arrival], delay: i64) -> Vec<Option<i64>> {
    let mut max = [None::<i64>; 2];
    arrivals
        .iter()
        .map(|(side, rows)| {
            if let Some(m) = rows.iter().map(|r| r.0).max() {
                max[*side] = Some(max[*side].map_or(m, |x| x.max(m)));
            }
            Some(max[0]?.min(max[1]?) - delay)
        })
        .collect()
}

/// Feeds the arrivals with the watermarks; with `restart_at`, takes a full snapshot before
/// arrival `restart_at / 2` and a changelog before arrival `restart_at`, and restores both
/// into a fresh instance (with `lsm`, one keeping its state in the LSM backend) there.
fn run(
    kind: Kind,
    left_outer: bool,
    arrivals: &[Arrival],
    delay: i64,
    restart_at: Option<(usize, bool)>,
) -> Vec<Out> {
    let lsm = restart_at.is_some_and(|(_, lsm)| lsm);
    let mut op = join(kind, left_outer, lsm);
    let mut out = Collect {
        window: matches!(kind, Kind::Window(_)),
        rows: vec![],
    };
    let mut full: Option<Memory> = None;
    for (i, ((side, rows), wm)) in arrivals.iter().zip(watermarks(arrivals, delay)).enumerate() {
        if let Some((at, _)) = restart_at {
            let make = || join(kind, left_outer, lsm);
            if let Some(fresh) = common::restart_point(i, at, &mut op, &mut full, make) {
                op = fresh;
            }
        }
        op.process_batch(*side, batch(rows), &mut out)
            .expect("processes");
        if let Some(wm) = wm {
            op.handle_watermark(Watermark(wm), &mut out)
                .expect("advances");
        }
    }
    op.handle_watermark(Watermark::MAX, &mut out)
        .expect("advances");
    op.on_end_of_input(&mut out).expect("ends");
    out.rows.sort();
    out.rows
}

/// Four instances, each fed the rows of the keys it owns (key mod 4, a null key to the
/// first) and every watermark.
fn run_split(kind: Kind, left_outer: bool, arrivals: &[Arrival], delay: i64) -> Vec<Out> {
    let wms = watermarks(arrivals, delay);
    let mut all = vec![];
    for part in 0..4 {
        let mut op = join(kind, left_outer, false);
        let mut out = Collect {
            window: matches!(kind, Kind::Window(_)),
            rows: vec![],
        };
        for ((side, rows), wm) in arrivals.iter().zip(&wms) {
            let mine: Vec<Row> = rows
                .iter()
                .filter(|r| r.1.map_or(0, |k| k.rem_euclid(4)) == part)
                .copied()
                .collect();
            op.process_batch(*side, batch(&mine), &mut out)
                .expect("processes");
            if let Some(wm) = wm {
                op.handle_watermark(Watermark(*wm), &mut out)
                    .expect("advances");
            }
        }
        op.handle_watermark(Watermark::MAX, &mut out)
            .expect("advances");
        all.extend(out.rows);
    }
    all.sort();
    all
}

/// The rows of each side that are not late (time before the watermark when they arrive).
fn on_time(arrivals: &[Arrival], delay: i64) -> [Vec<Row>; 2] {
    let mut kept: [Vec<Row>; 2] = [vec![], vec![]];
    let mut wm = i64::MIN;
    for ((side, rows), next) in arrivals.iter().zip(watermarks(arrivals, delay)) {
        kept[*side].extend(rows.iter().filter(|r| r.0 >= wm).copied());
        if let Some(next) = next {
            wm = wm.max(next);
        }
    }
    kept
}

fn naive(kind: Kind, left_outer: bool, [left, right]: &[Vec<Row>; 2]) -> Vec<Out> {
    let mut out = vec![];
    for l in left {
        let mut matched = false;
        let window = |t: i64, size: i64| t.div_euclid(size) * size;
        // SQL's `=`: a null key equals nothing.
        for r in right.iter().filter(|r| l.1.is_some() && r.1 == l.1) {
            let (pairs, ws) = match kind {
                Kind::Interval(lower, upper) => ((lower..=upper).contains(&(r.0 - l.0)), None),
                Kind::Window(size) => (
                    window(l.0, size) == window(r.0, size),
                    Some(window(l.0, size)),
                ),
            };
            if pairs {
                matched = true;
                out.push((ws, l.0, l.1, l.2, Some(r.0), Some(r.2)));
            }
        }
        if left_outer && !matched {
            let ws = match kind {
                Kind::Interval(..) => None,
                Kind::Window(size) => Some(window(l.0, size)),
            };
            out.push((ws, l.0, l.1, l.2, None, None));
        }
    }
    out.sort();
    out
}

fn arrivals() -> impl Strategy<Value = Vec<Arrival>> {
    // Times drift forward with jitter (out of order), a few keys, both sides interleaved.
    // One key in seven is null.
    let key = prop_oneof![1 => Just(None), 6 => (0i64..6).prop_map(Some)];
    let row = (0i64..40, -30i64..30, key, -1000i64..1000);
    let arrival = (0usize..2, prop::collection::vec(row, 1..20));
    prop::collection::vec(arrival, 1..16).prop_map(|arrivals| {
        let mut base = 1_700_000_000_000i64;
        arrivals
            .into_iter()
            .map(|(side, rows)| {
                base += 20;
                let rows = rows
                    .into_iter()
                    .map(|(step, jitter, k, v)| (base + step + jitter, k, v))
                    .collect();
                (side, rows)
            })
            .collect()
    })
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        (-40i64..40, 0i64..40).prop_map(|(lower, width)| Kind::Interval(lower, lower + width)),
        (1i64..60).prop_map(Kind::Window),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_join_kind_matches_the_naive_result(
        kind in kind(),
        left_outer in any::<bool>(),
        arrivals in arrivals(),
        delay in 0i64..40,
        restart in any::<prop::sample::Index>(),
        lsm in any::<bool>(),
    ) {
        let expected = naive(kind, left_outer, &on_time(&arrivals, delay));
        prop_assert_eq!(&run(kind, left_outer, &arrivals, delay, None), &expected);
        let at = restart.index(arrivals.len());
        prop_assert_eq!(
            &run(kind, left_outer, &arrivals, delay, Some((at, lsm))),
            &expected,
            "restored from a full snapshot before arrival {} and a changelog before arrival {} (lsm: {})",
            at / 2,
            at,
            lsm
        );
        prop_assert_eq!(&run_split(kind, left_outer, &arrivals, delay), &expected, "four instances");
    }
}

#[test]
fn a_join_on_columns_of_different_types_is_refused() {
    let src = r#"type name = "L" { column name = "ts", type = "timestamp" column name = "k", type = "int" }
type name = "R" { column name = "ts", type = "timestamp" column name = "k", type = "string" }
operator name = "gl", type = "generator" { output name = "l", type = "L" }
operator name = "gr", type = "generator" { output name = "r", type = "R" }
operator name = "op", type = "join" {
  input name = "l" input name = "r" param kind = "window" param size = "1s"
  param on = "l.k = r.k" param left_time = "ts" param right_time = "ts"
  output name = "out" }
operator name = "d", type = "discard" { input name = "out" }"#;
    let spec = anduin_spec::parse_flow(src).expect("parses");
    let Err(err) = anduin_graph::check(&spec, &BuiltinCatalog) else {
        panic!("a join on an int and a string must be refused")
    };
    let text = err.to_string();
    assert!(text.contains("join keys must have the same type"), "{text}");
}

#[test]
fn a_changelog_holds_only_the_keys_whose_rows_changed() {
    for lsm in [false, true] {
        let kind = Kind::Interval(-1_000, 1_000);
        let t0 = 1_700_000_000_000i64;
        let mut op = join(kind, true, lsm);
        let mut out = Collect {
            window: false,
            rows: vec![],
        };
        // 200 keys with a left row each, the even ones with a partner, then a full snapshot.
        let left: Vec<Row> = (0..200).map(|k| (t0 + k, Some(k), k)).collect();
        let right: Vec<Row> = (0..200)
            .step_by(2)
            .map(|k| (t0 + k + 1, Some(k), -k))
            .collect();
        op.process_batch(0, batch(&left), &mut out)
            .expect("processes");
        op.process_batch(1, batch(&right), &mut out)
            .expect("processes");
        let full = checkpoint(&mut op, false);
        // One more row of one key, then a changelog.
        op.process_batch(0, batch(&[(t0 + 500, Some(7), 77)]), &mut out)
            .expect("processes");
        let changes = checkpoint(&mut op, true);
        assert!(
            changes.bytes.len() * 20 < full.bytes.len(),
            "lsm {lsm}: a changelog of one key takes {} bytes, the full snapshot of 200 keys {}",
            changes.bytes.len(),
            full.bytes.len()
        );
        // Restored from both, it ends like the join that goes on.
        let mut restored = restored(|| join(kind, true, !lsm), vec![full, changes]);
        let mut tails = vec![];
        for op in [&mut op, &mut restored] {
            let mut tail = Collect {
                window: false,
                rows: vec![],
            };
            op.process_batch(
                1,
                batch(&[(t0 + 400, Some(7), 70), (t0 + 900, Some(3), 30)]),
                &mut tail,
            )
            .expect("processes");
            op.handle_watermark(Watermark::MAX, &mut tail)
                .expect("advances");
            tail.rows.sort();
            tails.push(tail.rows);
        }
        assert_eq!(
            tails[0].len(),
            3 + 98,
            "three pairs, and the odd keys' left rows but 3 and 7 without a partner"
        );
        assert_eq!(tails[0], tails[1], "lsm {lsm}");
    }
}
