//! Issue 22, point 3: event times anywhere in the `i64` range — `i64::MIN`, `i64::MAX`, their
//! neighbours, times within a few window lengths of either end, times near the epoch and
//! random ones — under every kind of window, keyed and global, with the time column a
//! timestamp or an int, with watermarks as a source derives them (largest time seen minus a
//! delay, below +∞) and a restart from a checkpoint half-way. Nothing panics; every row is in
//! the results, among the late rows, or in the dead letters with its reason — exactly the rows
//! one of whose windows would not fit in a timestamp; every result has `start < end` and holds
//! its rows (`start <= earliest <= latest < end`); and the results are those of a naive
//! recomputation in `i128` that lists every window of a row.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anduin_operator_api::{Collector, DeadLetter, DeadLetterTarget, OperatorError};
use anduin_types::Watermark;
use arrow::array::{Array, ArrayRef, Int64Array, TimestampMillisecondArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;
use proptest::prelude::*;

/// (event time, key, id); ids are distinct, so that each row is found wherever it went.
type Row = (i64, i64, i64);

/// (window start, window end, key, rows, earliest time, latest time, sum of ids)
type Out = (i64, i64, i64, i64, i64, i64, i64);

#[derive(Debug, Clone, Copy)]
enum Kind {
    Sliding(i64, i64),
    Session(i64),
    Count(u64),
}

impl Kind {
    /// A length that rows near the ends of the range are spread over.
    fn length(self) -> i64 {
        match self {
            Kind::Sliding(size, _) => size,
            Kind::Session(gap) => gap,
            Kind::Count(_) => 3,
        }
    }
}

/// How one run is set up.
#[derive(Debug, Clone, Copy)]
struct Setup {
    kind: Kind,
    keyed: bool,
    /// The time column is an int of epoch milliseconds (else a timestamp).
    int_time: bool,
    /// A full checkpoint half-way to this batch, a changelog at it, and a restore from both
    /// (into a window whose state is in the LSM backend if the flag says so).
    restart: Option<(usize, bool)>,
}

fn query(s: Setup) -> String {
    let kind = match s.kind {
        Kind::Sliding(size, slide) => {
            format!(r#"param kind = "sliding" param size = "{size}ms" param slide = "{slide}ms""#)
        }
        Kind::Session(gap) => format!(r#"param kind = "session" param gap = "{gap}ms""#),
        Kind::Count(n) => format!(r#"param kind = "count" param size = {n}"#),
    };
    let keys = if s.keyed { r#"param keys = "k""# } else { "" };
    let backend = if s.restart.is_some_and(|(_, lsm)| lsm) {
        "lsm"
    } else {
        "heap"
    };
    let time = if s.int_time { "int" } else { "timestamp" };
    format!(
        r#"type name = "T" {{ column name = "ts", type = "{time}" column name = "k", type = "int" column name = "v", type = "int" }}
operator name = "g", type = "generator" {{ output name = "s", type = "T" }}
operator name = "op", type = "window" {{
  input name = "s" {kind} param time = "ts" {keys} param state_backend = "{backend}"
  param aggregates = "COUNT(*) AS n, MIN(ts) AS lo, MAX(ts) AS hi, SUM(v) AS total"
  param late_output = "late"
  output name = "out" output name = "late" }}
operator name = "d", type = "discard" {{ input name = "out" }}
operator name = "dl", type = "discard" {{ input name = "late" }}"#
    )
}

fn batch(rows: &[Row], int_time: bool) -> RecordBatch {
    let ts: Vec<i64> = rows.iter().map(|r| r.0).collect();
    let (ts, ts_type): (ArrayRef, _) = if int_time {
        (Arc::new(Int64Array::from(ts)), DataType::Int64)
    } else {
        (
            Arc::new(TimestampMillisecondArray::from(ts)),
            DataType::Timestamp(TimeUnit::Millisecond, None),
        )
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", ts_type, true),
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
    ]));
    let int =
        |f: fn(&Row) -> i64| Arc::new(Int64Array::from(rows.iter().map(f).collect::<Vec<_>>()));
    RecordBatch::try_new(schema, vec![ts, int(|r| r.1), int(|r| r.2)]).expect("valid")
}

/// Column `i` of `b` as ints (a timestamp as its epoch milliseconds).
fn ints(b: &RecordBatch, i: usize) -> Int64Array {
    let c = cast(b.column(i), &DataType::Int64).expect("casts to int");
    c.as_any()
        .downcast_ref::<Int64Array>()
        .expect("ints")
        .clone()
}

#[derive(Default)]
struct Collect {
    results: Vec<Out>,
    late: Vec<i64>,
}

impl Collector for Collect {
    fn collect(&mut self, port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        if port == 1 {
            self.late.extend(ints(&b, 2).values().iter().copied());
            return Ok(());
        }
        let keyed = usize::from(b.num_columns() == 7);
        let k = (keyed == 1).then(|| ints(&b, 2));
        let cols: Vec<Int64Array> = (0..b.num_columns()).map(|i| ints(&b, i)).collect();
        let (s, e, n, lo, hi, total) = (
            &cols[0],
            &cols[1],
            &cols[2 + keyed],
            &cols[3 + keyed],
            &cols[4 + keyed],
            &cols[5 + keyed],
        );
        for i in 0..b.num_rows() {
            self.results.push((
                s.value(i),
                e.value(i),
                k.as_ref().map_or(0, |k| k.value(i)),
                n.value(i),
                lo.value(i),
                hi.value(i),
                total.value(i),
            ));
        }
        Ok(())
    }
}

/// What a run gave: results, the ids of late rows, the ids and reasons of dead letters.
#[derive(Debug)]
struct Ran {
    results: Vec<Out>,
    late: Vec<i64>,
    dead: Vec<(i64, String)>,
}

/// The largest time seen minus `delay`, below +∞ (the rule of a source).
fn source_watermark(max: i64, delay: i64) -> i64 {
    max.saturating_sub(delay).min(i64::MAX - 1)
}

fn run(s: Setup, batches: &[Vec<Row>], delay: i64, dead_file: &Path) -> Ran {
    let src = query(s);
    let dead = Arc::new(DeadLetter::new(DeadLetterTarget::File(dead_file.into())));
    let make = || common::operator_rejecting_to(&src, &dead);
    let mut op = make();
    let mut out = Collect::default();
    let mut max: Option<i64> = None;
    let mut full = None;
    for (i, rows) in batches.iter().enumerate() {
        if let Some((at, _)) = s.restart {
            if let Some(fresh) = common::restart_point(i, at, &mut op, &mut full, make) {
                op = fresh;
            }
        }
        op.process_batch(0, batch(rows, s.int_time), &mut out)
            .expect("processes");
        if let Some(m) = rows.iter().map(|r| r.0).max() {
            let m = max.map_or(m, |x| x.max(m));
            max = Some(m);
            op.handle_watermark(Watermark(source_watermark(m, delay)), &mut out)
                .expect("fires");
        }
    }
    op.handle_watermark(Watermark::MAX, &mut out)
        .expect("fires");
    op.on_end_of_input(&mut out).expect("ends");
    dead.flush().expect("flushes");
    let text = std::fs::read_to_string(dead_file).unwrap_or_default();
    let dead_rows: Vec<(i64, String)> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            assert_eq!(v["operator"], "op", "{l}");
            let id = v["row"]["v"].as_i64().expect("the row's id");
            (id, v["reason"].as_str().expect("a reason").to_string())
        })
        .collect();
    assert_eq!(dead_rows.len() as u64, dead.rejected_rows(), "counted");
    std::fs::remove_file(dead_file).ok();
    let mut ran = Ran {
        results: out.results,
        late: out.late,
        dead: dead_rows,
    };
    ran.results.sort();
    ran.late.sort();
    ran.dead.sort();
    ran
}

/// Every window of `kind` that holds `ts`, listed one by one in `i128`; `None` when one of
/// them is not within timestamps.
fn windows_of(kind: Kind, ts: i64) -> Option<Vec<(i64, i64)>> {
    let t = i128::from(ts);
    let bounds: Vec<(i128, i128)> = match kind {
        Kind::Sliding(size, slide) => {
            let (size, slide) = (i128::from(size), i128::from(slide));
            let mut s = t.div_euclid(slide) * slide;
            let mut all = vec![];
            while s > t - size {
                all.push((s, s + size));
                s -= slide;
            }
            all
        }
        Kind::Session(gap) => vec![(t, t + i128::from(gap))],
        Kind::Count(_) => vec![(t, t + 1)],
    };
    bounds
        .into_iter()
        .map(|(s, e)| Some((i64::try_from(s).ok()?, i64::try_from(e).ok()?)))
        .collect()
}

fn aggregate(start: i64, end: i64, key: i64, rows: &[Row]) -> Out {
    (
        start,
        end,
        key,
        rows.len() as i64,
        rows.iter().map(|r| r.0).min().expect("a row"),
        rows.iter().map(|r| r.0).max().expect("a row"),
        rows.iter().map(|r| r.2).sum(),
    )
}

/// What the window must give, from the rows alone.
fn naive(kind: Kind, keyed: bool, batches: &[Vec<Row>], delay: i64) -> Ran {
    let mut wm = i64::MIN;
    let mut max: Option<i64> = None;
    let (mut on_time, mut late, mut dead) = (vec![], vec![], vec![]);
    for rows in batches {
        for r in rows {
            let r = if keyed { *r } else { (r.0, 0, r.2) };
            if r.0 < wm {
                late.push(r.2);
            } else if windows_of(kind, r.0).is_none() {
                dead.push((r.2, String::new()));
            } else {
                on_time.push(r);
            }
        }
        if let Some(m) = rows.iter().map(|r| r.0).max() {
            let m = max.map_or(m, |x| x.max(m));
            max = Some(m);
            wm = wm.max(source_watermark(m, delay));
        }
    }
    let mut by_key: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
    for r in &on_time {
        by_key.entry(r.1).or_default().push(*r);
    }
    let mut results = vec![];
    for (k, mut rows) in by_key {
        match kind {
            Kind::Sliding(..) => {
                let mut windows: BTreeMap<(i64, i64), Vec<Row>> = BTreeMap::new();
                for r in &rows {
                    for w in windows_of(kind, r.0).expect("fits") {
                        windows.entry(w).or_default().push(*r);
                    }
                }
                for ((s, e), rs) in windows {
                    results.push(aggregate(s, e, k, &rs));
                }
            }
            Kind::Session(gap) => {
                rows.sort_by_key(|r| r.0);
                let mut current: Vec<Row> = vec![];
                for r in rows {
                    // Sorted: the last row has the latest time; its window reaches last + gap.
                    let touches = current
                        .last()
                        .is_none_or(|last| i128::from(r.0) <= i128::from(last.0) + i128::from(gap));
                    if !touches {
                        let (s, e) = (current[0].0, current[current.len() - 1].0 + gap);
                        results.push(aggregate(s, e, k, &current));
                        current.clear();
                    }
                    current.push(r);
                }
                if let (Some(first), Some(last)) = (current.first(), current.last()) {
                    results.push(aggregate(first.0, last.0 + gap, k, &current));
                }
            }
            Kind::Count(n) => {
                for chunk in rows.chunks_exact(n as usize) {
                    let latest = chunk.iter().map(|r| r.0).max().expect("a row");
                    let earliest = chunk.iter().map(|r| r.0).min().expect("a row");
                    results.push(aggregate(earliest, latest + 1, k, chunk));
                }
            }
        }
    }
    results.sort();
    late.sort();
    dead.sort();
    Ran {
        results,
        late,
        dead,
    }
}

fn lengths() -> impl Strategy<Value = i64> {
    prop_oneof![
        1i64..6,
        Just(1000),
        Just(86_400_000),
        Just((1i64 << 40) + 7),
        Just(1_000_000_000_000_000),
    ]
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        lengths().prop_map(|s| Kind::Sliding(s, s)),
        (lengths(), 1i64..5).prop_map(|(slide, m)| Kind::Sliding(slide * m, slide)),
        lengths().prop_map(Kind::Session),
        (1u64..5).prop_map(Kind::Count),
    ]
}

/// Times at and near both ends of the range (within three window lengths), near the epoch,
/// and anywhere.
fn time(length: i64) -> impl Strategy<Value = i64> {
    let near = 3 * length;
    prop_oneof![
        Just(i64::MIN),
        Just(i64::MIN + 1),
        Just(i64::MAX),
        Just(i64::MAX - 1),
        (0..near).prop_map(|d| i64::MIN + d),
        (0..near).prop_map(|d| i64::MAX - d),
        -near..near,
        any::<i64>(),
    ]
}

/// A kind of window, batches of rows (ids 0, 1, …) and a watermark delay.
fn case() -> impl Strategy<Value = (Kind, Vec<Vec<Row>>, i64)> {
    kind().prop_flat_map(|kind| {
        let l = kind.length();
        let row = (time(l), 0i64..3);
        let batches = prop::collection::vec(prop::collection::vec(row, 1..8), 1..7);
        let delay = prop_oneof![Just(0i64), Just(1), 0..2 * l, Just(i64::MAX)];
        (Just(kind), batches, delay).prop_map(|(kind, batches, delay)| {
            let mut id = 0;
            let batches = batches
                .into_iter()
                .map(|rows| {
                    rows.into_iter()
                        .map(|(t, k)| {
                            id += 1;
                            (t, k, id)
                        })
                        .collect()
                })
                .collect();
            (kind, batches, delay)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn every_row_is_in_a_window_late_or_a_dead_letter(
        (kind, batches, delay) in case(),
        int_time in any::<bool>(),
        restart in any::<prop::sample::Index>(),
        lsm in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().expect("a temp dir");
        let dead_file = dir.path().join("rejected");
        let rows: usize = batches.iter().map(Vec::len).sum();
        let at = restart.index(batches.len() + 1);
        for keyed in [true, false] {
            let expected = naive(kind, keyed, &batches, delay);
            for restart in [None, Some((at, lsm))] {
                let s = Setup { kind, keyed, int_time, restart };
                let ran = run(s, &batches, delay, &dead_file);
                for r in &ran.results {
                    prop_assert!(r.0 < r.1, "{:?}: a window {:?} that ends by its start", s, r);
                    prop_assert!(r.0 <= r.4 && r.4 <= r.5 && r.5 < r.1, "{:?}: a window {:?} that does not hold its rows", s, r);
                }
                for (id, reason) in &ran.dead {
                    prop_assert!(reason.starts_with("event time ") && reason.contains("does not fit in a timestamp"), "{:?}: row {}: {}", s, id, reason);
                }
                if !matches!(kind, Kind::Sliding(size, slide) if size != slide) && !matches!(kind, Kind::Count(_)) {
                    // A row is in one tumbling window or session at most.
                    let in_windows: i64 = ran.results.iter().map(|r| r.3).sum();
                    prop_assert_eq!(in_windows as usize + ran.late.len() + ran.dead.len(), rows, "{:?}: rows lost", s);
                }
                prop_assert_eq!(&ran.results, &expected.results, "{:?}", s);
                prop_assert_eq!(&ran.late, &expected.late, "{:?}: late rows", s);
                let dead_ids: Vec<i64> = ran.dead.iter().map(|d| d.0).collect();
                let expected_dead: Vec<i64> = expected.dead.iter().map(|d| d.0).collect();
                prop_assert_eq!(dead_ids, expected_dead, "{:?}: dead letters", s);
            }
        }
    }
}

/// The rows of the issue: with a one-second TUMBLE and a HOP of one second every half
/// second, `i64::MIN`, `i64::MAX` and `i64::MAX - 807` (whose second would end after
/// `i64::MAX`) go to the dead letters; `i64::MIN + 808` and `i64::MAX - 808` are in the first
/// and the last whole seconds of the range.
#[test]
fn the_ends_of_the_range_under_tumble_and_hop() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (lo, hi) = (i64::MIN + 808, i64::MAX - 808);
    let rows = vec![vec![
        (i64::MIN, 0, 1),
        (lo, 0, 2),
        (0, 0, 3),
        (hi, 0, 4),
        (hi + 1, 0, 5),
        (i64::MAX, 0, 6),
    ]];
    let tumble = Setup {
        kind: Kind::Sliding(1000, 1000),
        keyed: true,
        int_time: false,
        restart: None,
    };
    let ran = run(tumble, &rows, 0, &dir.path().join("t"));
    assert_eq!(
        ran.results,
        vec![
            (lo, lo + 1000, 0, 1, lo, lo, 2),
            (0, 1000, 0, 1, 0, 0, 3),
            (hi - 999, hi + 1, 0, 1, hi, hi, 4),
        ]
    );
    let dead: Vec<i64> = ran.dead.iter().map(|d| d.0).collect();
    assert_eq!(dead, vec![1, 5, 6]);
    let hop = Setup {
        kind: Kind::Sliding(1000, 500),
        ..tumble
    };
    let ran = run(hop, &rows, 0, &dir.path().join("h"));
    let dead: Vec<i64> = ran.dead.iter().map(|d| d.0).collect();
    assert_eq!(dead, vec![1, 5, 6]);
    assert_eq!(
        ran.results,
        vec![
            (lo, lo + 1000, 0, 1, lo, lo, 2),
            (lo - 500, lo + 500, 0, 1, lo, lo, 2),
            (-500, 500, 0, 1, 0, 0, 3),
            (0, 1000, 0, 1, 0, 0, 3),
            (hi - 499, hi + 501, 0, 1, hi, hi, 4),
            (hi - 999, hi + 1, 0, 1, hi, hi, 4),
        ]
        .into_iter()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
    );
}
