//! The `over` operator over an updating stream: seeded random rows inserted and retracted
//! upstream at random; after every batch, its changelog folded into a multiset of rows equals
//! the naive OVER window of the rows live at that point — per partition, the live rows
//! ordered by time, then by their values (so that rows of one time come in an order that does
//! not depend on their arrival), each with the aggregates of its frame computed from scratch
//! (`rows n`: the `n` before it; `range x`: those at most `x` ms older, peers included;
//! unbounded: all before it). One partition or keyed; COUNT(*), COUNT, SUM, MIN, MAX, AVG (of
//! nullable ints) and SUM with a FILTER; an operator checkpointed twice (a full snapshot, then
//! the changes since) and restored from both, heap and LSM.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use anduin_operator_api::{Collector, Operator, OperatorError};
use anduin_types::{is_updating, ChangeKind};
use arrow::array::{Array, Int8Array};
use arrow::record_batch::RecordBatch;
use common::over::{cells, columns, framed, frames, naive_cells, Frame, Row};
use proptest::prelude::*;

/// One change upstream: a row added (`+I`, or `+U` if true), or a live row (at an index,
/// modulo their number) taken out (`-D`, or `-U` if true).
#[derive(Debug, Clone)]
enum Step {
    Add(Row, bool),
    Retract(usize, bool),
}

fn over(keys: bool, frame: Frame, lsm: bool) -> Box<dyn Operator> {
    common::over::over(keys, frame, lsm, true)
}

fn batch(rows: &[(Row, ChangeKind)]) -> RecordBatch {
    let mut columns = columns(rows.iter().map(|r| &r.0));
    columns.push(Arc::new(Int8Array::from_iter_values(
        rows.iter().map(|r| r.1.code()),
    )));
    common::over::batch(columns, true)
}

/// The changelog folded: each row and how many times it is held.
#[derive(Default)]
struct Folded(BTreeMap<Vec<String>, usize>);

impl Collector for Folded {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        assert!(is_updating(&b.schema()));
        let width = b.num_columns() - 1;
        let kinds = b
            .column(width)
            .as_any()
            .downcast_ref::<Int8Array>()
            .expect("a change kind");
        for i in 0..b.num_rows() {
            let cells = cells(&b.columns()[..width], i);
            let kind = ChangeKind::from_code(kinds.value(i)).expect("a valid kind");
            if kind.adds() {
                *self.0.entry(cells).or_default() += 1;
            } else {
                let n = self.0.get_mut(&cells);
                let n = n.unwrap_or_else(|| panic!("{kind} of {cells:?}, which is not held"));
                *n -= 1;
                if *n == 0 {
                    self.0.remove(&cells);
                }
            }
        }
        Ok(())
    }
}

/// The naive OVER window of the `live` rows, folded as [`Folded`] folds.
fn naive(live: &[Row], keys: bool, frame: Frame) -> BTreeMap<Vec<String>, usize> {
    let mut parts: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
    for r in live {
        parts
            .entry(if keys { r.0 } else { 0 })
            .or_default()
            .push(*r);
    }
    let mut out: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    for rows in parts.values_mut() {
        // By time, then by the values (a null value first).
        rows.sort_by_key(|r| (r.1, r.0, r.2, r.3));
        for (at, r) in rows.iter().enumerate() {
            let cells = naive_cells(r, &framed(rows, at, r, frame));
            *out.entry(cells).or_default() += 1;
        }
    }
    out
}

/// Runs `batches` of changes through an OVER window and checks its folded changelog against
/// the naive one after each batch; with `restart_at`, checkpoints (full at half way, changes
/// there) and restores a fresh one, with its state in the LSM backend if asked.
fn check(batches: &[Vec<Step>], keys: bool, frame: Frame, restart_at: Option<(usize, bool)>) {
    let lsm = restart_at.is_some_and(|(_, lsm)| lsm);
    let make = || over(keys, frame, lsm);
    let mut op = make();
    let mut folded = Folded::default();
    let mut live: Vec<Row> = Vec::new();
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
                Step::Add(r, update) => {
                    live.push(*r);
                    let kind = if *update {
                        ChangeKind::UpdateAfter
                    } else {
                        ChangeKind::Insert
                    };
                    rows.push((*r, kind));
                }
                Step::Retract(at, update) if !live.is_empty() => {
                    let r = live.remove(at % live.len());
                    let kind = if *update {
                        ChangeKind::UpdateBefore
                    } else {
                        ChangeKind::Delete
                    };
                    rows.push((r, kind));
                }
                Step::Retract(..) => {}
            }
        }
        op.process_batch(0, batch(&rows), &mut folded)
            .expect("processes");
        assert_eq!(
            folded.0,
            naive(&live, keys, frame),
            "after batch {i}, keys {keys}, {frame:?}, {batches:?}"
        );
    }
    op.on_end_of_input(&mut folded).expect("ends");
    assert_eq!(folded.0, naive(&live, keys, frame), "at the end");
}

fn steps() -> impl Strategy<Value = Vec<Vec<Step>>> {
    // Few times and values, so that peers and equal rows are many; rows out of order.
    let row = (
        0i64..3,
        0i64..10,
        prop::option::weighted(0.85, -3i64..6),
        0i64..3,
    );
    let step = prop_oneof![
        3 => (row, any::<bool>()).prop_map(|(r, u)| Step::Add(r, u)),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(i, u)| Step::Retract(i, u)),
    ];
    prop::collection::vec(prop::collection::vec(step, 0..12), 1..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn the_folded_changelog_equals_the_naive_over_window_of_the_live_rows_after_every_batch(
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
fn a_retracted_row_takes_its_result_back_and_corrects_the_rows_after_it() {
    let steps = vec![
        vec![
            Step::Add((1, 1, Some(10), 0), false),
            Step::Add((1, 2, Some(20), 0), false),
            Step::Add((1, 3, Some(30), 0), false),
        ],
        // 20 goes, 25 comes in its place: 3's frame (rows 1) holds 25 then.
        vec![Step::Retract(1, true), Step::Add((1, 2, Some(25), 0), true)],
        vec![Step::Retract(0, false)],
    ];
    check(&steps, true, Frame::Rows(Some(1)), None);
    check(&steps, false, Frame::Range(Some(1)), Some((2, true)));
}
