//! A live rescale as the runtime does it for an operator that moves key groups itself
//! (`Operator::give_key_groups`, `take_key_groups`), played on two instances of a keyed
//! operator against one that runs straight through.

use std::sync::Arc;

use anduin_operator_api::keys::KeyEncoder;
use anduin_operator_api::Operator;
use anduin_state::{cut_full, key_group_for_key, KeyGroup, KeyGroupRange, DEFAULT_MAX_KEY_GROUPS};
use anduin_types::Watermark;
use arrow::array::{ArrayRef, Int64Array, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;

use super::{checkpoint, restored, Formatted};

/// (event time, key, value)
pub type Row = (i64, i64, i64);

/// One arrival: the input it is for, its rows, and the watermark after them.
pub type Arrival = (usize, Vec<Row>, i64);

/// `count` seeded batches of `rows` rows of 60 keys (columns ts, k, v), a little out of
/// order, for inputs 0, 1, … `inputs - 1` in turn, each followed by a watermark 30 ms behind
/// the latest time.
pub fn arrivals(seed: u64, count: usize, rows: usize, inputs: usize) -> Vec<Arrival> {
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut t = 1_000;
    (0..count)
        .map(|b| {
            let batch: Vec<Row> = (0..rows)
                .map(|_| {
                    t += 2;
                    let ts = t - (next() % 25) as i64;
                    (ts, (next() % 60) as i64, (next() % 100) as i64 - 50)
                })
                .collect();
            (b % inputs, batch, t - 30)
        })
        .collect()
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

/// The key group the exchange routes each row of `rows` by.
fn key_groups(rows: &[Row]) -> Vec<KeyGroup> {
    let keys: ArrayRef = Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1)));
    let encoder = KeyEncoder::new([DataType::Int64]).expect("an encoder");
    let encoded = encoder.encode(&[keys]).expect("encodes");
    encoded
        .iter()
        .map(|k| key_group_for_key(k.as_ref(), DEFAULT_MAX_KEY_GROUPS))
        .collect()
}

/// Feeds each instance the rows of `arrival` of the key groups it owns (`owns[i]`), then the
/// watermark.
fn feed(
    ops: &mut [Box<dyn Operator>],
    owns: &[Vec<KeyGroupRange>],
    arrival: &Arrival,
    out: &mut Formatted,
) {
    let (input, rows, wm) = arrival;
    let kgs = key_groups(rows);
    for (op, ranges) in ops.iter_mut().zip(owns) {
        let mine: Vec<Row> = rows
            .iter()
            .zip(&kgs)
            .filter(|(_, kg)| ranges.iter().any(|r| r.contains(**kg)))
            .map(|(row, _)| *row)
            .collect();
        if !mine.is_empty() {
            op.process_batch(*input, batch(&mine), out)
                .expect("processes");
        }
        op.handle_watermark(Watermark(*wm), out).expect("advances");
    }
}

/// Moves `range` from instance `from` to instance `to`, as the runtime does at a barrier.
fn hand(ops: &mut [Box<dyn Operator>], from: usize, to: usize, range: KeyGroupRange) {
    let given = ops
        .get_mut(from)
        .expect("the giver")
        .give_key_groups(&[range])
        .expect("gives the range");
    assert_eq!(given.pieces.len(), 1);
    let pieces = given.pieces.into_iter().map(|p| (range, p)).collect();
    ops.get_mut(to)
        .expect("the taker")
        .take_key_groups(pieces, vec![given.inline])
        .expect("takes the range");
    for op in ops.iter() {
        // What an operator counts as it goes (a debug build checks it against what it holds).
        let _figures = op.metrics();
    }
}

/// After a move: each of `ops` takes a full checkpoint (the runtime's next after a move),
/// which must hold only its own key groups (`owns`, instance by instance); with `restore`,
/// each is a fresh `make()` restored from it.
fn checkpointed_after_move(
    make: &dyn Fn() -> Box<dyn Operator>,
    ops: Vec<Box<dyn Operator>>,
    owns: &[Vec<KeyGroupRange>],
    restore: bool,
) -> Vec<Box<dyn Operator>> {
    ops.into_iter()
        .zip(owns)
        .map(|(mut op, own)| {
            let full = checkpoint(&mut op, false);
            if let Err(e) = cut_full("op", &full.bytes, own) {
                panic!("the checkpoint after the move holds what is not its own: {e}");
            }
            if restore {
                restored(make, vec![full])
            } else {
                op
            }
        })
        .collect()
}

/// What the two instances and the one wrote, each sorted: `make()` one instance alone,
/// another idle beside it (watermarks only); at arrival `n / 3` half the key groups move to
/// the idle one; at `n / 2` a full checkpoint, and at `2 n / 3` the changes after it, from
/// which both are restored with `restore`; at `3 n / 4` a quarter of the key groups moves
/// back into what the first still holds; then the end of the input. After each move, both
/// take a full checkpoint that must hold only their own key groups (the runtime's next after
/// a move), and with `restore` both are restored from it at once. Without `restore`, the
/// instances never leave memory.
pub fn handed_back_and_forth(
    make: &dyn Fn() -> Box<dyn Operator>,
    arrivals: &[Arrival],
    restore: bool,
) -> (Vec<String>, Vec<String>) {
    let max = DEFAULT_MAX_KEY_GROUPS.get();
    let (all, low, high) = (
        KeyGroupRange::new(0, max),
        KeyGroupRange::new(0, max / 2),
        KeyGroupRange::new(max / 2, max),
    );
    let top = KeyGroupRange::new(max - max / 4, max);
    let n = arrivals.len();

    let mut expected = Formatted::new(", ");
    let mut one = vec![make()];
    for arrival in arrivals {
        feed(&mut one, &[vec![all]], arrival, &mut expected);
    }
    for op in &mut one {
        op.handle_watermark(Watermark::MAX, &mut expected)
            .expect("ends");
        op.on_end_of_input(&mut expected).expect("ends");
    }

    let mut got = Formatted::new(", ");
    let mut ops = vec![make(), make()];
    assert!(ops.iter().all(|op| op.moves_key_groups()));
    let mut owns = vec![vec![all], vec![]];
    let mut fulls = Vec::new();
    for (i, arrival) in arrivals.iter().enumerate() {
        if i + 1 == n / 3 {
            // A checkpoint just before: the giver's table holds entries of what moves.
            let _ = checkpoint(ops.first_mut().expect("two"), false);
        }
        if i == n / 3 {
            hand(&mut ops, 0, 1, high);
            owns = vec![vec![low], vec![high]];
            ops = checkpointed_after_move(make, ops, &owns, restore);
        }
        if i == n / 2 {
            fulls = ops.iter_mut().map(|op| checkpoint(op, false)).collect();
        }
        if i == 2 * n / 3 && restore {
            ops = ops
                .iter_mut()
                .zip(fulls.drain(..))
                .map(|(op, full)| {
                    let changes = checkpoint(op, true);
                    restored(make, vec![full, changes])
                })
                .collect();
        }
        if i == 3 * n / 4 {
            hand(&mut ops, 1, 0, top);
            owns = vec![
                vec![low, top],
                vec![KeyGroupRange::new(high.start, top.start)],
            ];
            ops = checkpointed_after_move(make, ops, &owns, restore);
        }
        feed(&mut ops, &owns, arrival, &mut got);
    }
    for op in &mut ops {
        op.handle_watermark(Watermark::MAX, &mut got).expect("ends");
        op.on_end_of_input(&mut got).expect("ends");
    }
    let (mut got, mut expected) = (got.rows, expected.rows);
    got.sort();
    expected.sort();
    (got, expected)
}

/// The figure `metric` of one `make()` fed the arrivals before the first move of
/// [`handed_back_and_forth`] (what the giver holds when it gives).
pub fn figure_at_the_first_move(
    make: &dyn Fn() -> Box<dyn Operator>,
    arrivals: &[Arrival],
    metric: &str,
) -> u64 {
    let all = KeyGroupRange::new(0, DEFAULT_MAX_KEY_GROUPS.get());
    let mut ops = vec![make()];
    let mut out = Formatted::new(", ");
    for arrival in arrivals.iter().take(arrivals.len() / 3) {
        feed(&mut ops, &[vec![all]], arrival, &mut out);
    }
    let figures = ops.first().expect("one").metrics();
    let figure = figures.iter().find(|(name, _)| *name == metric);
    figure.unwrap_or_else(|| panic!("no figure {metric}")).1
}
