//! The `over` operator over seeded random rows and watermarks: after every batch, the rows it
//! emitted equal a naive recomputation. The naive one keeps a row unless its partition had
//! emitted a row as late or later when it came (rows of time before the last watermark, that
//! came before it), releases the rows the last watermark passed (times strictly before it), and gives each the
//! aggregates of its frame computed from scratch: its partition's kept rows in (time,
//! arrival) order, the `n` before it (`rows n`), those at most `x` ms older (`range x`, peers
//! of equal time included), or all before it (unbounded). One partition or keyed; COUNT(*),
//! COUNT, SUM, MIN, MAX, AVG (of nullable ints) and SUM with a FILTER; an operator
//! checkpointed twice (a full snapshot, then the changes since) and restored from both, heap
//! and LSM.

use crate::common;

use std::collections::BTreeMap;

use anduin_operator_api::{Collector, Operator, OperatorError};
use anduin_types::Watermark;
use arrow::record_batch::RecordBatch;
use common::over::{cells, columns, framed, frames, naive_cells, Frame, Row};
use proptest::prelude::*;

/// One event upstream: a row, or the watermark moved on by some milliseconds.
#[derive(Debug, Clone)]
enum Step {
    Add(Row),
    Watermark(i64),
}

fn over(keys: bool, frame: Frame, lsm: bool) -> Box<dyn Operator> {
    common::over::over(keys, frame, lsm, false)
}

fn batch(rows: &[Row]) -> RecordBatch {
    common::over::batch(columns(rows.iter()), false)
}

/// The rows emitted, each as its cells' text.
#[derive(Default)]
struct Out(Vec<Vec<String>>);

impl Collector for Out {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        for i in 0..b.num_rows() {
            self.0.push(cells(b.columns(), i));
        }
        Ok(())
    }
}

/// A row as it came: the row, and the watermark then with the number of rows before it.
type Seen = (Row, i64, usize);

/// The naive rows emitted once the rows `seen` have come (watermark `w`, which came after
/// the first `w_at` of them), sorted.
fn naive(seen: &[Seen], w: i64, w_at: usize, keys: bool, frame: Frame) -> Vec<Vec<String>> {
    let part = |r: &Row| if keys { r.0 } else { 0 };
    // (arrival, row) of the rows kept.
    let mut kept: Vec<(usize, Row)> = Vec::new();
    for (i, (r, w_then, at_then)) in seen.iter().enumerate() {
        // The time of the last row its partition emitted before it came.
        let last = kept
            .iter()
            .filter(|(j, x)| part(x) == part(r) && j < at_then && x.1 < *w_then)
            .map(|(_, x)| x.1)
            .max();
        if last.is_none_or(|l| r.1 > l) {
            kept.push((i, *r));
        }
    }
    let mut out = Vec::new();
    for (i, r) in &kept {
        if !(*i < w_at && (r.1 < w || w == i64::MAX)) {
            continue;
        }
        let mut rows: Vec<(usize, Row)> = kept
            .iter()
            .filter(|(_, x)| part(x) == part(r))
            .copied()
            .collect();
        rows.sort_by_key(|(j, x)| (x.1, *j));
        let at = rows.iter().position(|(j, _)| j == i).expect("itself");
        let ordered: Vec<Row> = rows.iter().map(|x| x.1).collect();
        out.push(naive_cells(r, &framed(&ordered, at, r, frame)));
    }
    out.sort();
    out
}

/// Runs `batches` through an OVER window and checks what it emitted against the naive rows
/// after each batch; with `restart_at`, checkpoints (full at half way, changes there) and
/// restores a fresh one, with its state in the LSM backend if asked.
fn check(batches: &[Vec<Step>], keys: bool, frame: Frame, restart_at: Option<(usize, bool)>) {
    let lsm = restart_at.is_some_and(|(_, lsm)| lsm);
    let make = || over(keys, frame, lsm);
    let mut op = make();
    let mut out = Out::default();
    let mut seen: Vec<Seen> = Vec::new();
    let (mut w, mut w_at) = (i64::MIN, 0);
    let mut full = None;
    for (i, steps) in batches.iter().enumerate() {
        if let Some((at, _)) = restart_at {
            if let Some(fresh) = common::restart_point(i, at, &mut op, &mut full, make) {
                op = fresh;
            }
        }
        let mut rows = Vec::new();
        for s in steps {
            match s {
                Step::Add(r) => rows.push(*r),
                Step::Watermark(by) => {
                    op.process_batch(0, batch(&rows), &mut out)
                        .expect("processes");
                    seen.extend(rows.drain(..).map(|r| (r, w, w_at)));
                    w = if w == i64::MIN { *by } else { w + by };
                    w_at = seen.len();
                    let passed = op.handle_watermark(Watermark(w), &mut out).expect("fires");
                    assert_eq!(passed, Some(Watermark(w)), "the watermark goes on");
                }
            }
        }
        op.process_batch(0, batch(&rows), &mut out)
            .expect("processes");
        seen.extend(rows.drain(..).map(|r| (r, w, w_at)));
        let mut got = out.0.clone();
        got.sort();
        assert_eq!(
            got,
            naive(&seen, w, w_at, keys, frame),
            "after batch {i}, keys {keys}, {frame:?}, {batches:?}"
        );
    }
    op.on_end_of_input(&mut out).expect("ends");
    out.0.sort();
    assert_eq!(
        out.0,
        naive(&seen, i64::MAX, seen.len(), keys, frame),
        "at the end, keys {keys}, {frame:?}, {batches:?}"
    );
}

fn steps() -> impl Strategy<Value = Vec<Vec<Step>>> {
    // Few times and values, so that peers and equal values are many; rows out of order.
    let row = (
        0i64..3,
        0i64..12,
        prop::option::weighted(0.85, -3i64..6),
        0i64..4,
    );
    let step = prop_oneof![
        4 => row.prop_map(Step::Add),
        1 => (0i64..4).prop_map(Step::Watermark),
    ];
    prop::collection::vec(prop::collection::vec(step, 0..10), 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn the_rows_emitted_equal_the_naive_ones_after_every_batch(
        bs in steps(),
        keys in any::<bool>(),
        frame in frames(),
        restart in any::<prop::sample::Index>(),
        lsm in any::<bool>(),
    ) {
        check(&bs, keys, frame, None);
        let at = restart.index(bs.len());
        check(&bs, keys, frame, Some((at, lsm)));
    }
}

#[test]
fn a_row_behind_its_partition_s_last_emitted_one_is_dropped_and_counted() {
    let mut op = over(true, Frame::Rows(Some(1)), false);
    let mut out = Out::default();
    op.process_batch(
        0,
        batch(&[(1, 5, Some(10), 0), (1, 3, Some(1), 1)]),
        &mut out,
    )
    .expect("processes");
    assert!(out.0.is_empty(), "nothing before the watermark");
    op.handle_watermark(Watermark(6), &mut out).expect("fires");
    // Time 3 then time 5: 5's frame holds both.
    assert_eq!(out.0.len(), 2);
    assert_eq!(out.0[1][6], "11", "{:?}", out.0);
    // Of key 1, time 5 and earlier come late; key 2 has emitted nothing.
    op.process_batch(
        0,
        batch(&[(1, 5, Some(1), 2), (2, 4, Some(7), 3)]),
        &mut out,
    )
    .expect("processes");
    let metrics: BTreeMap<_, _> = op.metrics().into_iter().collect();
    assert_eq!(metrics["late_rows_dropped"], 1);
    op.on_end_of_input(&mut out).expect("ends");
    assert_eq!(out.0.len(), 3);
    assert_eq!(out.0[2][..4], ["2", "4", "7", "3"]);
}
