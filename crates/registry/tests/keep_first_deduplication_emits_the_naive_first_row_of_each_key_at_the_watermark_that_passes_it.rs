//! Keep-first deduplication (`ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) … WHERE rn = 1`:
//! a `top_n` with `limit = 1`, `order` and `time` the event-time column) over seeded random
//! rows out of order and late, and random watermarks: after every watermark, the rows it
//! emitted equal a naive recomputation of what docs/sql.md and docs/flow-language.md say it
//! does. Per key, the earliest row come so far (of equal times the first to come) is held
//! until a watermark passes its time (is at or above it: no earlier row can come then); at
//! that watermark it is emitted, once, and every later row of the key is dropped and counted
//! (`duplicates_dropped`); a row behind the watermark still counts while its key has emitted
//! nothing. A batch emits nothing; the watermark goes on; the end of input emits every held
//! row. One partition or keyed; an operator checkpointed twice (a full snapshot, then the
//! changes since) and restored from both, heap and LSM.
//!
//! Keep-first is for an append-only input. Over an updating one (rows inserted and retracted
//! upstream), the same params give no deduplication but the updating top-1 of the live rows:
//! after every batch, its changelog folds to each key's earliest live row (of equal times the
//! first to come), and it holds back every watermark but the end of input.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use anduin_operator_api::{Bound, BuildContext, Collector, Operator, OperatorError};
use anduin_types::{change_column, is_updating, ChangeKind, Watermark};
use arrow::array::{Array, Int64Array, Int8Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use proptest::prelude::*;

/// (key, event time, id)
type Row = (i64, i64, i64);

/// One event upstream: a row added, a live row (at an index, modulo their number) taken out
/// (of an updating input), or the watermark moved on by some milliseconds.
#[derive(Debug, Clone)]
enum Step {
    Add(Row),
    Retract(usize),
    Watermark(i64),
}

/// What the operator has seen, in order.
#[derive(Debug, Clone, Copy)]
enum Seen {
    Row(Row),
    Watermark(i64),
}

fn schema(updating: bool) -> SchemaRef {
    let mut fields = vec![
        Field::new("k", DataType::Int64, true),
        Field::new("ts", DataType::Int64, true),
        Field::new("id", DataType::Int64, true),
    ];
    if updating {
        fields.push(change_column());
    }
    Arc::new(Schema::new(fields))
}

/// A `top_n` as the SQL planner makes one of `ORDER BY ts` (ascending) and `rn = 1`.
fn keep_first(keys: bool, updating: bool, lsm: bool) -> Box<dyn Operator> {
    let keys = if keys { r#"param keys = "k""# } else { "" };
    let backend = if lsm { "lsm" } else { "heap" };
    let src = format!(
        r#"operator name = "op", type = "top_n" {{
  input name = "s" {keys} param order = "ts" param limit = 1 param time = "ts"
  param state_backend = "{backend}"
  output name = "out" }}"#
    );
    let spec = anduin_spec::parse_flow(&src).unwrap_or_else(|e| panic!("{src}\n{e}"));
    let def = spec.operators.first().expect("one operator");
    let binding = anduin_relational::top_n::bind(def, &[("s", schema(updating))])
        .unwrap_or_else(|e| panic!("{src}\n{e}"));
    assert_eq!(
        is_updating(&binding.outputs[0]),
        updating,
        "keep-first is append-only, a top-1 of an updating input updating"
    );
    let Bound::Operator(factory) = binding.bound else {
        panic!("a top-N is an operator")
    };
    factory(&BuildContext::default()).expect("builds")
}

fn batch(rows: &[(Row, bool)], updating: bool) -> RecordBatch {
    let mut columns: Vec<Arc<dyn Array>> = vec![
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0 .0))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0 .1))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0 .2))),
    ];
    if updating {
        columns.push(Arc::new(Int8Array::from_iter_values(rows.iter().map(
            |(_, add)| {
                if *add {
                    ChangeKind::Insert.code()
                } else {
                    ChangeKind::Delete.code()
                }
            },
        ))));
    }
    RecordBatch::try_new(schema(updating), columns).expect("valid")
}

fn cells(r: &Row) -> Vec<String> {
    vec![r.0.to_string(), r.1.to_string(), r.2.to_string()]
}

/// What the operator emitted: the rows of an append-only output in order, and a changelog
/// folded into a table by partition key (the key's text; "" for one partition).
#[derive(Default)]
struct Out {
    keyed: bool,
    appended: Vec<Vec<String>>,
    folded: BTreeMap<String, Vec<String>>,
}

impl Collector for Out {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        let options = FormatOptions::default().with_null("NULL");
        let updating = is_updating(&b.schema());
        let width = b.num_columns() - usize::from(updating);
        let formatters: Vec<ArrayFormatter<'_>> = b
            .columns()
            .iter()
            .take(width)
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).expect("formats"))
            .collect();
        for i in 0..b.num_rows() {
            let cells: Vec<String> = formatters.iter().map(|f| f.value(i).to_string()).collect();
            if !updating {
                self.appended.push(cells);
                continue;
            }
            let kinds = b
                .column(width)
                .as_any()
                .downcast_ref::<Int8Array>()
                .expect("a change kind");
            let kind = ChangeKind::from_code(kinds.value(i)).expect("a valid kind");
            let key = if self.keyed {
                cells[0].clone()
            } else {
                String::new()
            };
            if kind.adds() {
                let old = self.folded.insert(key.clone(), cells);
                assert!(old.is_none(), "{kind} of key {key:?}, which has {old:?}");
            } else {
                let old = self.folded.remove(&key);
                assert_eq!(old.as_ref(), Some(&cells), "{kind} retracts the key's row");
            }
        }
        Ok(())
    }
}

/// Keep-first as documented, recomputed from everything seen: at each watermark, each key
/// that has emitted nothing emits the earliest of the rows it got before that watermark (of
/// equal times the first), if the watermark is at or above its time. The rows emitted by
/// the end of `seen`, sorted, and how many rows came to a key after it emitted.
fn naive(seen: &[Seen], keys: bool) -> (Vec<Vec<String>>, u64) {
    let part = |r: &Row| if keys { r.0 } else { 0 };
    // Per key, its row emitted and the index in `seen` of the watermark that emitted it.
    let mut emitted: BTreeMap<i64, (Row, usize)> = BTreeMap::new();
    for (j, s) in seen.iter().enumerate() {
        let Seen::Watermark(w) = s else { continue };
        let mut first: BTreeMap<i64, Row> = BTreeMap::new();
        for s in &seen[..j] {
            let Seen::Row(r) = s else { continue };
            if emitted.contains_key(&part(r)) {
                continue;
            }
            first
                .entry(part(r))
                .and_modify(|f| {
                    if r.1 < f.1 {
                        *f = *r;
                    }
                })
                .or_insert(*r);
        }
        for (k, r) in first {
            if r.1 <= *w {
                emitted.insert(k, (r, j));
            }
        }
    }
    let dropped = seen
        .iter()
        .enumerate()
        .filter(|(i, s)| match s {
            Seen::Row(r) => emitted.get(&part(r)).is_some_and(|(_, at)| i > at),
            Seen::Watermark(_) => false,
        })
        .count();
    let mut rows: Vec<Vec<String>> = emitted.values().map(|(r, _)| cells(r)).collect();
    rows.sort();
    (rows, dropped as u64)
}

/// Runs `batches` through a keep-first over an append-only input and checks what it emitted
/// against the naive keep-first after each watermark and at the end; with `restart_at`,
/// checkpoints (full at half way, changes there) and restores a fresh one, with its state in
/// the LSM backend if asked.
fn check(batches: &[Vec<Step>], keys: bool, restart_at: Option<(usize, bool)>) {
    let lsm = restart_at.is_some_and(|(_, lsm)| lsm);
    let make = || keep_first(keys, false, lsm);
    let mut op = make();
    let mut out = Out::default();
    let mut seen: Vec<Seen> = Vec::new();
    let mut w = i64::MIN;
    let mut full = None;
    let what = |when: &str| format!("{when}, keys {keys}, restart {restart_at:?}, {batches:?}");
    // A batch of the rows since the last watermark: it emits nothing.
    let feed =
        |op: &mut Box<dyn Operator>, rows: &mut Vec<Row>, out: &mut Out, seen: &mut Vec<Seen>| {
            let before = out.appended.len();
            let added: Vec<(Row, bool)> = rows.iter().map(|r| (*r, true)).collect();
            op.process_batch(0, batch(&added, false), out)
                .expect("processes");
            assert_eq!(
                out.appended.len(),
                before,
                "{}",
                what("a batch emits nothing")
            );
            seen.extend(rows.drain(..).map(Seen::Row));
        };
    let sorted = |out: &Out| {
        let mut rows = out.appended.clone();
        rows.sort();
        rows
    };
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
                Step::Retract(_) => {}
                Step::Watermark(by) => {
                    feed(&mut op, &mut rows, &mut out, &mut seen);
                    w = if w == i64::MIN { *by } else { w + by };
                    seen.push(Seen::Watermark(w));
                    let passed = op.handle_watermark(Watermark(w), &mut out).expect("fires");
                    assert_eq!(passed, Some(Watermark(w)), "the watermark goes on");
                    assert_eq!(
                        sorted(&out),
                        naive(&seen, keys).0,
                        "{}",
                        what(&format!("at watermark {w} of batch {i}"))
                    );
                }
            }
        }
        feed(&mut op, &mut rows, &mut out, &mut seen);
    }
    op.on_end_of_input(&mut out).expect("ends");
    seen.push(Seen::Watermark(i64::MAX));
    let (expected, dropped) = naive(&seen, keys);
    assert_eq!(sorted(&out), expected, "{}", what("at the end"));
    if restart_at.is_none() {
        let metrics: BTreeMap<_, _> = op.metrics().into_iter().collect();
        assert_eq!(
            metrics["duplicates_dropped"],
            dropped,
            "{}",
            what("rows after their key's first")
        );
    }
}

/// The naive top-1 of the `live` rows (in arrival order): per key, the earliest (of equal
/// times the first), as the folded changelog holds it.
fn naive_top_1(live: &[Row], keys: bool) -> BTreeMap<String, Vec<String>> {
    let mut first: BTreeMap<String, Row> = BTreeMap::new();
    for r in live {
        let key = if keys { r.0.to_string() } else { String::new() };
        first
            .entry(key)
            .and_modify(|f| {
                if r.1 < f.1 {
                    *f = *r;
                }
            })
            .or_insert(*r);
    }
    first.into_iter().map(|(k, r)| (k, cells(&r))).collect()
}

/// Runs `batches` through the same params over an updating input and checks the folded
/// changelog against the naive top-1 of the live rows after each batch, and that only the
/// end of input's watermark goes on.
fn check_updating(batches: &[Vec<Step>], keys: bool, restart_at: Option<(usize, bool)>) {
    let lsm = restart_at.is_some_and(|(_, lsm)| lsm);
    let make = || keep_first(keys, true, lsm);
    let mut op = make();
    let mut out = Out {
        keyed: keys,
        ..Out::default()
    };
    let mut live: Vec<Row> = Vec::new();
    let mut w = i64::MIN;
    let mut full = None;
    let what = |when: &str| format!("{when}, keys {keys}, restart {restart_at:?}, {batches:?}");
    for (i, steps) in batches.iter().enumerate() {
        if let Some((at, _)) = restart_at {
            if let Some(fresh) = common::restart_point(i, at, &mut op, &mut full, make) {
                op = fresh;
            }
        }
        let mut rows = Vec::new();
        for s in steps {
            match s {
                Step::Add(r) => {
                    live.push(*r);
                    rows.push((*r, true));
                }
                Step::Retract(at) if !live.is_empty() => {
                    // A retraction takes out the earliest equal row.
                    let r = live[at % live.len()];
                    let first = live.iter().position(|x| *x == r).expect("a live row");
                    live.remove(first);
                    rows.push((r, false));
                }
                Step::Retract(_) => {}
                Step::Watermark(by) => {
                    w = if w == i64::MIN { *by } else { w + by };
                    let passed = op.handle_watermark(Watermark(w), &mut out).expect("fires");
                    assert_eq!(passed, None, "{}", what("an updating top-1 holds it back"));
                }
            }
        }
        op.process_batch(0, batch(&rows, true), &mut out)
            .expect("processes");
        assert_eq!(
            out.folded,
            naive_top_1(&live, keys),
            "{}",
            what(&format!("after batch {i}"))
        );
    }
    op.on_end_of_input(&mut out).expect("ends");
    let passed = op.handle_watermark(Watermark::MAX, &mut out).expect("ends");
    assert_eq!(passed, Some(Watermark::MAX), "the end of input goes on");
    assert_eq!(
        out.folded,
        naive_top_1(&live, keys),
        "{}",
        what("at the end")
    );
}

fn steps() -> impl Strategy<Value = Vec<Vec<Step>>> {
    // Few keys and times, so that a key gets many rows and equal times are many; the
    // watermark moves by 0 to 4 ms, so that rows come both ahead of it and behind it.
    let row = (0i64..3, 0i64..24, 0i64..4);
    let step = prop_oneof![
        6 => row.prop_map(Step::Add),
        1 => any::<usize>().prop_map(Step::Retract),
        2 => (0i64..5).prop_map(Step::Watermark),
    ];
    prop::collection::vec(prop::collection::vec(step, 0..12), 1..10)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn keep_first_emits_the_naive_first_rows_at_every_watermark(
        bs in steps(),
        keys in any::<bool>(),
        restart in any::<prop::sample::Index>(),
        lsm in any::<bool>(),
    ) {
        check(&bs, keys, None);
        let at = restart.index(bs.len());
        check(&bs, keys, Some((at, lsm)));
    }

    #[test]
    fn over_an_updating_input_it_is_the_naive_top_1_of_the_live_rows_after_every_batch(
        bs in steps(),
        keys in any::<bool>(),
        restart in any::<prop::sample::Index>(),
        lsm in any::<bool>(),
    ) {
        check_updating(&bs, keys, None);
        let at = restart.index(bs.len());
        check_updating(&bs, keys, Some((at, lsm)));
    }
}

#[test]
fn a_late_row_of_a_key_that_emitted_nothing_is_its_first_and_a_row_after_it_is_dropped() {
    let steps = vec![
        vec![
            Step::Add((1, 10, 0)),
            Step::Watermark(8),
            // Behind the watermark, and key 2 has nothing: held, emitted at the next one.
            Step::Add((2, 3, 0)),
            Step::Add((1, 9, 1)),
            Step::Watermark(0),
        ],
        vec![
            Step::Add((1, 4, 2)),
            Step::Watermark(2),
            Step::Add((2, 1, 1)),
        ],
    ];
    check(&steps, true, None);
    check(&steps, true, Some((1, true)));
    let (rows, dropped) = naive(
        &[
            Seen::Row((1, 10, 0)),
            Seen::Watermark(8),
            Seen::Row((2, 3, 0)),
            Seen::Row((1, 9, 1)),
            Seen::Watermark(9),
        ],
        true,
    );
    assert_eq!(rows, [cells(&(1, 9, 1)), cells(&(2, 3, 0))]);
    assert_eq!(dropped, 0);
}
