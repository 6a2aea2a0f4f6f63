//! Issue 15's live rescale on a tumbling or sliding window, as the runtime does it for an
//! operator that moves key groups itself (`Operator::give_key_groups` and
//! `take_key_groups`): one instance runs alone while another, idle, sees only the
//! watermarks; half the key groups move to the idle one; both checkpoint and are restored
//! (the giver's checkpoint must no longer hold what it gave, the taker's must hold what it
//! took); then part of the taker's key groups move back into panes the first one still
//! holds. Fed the rows the exchange sends each (by key group), the two give the rows of one
//! instance that ran straight through: no window lost, none fired twice, no aggregate off.
//! With the heap and the LSM backend, on seeded input a little out of order, with lateness.

use crate::common;

use std::num::NonZeroU16;
use std::sync::Arc;

use anduin_operator_api::keys::KeyEncoder;
use anduin_operator_api::Operator;
use anduin_state::{cut_full, key_group_for_key, KeyGroupRange, DEFAULT_MAX_KEY_GROUPS};
use anduin_types::Watermark;
use arrow::array::{ArrayRef, Int64Array, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;

/// (event time, key, value)
type Row = (i64, i64, i64);

fn window(kind: &str, backend: &str) -> Box<dyn Operator> {
    common::operator(&format!(
        r#"type name = "T" {{ column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "v", type = "int" }}
operator name = "g", type = "generator" {{ output name = "s", type = "T" }}
operator name = "op", type = "window" {{
  input name = "s" {kind} param time = "ts" param keys = "k" param state_backend = "{backend}"
  param allowed_lateness = "20ms"
  param aggregates = "COUNT(*) AS n, SUM(v) AS total, MIN(v) AS lo, MAX(v) AS hi, AVG(v) AS mean"
  output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    ))
}

fn batch(rows: &[Row]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
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

/// Seeded batches of rows of 60 keys, a little out of order, each followed by a watermark
/// 30 ms behind the latest time.
fn input(seed: u64) -> Vec<(Vec<Row>, i64)> {
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut t = 1_000;
    (0..60)
        .map(|_| {
            let rows: Vec<Row> = (0..25)
                .map(|_| {
                    t += 2;
                    let ts = t - (next() % 25) as i64;
                    (ts, (next() % 60) as i64, (next() % 100) as i64 - 50)
                })
                .collect();
            (rows, t - 30)
        })
        .collect()
}

/// The key group the exchange routes each row of `rows` by.
fn key_groups(rows: &[Row]) -> Vec<u16> {
    let keys: ArrayRef = Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1)));
    let encoder = KeyEncoder::new([DataType::Int64]).expect("an encoder");
    let encoded = encoder.encode(&[keys]).expect("encodes");
    encoded
        .iter()
        .map(|k| key_group_for_key(k.as_ref(), DEFAULT_MAX_KEY_GROUPS).0)
        .collect()
}

/// Feeds each instance the rows of the key groups it owns (`owns[i]`), then the watermark.
fn feed(
    ops: &mut [Box<dyn Operator>],
    owns: &[Vec<KeyGroupRange>],
    rows: &[Row],
    wm: i64,
    out: &mut common::Formatted,
) {
    let kgs = key_groups(rows);
    for (op, ranges) in ops.iter_mut().zip(owns) {
        let mine: Vec<Row> = rows
            .iter()
            .zip(&kgs)
            .filter(|(_, kg)| {
                ranges
                    .iter()
                    .any(|r| r.contains(anduin_state::KeyGroup(**kg)))
            })
            .map(|(row, _)| *row)
            .collect();
        if !mine.is_empty() {
            op.process_batch(0, batch(&mine), out).expect("processes");
        }
        op.handle_watermark(Watermark(wm), out).expect("advances");
    }
}

/// Moves `range` from instance `from` to instance `to`, as the runtime does at a barrier.
fn hand(ops: &mut [Box<dyn Operator>], from: usize, to: usize, range: KeyGroupRange) {
    let given = ops[from]
        .give_key_groups(&[range])
        .expect("gives the range");
    assert_eq!(given.pieces.len(), 1);
    ops[to]
        .take_key_groups(given.pieces, vec![given.inline])
        .expect("takes the range");
}

fn sorted(mut rows: Vec<String>) -> Vec<String> {
    rows.sort();
    rows
}

#[test]
#[allow(clippy::indexing_slicing)]
fn two_instances_handing_key_groups_back_and_forth_give_the_rows_of_one() {
    let max = DEFAULT_MAX_KEY_GROUPS.get();
    let (all, low, high) = (
        KeyGroupRange::new(0, max),
        KeyGroupRange::new(0, max / 2),
        KeyGroupRange::new(max / 2, max),
    );
    let top = KeyGroupRange::new(max - max / 4, max);
    let kinds = [
        r#"param kind = "tumbling" param size = "40ms""#,
        r#"param kind = "sliding" param size = "90ms" param slide = "30ms""#,
        r#"param kind = "sliding" param size = "100ms" param slide = "20ms""#,
    ];
    for kind in kinds {
        for backend in ["heap", "lsm"] {
            for seed in [3u64, 11, 0xfeed] {
                let batches = input(seed);
                let mut expected = common::Formatted::new(", ");
                let mut one = vec![window(kind, backend)];
                for (rows, wm) in &batches {
                    feed(&mut one, &[vec![all]], rows, *wm, &mut expected);
                }
                one[0]
                    .handle_watermark(Watermark::MAX, &mut expected)
                    .expect("ends");
                assert!(expected.rows.len() > 100, "{kind}: a test with output");

                let mut got = common::Formatted::new(", ");
                let make = || window(kind, backend);
                let mut ops = vec![make(), make()];
                assert!(ops[0].moves_key_groups(), "{kind}");
                let mut owns = vec![vec![all], vec![]];
                let mut fulls = Vec::new();
                for (i, (rows, wm)) in batches.iter().enumerate() {
                    if i == 19 {
                        // A checkpoint just before: the giver's table holds entries of the
                        // panes about to move.
                        let _ = common::checkpoint(&mut ops[0], false);
                    }
                    if i == 20 {
                        hand(&mut ops, 0, 1, high);
                        owns = vec![vec![low], vec![high]];
                        // A full checkpoint of each right after the move (as the runtime
                        // takes next), holding only the key groups each owns now; both
                        // restored from it at once: the panes moved are still open.
                        ops = ops
                            .iter_mut()
                            .zip([low, high])
                            .map(|(op, own)| {
                                let full = common::checkpoint(op, false);
                                if let Err(e) = cut_full("op", &full.bytes, &[own]) {
                                    panic!("{kind}, {backend}, seed {seed}: {e}");
                                }
                                common::restored(make, vec![full])
                            })
                            .collect();
                    }
                    if i == 28 {
                        fulls = ops
                            .iter_mut()
                            .map(|op| common::checkpoint(op, false))
                            .collect();
                    }
                    if i == 35 {
                        // The changes since, and both restored from the two.
                        let restored: Vec<Box<dyn Operator>> = ops
                            .iter_mut()
                            .zip(fulls.drain(..))
                            .map(|(op, full)| {
                                let changes = common::checkpoint(op, true);
                                common::restored(make, vec![full, changes])
                            })
                            .collect();
                        ops = restored;
                    }
                    if i == 45 {
                        hand(&mut ops, 1, 0, top);
                        owns = vec![
                            vec![low, top],
                            vec![KeyGroupRange::new(high.start, top.start)],
                        ];
                    }
                    feed(&mut ops, &owns, rows, *wm, &mut got);
                }
                for op in &mut ops {
                    op.handle_watermark(Watermark::MAX, &mut got).expect("ends");
                }
                assert_eq!(
                    sorted(got.rows),
                    sorted(expected.rows),
                    "{kind}, {backend}, seed {seed}"
                );
            }
        }
    }
}

#[test]
fn a_session_window_leaves_its_moves_to_the_runtime() {
    let op = window(r#"param kind = "session" param gap = "30ms""#, "heap");
    assert!(!op.moves_key_groups());
}
