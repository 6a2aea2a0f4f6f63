//! Every kind of window, over seeded random rows that arrive out of order (some of them
//! late), gives what a naive recomputation from the rows gives; a window checkpointed twice
//! (a full snapshot, then the changes since) and restored from both, with its state in the
//! heap and in the LSM backend, gives the same results as one that ran straight through; and
//! four instances, each fed the keys it owns, together give the result of one. A changelog
//! holds only what changed; a global window restores too.

mod common;

use common::{checkpoint, restored};

use std::collections::BTreeMap;
use std::sync::Arc;

use anduin_operator_api::{Collector, Operator, OperatorError};
use anduin_types::Watermark;
use arrow::array::{Array, Int64Array, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;
use proptest::prelude::*;

/// (event time, key, value)
type Row = (i64, i64, Option<i64>);

/// (window start, window end, key, count(*), count(v), sum, min, max)
type Out = (
    i64,
    i64,
    i64,
    i64,
    i64,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

#[derive(Debug, Clone, Copy)]
enum Kind {
    Sliding(i64, i64),
    Session(i64),
    Count(u64),
}

/// The window operator of `kind`, keyed by `k`; with `lsm`, its state in the LSM backend.
fn window(kind: Kind, lsm: bool) -> Box<dyn Operator> {
    window_by(kind, lsm, "param keys = \"k\"")
}

/// The window operator of `kind` with `keys` (a `param keys = …` or nothing).
fn window_by(kind: Kind, lsm: bool, keys: &str) -> Box<dyn Operator> {
    let kind_params = match kind {
        Kind::Sliding(size, slide) => {
            format!(r#"param kind = "sliding" param size = "{size}ms" param slide = "{slide}ms""#)
        }
        Kind::Session(gap) => format!(r#"param kind = "session" param gap = "{gap}ms""#),
        Kind::Count(n) => format!(r#"param kind = "count" param size = {n}"#),
    };
    let backend = if lsm { "lsm" } else { "heap" };
    let src = format!(
        r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "v", type = "int" }}
operator name = "g", type = "generator" {{ output name = "s", type = "T" }}
operator name = "op", type = "window" {{
  input name = "s" {kind_params} param time = "ts" {keys} param state_backend = "{backend}"
  param aggregates = "COUNT(*) AS n, COUNT(v) AS nv, SUM(v) AS total, MIN(v) AS lo, MAX(v) AS hi"
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    );
    common::operator(&src)
}

struct Collect(Vec<Out>);

impl Collector for Collect {
    fn collect(&mut self, port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        assert_eq!(port, 0);
        let ts = |i: usize| {
            b.column(i)
                .as_any()
                .downcast_ref::<TimestampMillisecondArray>()
                .expect("ts")
                .clone()
        };
        let int = |i: usize| {
            b.column(i)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("int")
                .clone()
        };
        // A global window has no key column: its rows count as key 0.
        let keyed = usize::from(b.num_columns() == 8);
        let k = (keyed == 1).then(|| int(2));
        let (s, e, n, nv, sum, lo, hi) = (
            ts(0),
            ts(1),
            int(2 + keyed),
            int(3 + keyed),
            int(4 + keyed),
            int(5 + keyed),
            int(6 + keyed),
        );
        let opt = |a: &Int64Array, i: usize| a.is_valid(i).then(|| a.value(i));
        for i in 0..b.num_rows() {
            self.0.push((
                s.value(i),
                e.value(i),
                k.as_ref().map_or(0, |k| k.value(i)),
                n.value(i),
                nv.value(i),
                opt(&sum, i),
                opt(&lo, i),
                opt(&hi, i),
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
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(TimestampMillisecondArray::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
        ],
    )
    .expect("valid")
}

/// Feeds the batches with a watermark (largest time seen minus `delay`) after each one; with
/// `restart_at`, takes a full checkpoint before batch `restart_at / 2` and a changelog before
/// batch `restart_at`, and restores both into a fresh instance (with `lsm`, one keeping its
/// state in the LSM backend) there.
/// With `global`, the window has no keys.
fn run(
    kind: Kind,
    batches: &[Vec<Row>],
    delay: i64,
    restart_at: Option<(usize, bool)>,
    global: bool,
) -> Vec<Out> {
    let lsm = restart_at.is_some_and(|(_, lsm)| lsm);
    let make = || {
        if global {
            window_by(kind, lsm, "")
        } else {
            window(kind, lsm)
        }
    };
    let mut op = make();
    let mut out = Collect(vec![]);
    let mut max = i64::MIN;
    let mut full = None;
    for (i, rows) in batches.iter().enumerate() {
        if let Some((at, _)) = restart_at {
            if let Some(fresh) = common::restart_point(i, at, &mut op, &mut full, make) {
                op = fresh;
            }
        }
        op.process_batch(0, batch(rows), &mut out)
            .expect("processes");
        if let Some(m) = rows.iter().map(|r| r.0).max() {
            max = max.max(m);
            op.handle_watermark(Watermark(max - delay), &mut out)
                .expect("fires");
        }
    }
    op.handle_watermark(Watermark::MAX, &mut out)
        .expect("fires");
    op.on_end_of_input(&mut out).expect("ends");
    out.0.sort();
    out.0
}

/// Four instances, each fed the rows of the keys it owns (key mod 4) and every watermark.
fn run_split(kind: Kind, batches: &[Vec<Row>], delay: i64) -> Vec<Out> {
    let mut all = vec![];
    for part in 0..4 {
        let mut op = window(kind, false);
        let mut out = Collect(vec![]);
        let mut max = i64::MIN;
        for rows in batches {
            let mine: Vec<Row> = rows.iter().filter(|r| r.1 % 4 == part).copied().collect();
            op.process_batch(0, batch(&mine), &mut out)
                .expect("processes");
            if let Some(m) = rows.iter().map(|r| r.0).max() {
                max = max.max(m);
                op.handle_watermark(Watermark(max - delay), &mut out)
                    .expect("fires");
            }
        }
        op.handle_watermark(Watermark::MAX, &mut out)
            .expect("fires");
        all.extend(out.0);
    }
    all.sort();
    all
}

/// The rows that are not late, in arrival order, by the same watermark rule.
fn on_time(batches: &[Vec<Row>], delay: i64) -> Vec<Row> {
    let mut wm = i64::MIN;
    let mut kept = vec![];
    for rows in batches {
        kept.extend(rows.iter().filter(|r| r.0 >= wm).copied());
        if let Some(m) = rows.iter().map(|r| r.0).max() {
            wm = wm.max(m - delay);
        }
    }
    kept
}

fn aggregate(start: i64, end: i64, key: i64, rows: &[Row]) -> Out {
    let vs: Vec<i64> = rows.iter().filter_map(|r| r.2).collect();
    let opt = |x: Option<i64>| if vs.is_empty() { None } else { x };
    (
        start,
        end,
        key,
        rows.len() as i64,
        vs.len() as i64,
        opt(Some(vs.iter().sum())),
        opt(vs.iter().min().copied()),
        opt(vs.iter().max().copied()),
    )
}

fn naive(kind: Kind, rows: &[Row]) -> Vec<Out> {
    let mut out = vec![];
    match kind {
        Kind::Sliding(size, slide) => {
            let mut windows: BTreeMap<(i64, i64), Vec<Row>> = BTreeMap::new();
            for r in rows {
                // Every window start s (a multiple of slide) with s <= ts < s + size.
                let mut s = r.0.div_euclid(slide) * slide;
                while s > r.0 - size {
                    windows.entry((s, r.1)).or_default().push(*r);
                    s -= slide;
                }
            }
            for ((s, k), rs) in windows {
                out.push(aggregate(s, s + size, k, &rs));
            }
        }
        Kind::Session(gap) => {
            let mut by_key: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
            for r in rows {
                by_key.entry(r.1).or_default().push(*r);
            }
            for (k, mut rs) in by_key {
                rs.sort_by_key(|r| r.0);
                let mut current: Vec<Row> = vec![];
                for r in rs {
                    if let Some(last) = current.last() {
                        if r.0 > last.0 + gap {
                            let start = current[0].0;
                            let end = current.iter().map(|r| r.0).max().unwrap_or(start) + gap;
                            out.push(aggregate(start, end, k, &current));
                            current.clear();
                        }
                    }
                    current.push(r);
                }
                if !current.is_empty() {
                    let start = current[0].0;
                    let end = current.iter().map(|r| r.0).max().unwrap_or(start) + gap;
                    out.push(aggregate(start, end, k, &current));
                }
            }
        }
        Kind::Count(n) => {
            let mut by_key: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
            for r in rows {
                by_key.entry(r.1).or_default().push(*r);
            }
            for (k, rs) in by_key {
                for chunk in rs.chunks_exact(n as usize) {
                    // From the earliest row's time to one millisecond after the latest's.
                    let earliest = chunk.iter().map(|r| r.0).min().unwrap_or(0);
                    let latest = chunk.iter().map(|r| r.0).max().unwrap_or(0);
                    out.push(aggregate(earliest, latest + 1, k, chunk));
                }
            }
        }
    }
    out.sort();
    out
}

fn batches() -> impl Strategy<Value = Vec<Vec<Row>>> {
    // Times drift forward with jitter (out of order), a few keys, some null values. Values
    // are small: no SUM can overflow (at most 12 × 30 rows of |v| < 20), so the naive sum in
    // `i64` is exact; an overflowing SUM is an error, tested in anduin-expr's `checked_sum`
    // and anduin-cli's `an_integer_sum_that_overflows_is_an_error_never_a_wrapped_total`.
    let row = (
        0i64..40,
        -30i64..30,
        0i64..4,
        prop::option::weighted(0.8, -20i64..20),
    );
    prop::collection::vec(prop::collection::vec(row, 1..30), 1..12).prop_map(|bs| {
        let mut base = 1_700_000_000_000i64;
        bs.into_iter()
            .map(|rows| {
                base += 25;
                rows.into_iter()
                    .map(|(step, jitter, k, v)| (base + step + jitter, k, v))
                    .collect()
            })
            .collect()
    })
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        (1i64..60).prop_map(|s| Kind::Sliding(s, s)),
        (1i64..6, 1i64..20).prop_map(|(m, slide)| Kind::Sliding(slide * m, slide)),
        (1i64..40).prop_map(Kind::Session),
        (1u64..6).prop_map(Kind::Count),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn every_window_kind_matches_the_naive_result(kind in kind(), bs in batches(), delay in 0i64..40, restart in any::<prop::sample::Index>()) {
        let expected = naive(kind, &on_time(&bs, delay));
        prop_assert_eq!(&run(kind, &bs, delay, None, false), &expected);
        let at = restart.index(bs.len());
        for lsm in [false, true] {
            prop_assert_eq!(&run(kind, &bs, delay, Some((at, lsm)), false), &expected, "restored before batch {} (lsm: {})", at, lsm);
        }
        // A global window: every row of key 0.
        let bs: Vec<Vec<Row>> = bs.iter().map(|rows| rows.iter().map(|r| (r.0, 0, r.2)).collect()).collect();
        let expected = naive(kind, &on_time(&bs, delay));
        for lsm in [false, true] {
            prop_assert_eq!(&run(kind, &bs, delay, Some((at, lsm)), true), &expected, "global, restored before batch {} (lsm: {})", at, lsm);
        }
        prop_assert_eq!(&run_split(kind, &bs, delay), &expected, "four instances");
    }
}

/// 200 keys with three rows each in one pane (session, count window), then one more row of
/// key 0: the changelog after a full checkpoint holds that one key's entry, and restoring from
/// both finishes as a run straight through does.
#[test]
fn a_changelog_holds_only_the_keys_that_changed() {
    let base = 1_700_000_000_000i64;
    let first: Vec<Row> = (0..200)
        .flat_map(|k| (0..3).map(move |j| (base + j, k, Some(k + j))))
        .collect();
    let more: Vec<Row> = vec![(base + 3, 0, Some(5))];
    for kind in [
        Kind::Sliding(1000, 1000),
        Kind::Sliding(2000, 500),
        Kind::Session(100),
        Kind::Count(5),
    ] {
        for lsm in [false, true] {
            let mut out = Collect(vec![]);
            let mut op = window(kind, lsm);
            op.process_batch(0, batch(&first), &mut out)
                .expect("processes");
            let full = checkpoint(&mut op, false);
            op.process_batch(0, batch(&more), &mut out)
                .expect("processes");
            let changes = checkpoint(&mut op, true);
            assert!(
                changes.bytes.len() * 20 < full.bytes.len(),
                "{kind:?} (lsm: {lsm}): a changelog of {} bytes after a full snapshot of {}",
                changes.bytes.len(),
                full.bytes.len()
            );
            let mut op = restored(|| window(kind, lsm), vec![full, changes]);
            op.handle_watermark(Watermark::MAX, &mut out)
                .expect("fires");
            out.0.sort();
            let mut all = first.clone();
            all.extend(&more);
            assert_eq!(out.0, naive(kind, &all), "{kind:?} (lsm: {lsm})");
        }
    }
}
