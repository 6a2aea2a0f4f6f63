//! Every kind of window (tumbling, sliding, cumulating, session, count), over seeded random rows that arrive out of order (some of them
//! late), with a random `allowed_lateness` that changes while it runs, gives what a naive
//! recomputation from the rows gives, each result when the naive model says it is due; a
//! window checkpointed twice (a full snapshot, then the changes since) and restored from
//! both, with its state in the heap and in the LSM backend, the lateness changes recorded so
//! far applied again after the restore (as a resume does), gives the same results as one
//! that ran straight through; and four instances, each fed the keys it owns, together give
//! the result of one. A changelog holds only what changed; a global window restores too.
//!
//! The model: batch `i` arrives, then the watermark `w_i` (the largest time seen less a
//! delay). The lateness in force at `w_i` is the last one set before batch `i` (the query's,
//! then each change). The cutoff after `w_i` is `c_i = max(c_{i-1}, w_i - lateness)` if `w_i`
//! is later than `w_{i-1}` (else `c_{i-1}`: a watermark sent again moves nothing), from
//! `i64::MIN`, and `+∞` at the end of input. A row of batch `i` counts iff its time is at or
//! after `c_{i-1}`; the rows that count are grouped into windows as without lateness. A
//! tumbling or sliding window is emitted at the first watermark whose cutoff reaches its
//! end, a session at the first whose cutoff is past its end (its last row + gap), a count
//! window in the batch of its last row.

use crate::common;

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
    /// Cumulating windows: size, step.
    Cumulate(i64, i64),
    Session(i64),
    Count(u64),
}

/// A result and when it came: `2 i` while batch `i` was processed, `2 i + 1` at the watermark
/// after it, `2 n` at the end of the `n` batches.
type Timed = (usize, Out);

/// The lateness the query sets (ms), and the changes while running: `changes[i]` is set
/// before batch `i`.
#[derive(Debug, Clone)]
struct Lateness {
    initial: i64,
    changes: Vec<Option<i64>>,
}

impl Lateness {
    fn change_before(&self, batch: usize) -> Option<i64> {
        self.changes.get(batch).copied().flatten()
    }
}

/// The window operator of `kind`, keyed by `k`, with `lateness` ms; with `lsm`, its state in
/// the LSM backend.
fn window(kind: Kind, lsm: bool, lateness: i64) -> Box<dyn Operator> {
    window_by(kind, lsm, "param keys = \"k\"", lateness)
}

/// The window operator of `kind` with `keys` (a `param keys = …` or nothing).
fn window_by(kind: Kind, lsm: bool, keys: &str, lateness: i64) -> Box<dyn Operator> {
    let kind_params = match kind {
        Kind::Sliding(size, slide) => {
            format!(r#"param kind = "sliding" param size = "{size}ms" param slide = "{slide}ms""#)
        }
        Kind::Cumulate(size, step) => {
            format!(r#"param kind = "cumulate" param size = "{size}ms" param step = "{step}ms""#)
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
  param allowed_lateness = "{lateness}ms"
  param aggregates = "COUNT(*) AS n, COUNT(v) AS nv, SUM(v) AS total, MIN(v) AS lo, MAX(v) AS hi"
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    );
    common::operator(&src)
}

/// The results, each with the step it came at (see [`Timed`]).
struct Collect {
    step: usize,
    out: Vec<Timed>,
}

impl Collect {
    fn new() -> Self {
        Self {
            step: 0,
            out: Vec::new(),
        }
    }
}

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
            self.out.push((
                self.step,
                (
                    s.value(i),
                    e.value(i),
                    k.as_ref().map_or(0, |k| k.value(i)),
                    n.value(i),
                    nv.value(i),
                    opt(&sum, i),
                    opt(&lo, i),
                    opt(&hi, i),
                ),
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

/// Sets `ms` as the allowed lateness of `op`, as a change while running does.
fn set_lateness(op: &mut Box<dyn Operator>, ms: i64) {
    op.set_param("allowed_lateness", &format!("{ms}ms"))
        .expect("a duration");
}

/// Feeds the batches with a watermark (largest time seen minus `delay`) after each one, the
/// changes of `lateness` before theirs; with `restart_at`, takes a full checkpoint before
/// batch `restart_at / 2` and a changelog before batch `restart_at`, and restores both into a
/// fresh instance (with `lsm`, one keeping its state in the LSM backend) there, then applies
/// the changes made so far again, oldest first.
/// With `global`, the window has no keys.
fn run(
    kind: Kind,
    batches: &[Vec<Row>],
    delay: i64,
    lateness: &Lateness,
    restart_at: Option<(usize, bool)>,
    global: bool,
) -> Vec<Timed> {
    let lsm = restart_at.is_some_and(|(_, lsm)| lsm);
    let make = || {
        if global {
            window_by(kind, lsm, "", lateness.initial)
        } else {
            window(kind, lsm, lateness.initial)
        }
    };
    let mut op = make();
    let mut out = Collect::new();
    let mut max = i64::MIN;
    let mut full = None;
    let mut applied = vec![];
    for (i, rows) in batches.iter().enumerate() {
        if let Some((at, _)) = restart_at {
            if let Some(fresh) = common::restart_point(i, at, &mut op, &mut full, make) {
                op = fresh;
                for ms in &applied {
                    set_lateness(&mut op, *ms);
                }
            }
        }
        if let Some(ms) = lateness.change_before(i) {
            set_lateness(&mut op, ms);
            applied.push(ms);
        }
        out.step = 2 * i;
        op.process_batch(0, batch(rows), &mut out)
            .expect("processes");
        if let Some(m) = rows.iter().map(|r| r.0).max() {
            max = max.max(m);
            out.step = 2 * i + 1;
            op.handle_watermark(Watermark(max - delay), &mut out)
                .expect("fires");
        }
    }
    out.step = 2 * batches.len();
    op.handle_watermark(Watermark::MAX, &mut out)
        .expect("fires");
    op.on_end_of_input(&mut out).expect("ends");
    out.out.sort();
    out.out
}

/// Four instances, each fed the rows of the keys it owns (key mod 4), every watermark and
/// every change.
fn run_split(kind: Kind, batches: &[Vec<Row>], delay: i64, lateness: &Lateness) -> Vec<Timed> {
    let mut all = vec![];
    for part in 0..4 {
        let mut op = window(kind, false, lateness.initial);
        let mut out = Collect::new();
        let mut max = i64::MIN;
        for (i, rows) in batches.iter().enumerate() {
            if let Some(ms) = lateness.change_before(i) {
                set_lateness(&mut op, ms);
            }
            let mine: Vec<Row> = rows.iter().filter(|r| r.1 % 4 == part).copied().collect();
            out.step = 2 * i;
            op.process_batch(0, batch(&mine), &mut out)
                .expect("processes");
            if let Some(m) = rows.iter().map(|r| r.0).max() {
                max = max.max(m);
                out.step = 2 * i + 1;
                op.handle_watermark(Watermark(max - delay), &mut out)
                    .expect("fires");
            }
        }
        out.step = 2 * batches.len();
        op.handle_watermark(Watermark::MAX, &mut out)
            .expect("fires");
        all.extend(out.out);
    }
    all.sort();
    all
}

/// What the model of the module's documentation admits: the rows that count, in arrival
/// order, each with its batch; and the cutoff after each batch's watermark.
fn admitted(
    batches: &[Vec<Row>],
    delay: i64,
    lateness: &Lateness,
) -> (Vec<(Row, usize)>, Vec<i64>) {
    let mut max = i64::MIN;
    let mut cutoff = i64::MIN;
    let mut allowed = lateness.initial;
    let mut kept = vec![];
    let mut cutoffs = vec![];
    for (i, rows) in batches.iter().enumerate() {
        allowed = lateness.change_before(i).unwrap_or(allowed);
        kept.extend(rows.iter().filter(|r| r.0 >= cutoff).map(|r| (*r, i)));
        if let Some(m) = rows.iter().map(|r| r.0).max() {
            // Only a watermark later than the last moves the cutoff.
            if m > max {
                max = m;
                cutoff = cutoff.max((max - delay).saturating_sub(allowed));
            }
        }
        cutoffs.push(cutoff);
    }
    (kept, cutoffs)
}

/// When each of the naive `windows` is due (see [`Timed`]), given the cutoffs after each
/// batch's watermark.
fn timed(kind: Kind, windows: Vec<(Out, usize)>, cutoffs: &[i64]) -> Vec<Timed> {
    let at_watermark = |closed: &dyn Fn(i64) -> bool| {
        cutoffs
            .iter()
            .position(|c| closed(*c))
            .map_or(2 * cutoffs.len(), |i| 2 * i + 1)
    };
    let mut out: Vec<Timed> = windows
        .into_iter()
        .map(|(w, last_batch)| {
            let end = w.1;
            let step = match kind {
                Kind::Sliding(..) | Kind::Cumulate(..) => at_watermark(&|c| c >= end),
                Kind::Session(_) => at_watermark(&|c| c > end),
                Kind::Count(_) => 2 * last_batch,
            };
            (step, w)
        })
        .collect();
    out.sort();
    out
}

/// The naive results and when they are due, from the batches as the model admits them.
fn expected(kind: Kind, batches: &[Vec<Row>], delay: i64, lateness: &Lateness) -> Vec<Timed> {
    let (rows, cutoffs) = admitted(batches, delay, lateness);
    timed(kind, naive(kind, &rows), &cutoffs)
}

/// The window's result over `rows`, with the batch the last of them arrived in.
fn aggregate(start: i64, end: i64, key: i64, rows: &[(Row, usize)]) -> (Out, usize) {
    let vs: Vec<i64> = rows.iter().filter_map(|(r, _)| r.2).collect();
    let opt = |x: Option<i64>| if vs.is_empty() { None } else { x };
    let out = (
        start,
        end,
        key,
        rows.len() as i64,
        vs.len() as i64,
        opt(Some(vs.iter().sum())),
        opt(vs.iter().min().copied()),
        opt(vs.iter().max().copied()),
    );
    (out, rows.iter().map(|(_, b)| *b).max().unwrap_or(0))
}

/// The windows of `rows` (in arrival order, each with its batch), computed from scratch,
/// each with the batch its last row arrived in.
fn naive(kind: Kind, rows: &[(Row, usize)]) -> Vec<(Out, usize)> {
    let mut out = vec![];
    let mut by_key: BTreeMap<i64, Vec<(Row, usize)>> = BTreeMap::new();
    for r in rows {
        by_key.entry(r.0 .1).or_default().push(*r);
    }
    match kind {
        Kind::Sliding(size, slide) => {
            let mut windows: BTreeMap<(i64, i64), Vec<(Row, usize)>> = BTreeMap::new();
            for r in rows {
                let ts = r.0 .0;
                // Every window start s (a multiple of slide) with s <= ts < s + size.
                let mut s = ts.div_euclid(slide) * slide;
                while s > ts - size {
                    windows.entry((s, r.0 .1)).or_default().push(*r);
                    s -= slide;
                }
            }
            for ((s, k), rs) in windows {
                out.push(aggregate(s, s + size, k, &rs));
            }
        }
        Kind::Cumulate(size, step) => {
            let mut windows: BTreeMap<(i64, i64, i64), Vec<(Row, usize)>> = BTreeMap::new();
            for r in rows {
                let ts = r.0 .0;
                // The row's cycle [s, s + size), and every window of it that ends after ts
                // at a multiple of step.
                let s = ts.div_euclid(size) * size;
                let mut e = ts.div_euclid(step) * step + step;
                while e <= s + size {
                    windows.entry((s, e, r.0 .1)).or_default().push(*r);
                    e += step;
                }
            }
            for ((s, e, k), rs) in windows {
                out.push(aggregate(s, e, k, &rs));
            }
        }
        Kind::Session(gap) => {
            for (k, mut rs) in by_key {
                rs.sort_by_key(|(r, _)| r.0);
                let mut current: Vec<(Row, usize)> = vec![];
                for r in rs {
                    if let Some(last) = current.last() {
                        if r.0 .0 > last.0 .0 + gap {
                            out.push(session(k, &current, gap));
                            current.clear();
                        }
                    }
                    current.push(r);
                }
                if !current.is_empty() {
                    out.push(session(k, &current, gap));
                }
            }
        }
        Kind::Count(n) => {
            for (k, rs) in by_key {
                for chunk in rs.chunks_exact(n as usize) {
                    // From the earliest row's time to one millisecond after the latest's.
                    let earliest = chunk.iter().map(|(r, _)| r.0).min().unwrap_or(0);
                    let latest = chunk.iter().map(|(r, _)| r.0).max().unwrap_or(0);
                    out.push(aggregate(earliest, latest + 1, k, chunk));
                }
            }
        }
    }
    out.sort();
    out
}

/// The session of `rows` (sorted by time): from the first row to the last plus `gap`.
fn session(key: i64, rows: &[(Row, usize)], gap: i64) -> (Out, usize) {
    let start = rows.first().map_or(0, |(r, _)| r.0);
    let end = rows.iter().map(|(r, _)| r.0).max().unwrap_or(start) + gap;
    aggregate(start, end, key, rows)
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
        (1i64..6, 1i64..20).prop_map(|(m, step)| Kind::Cumulate(step * m, step)),
        (1i64..40).prop_map(Kind::Session),
        (1u64..6).prop_map(Kind::Count),
    ]
}

/// A lateness of 0 to 60 ms (as often 0 as not), at the start and changed before a batch
/// now and then.
fn lateness() -> impl Strategy<Value = Lateness> {
    let ms = || prop_oneof![Just(0i64), 1i64..60];
    (
        ms(),
        prop::collection::vec(prop::option::weighted(0.2, ms()), 12),
    )
        .prop_map(|(initial, changes)| Lateness { initial, changes })
}

/// The naive result of `kind` over `bs` is what one window gives straight through, restored
/// before a batch (heap and LSM), keyed or global, and split over four instances.
fn agrees(
    kind: Kind,
    bs: &[Vec<Row>],
    delay: i64,
    lateness: &Lateness,
    restart: prop::sample::Index,
) -> Result<(), TestCaseError> {
    let want = expected(kind, bs, delay, lateness);
    prop_assert_eq!(&run(kind, bs, delay, lateness, None, false), &want);
    let at = restart.index(bs.len());
    for lsm in [false, true] {
        prop_assert_eq!(
            &run(kind, bs, delay, lateness, Some((at, lsm)), false),
            &want,
            "restored before batch {} (lsm: {})",
            at,
            lsm
        );
    }
    // A global window: every row of key 0.
    let bs: Vec<Vec<Row>> = bs
        .iter()
        .map(|rows| rows.iter().map(|r| (r.0, 0, r.2)).collect())
        .collect();
    let want = expected(kind, &bs, delay, lateness);
    for lsm in [false, true] {
        prop_assert_eq!(
            &run(kind, &bs, delay, lateness, Some((at, lsm)), true),
            &want,
            "global, restored before batch {} (lsm: {})",
            at,
            lsm
        );
    }
    prop_assert_eq!(
        &run_split(kind, &bs, delay, lateness),
        &want,
        "four instances"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn every_window_kind_matches_the_naive_result(kind in kind(), bs in batches(), delay in 0i64..40, lateness in lateness(), restart in any::<prop::sample::Index>()) {
        agrees(kind, &bs, delay, &lateness, restart)?;
    }

    /// Cumulating windows (issue 17's CUMULATE) more often: cycles of 1 to 8 steps.
    #[test]
    fn cumulating_windows_match_the_naive_result(step in 1i64..25, steps in 1i64..9, bs in batches(), delay in 0i64..40, lateness in lateness(), restart in any::<prop::sample::Index>()) {
        agrees(Kind::Cumulate(step * steps, step), &bs, delay, &lateness, restart)?;
    }
}

/// Rows 10 ms apart, one per batch, a watermark 30 ms behind the latest, a lateness of 25 ms
/// changed to 0 before batch 2, a restore before batch 6: the restored window gives the
/// results due, and one that forgot to apply the change again (as if the lateness went back
/// to 25 ms there) would give others, so the proptest above would see a missing reapply.
#[test]
fn a_restore_applies_the_recorded_changes_again() {
    let base = 1_700_000_000_000i64;
    let bs: Vec<Vec<Row>> = (0..12).map(|i| vec![(base + 10 * i, 0, Some(i))]).collect();
    let lateness = Lateness {
        initial: 25,
        changes: vec![None, None, Some(0)],
    };
    let kind = Kind::Sliding(10, 10);
    let want = expected(kind, &bs, 30, &lateness);
    for lsm in [false, true] {
        assert_eq!(run(kind, &bs, 30, &lateness, Some((6, lsm)), false), want);
    }
    let forgotten = Lateness {
        initial: 25,
        changes: vec![None, None, Some(0), None, None, None, Some(25)],
    };
    assert_ne!(expected(kind, &bs, 30, &forgotten), want);
    assert_eq!(
        run(kind, &bs, 30, &forgotten, None, false),
        expected(kind, &bs, 30, &forgotten)
    );
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
        Kind::Cumulate(2000, 500),
        Kind::Session(100),
        Kind::Count(5),
    ] {
        for lsm in [false, true] {
            let mut out = Collect::new();
            let mut op = window(kind, lsm, 0);
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
            let mut op = restored(|| window(kind, lsm, 0), vec![full, changes]);
            op.handle_watermark(Watermark::MAX, &mut out)
                .expect("fires");
            let mut got: Vec<Out> = out.out.into_iter().map(|(_, o)| o).collect();
            got.sort();
            let all: Vec<(Row, usize)> = first.iter().chain(&more).map(|r| (*r, 0)).collect();
            let want: Vec<Out> = naive(kind, &all).into_iter().map(|(o, _)| o).collect();
            assert_eq!(got, want, "{kind:?} (lsm: {lsm})");
        }
    }
}
