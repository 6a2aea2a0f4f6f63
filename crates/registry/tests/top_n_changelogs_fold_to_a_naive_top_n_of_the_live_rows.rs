//! The `top_n` operator over seeded random rows, inserted and retracted upstream at random:
//! after every batch, its changelog folded into a table equals a naive top-N of the rows
//! live at that point — per partition key, the live rows stably sorted by the order (rows of
//! equal order values in arrival order; a retraction takes out the earliest equal row), the
//! first `limit` of them. Ranked (the rank a column, the table keyed by key and rank) and
//! unranked (the table a multiset of rows); ascending and descending; one partition or keyed;
//! append-only and updating input; keep-last deduplication (`limit = 1`, order by the time
//! descending: of equal times the latest row); and an operator checkpointed twice (a full
//! snapshot, then the changes since) and restored from both, heap and LSM. Keep-first
//! deduplication by event time emits each key's earliest row once the watermark passes it.

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

/// (key, value, id)
type Row = (i64, Option<i64>, i64);

/// One change upstream: a row added, or a live row (at an index, modulo their number) taken
/// out.
#[derive(Debug, Clone)]
enum Step {
    Add(Row),
    Retract(usize),
}

/// What is asked of the operator.
#[derive(Debug, Clone, Copy)]
struct Shape {
    updating: bool,
    keys: bool,
    descending: bool,
    limit: usize,
    ranked: bool,
    /// Keep-last deduplication: limit 1, order `v DESC`, `v` the event time.
    keep_last: bool,
}

fn schema(updating: bool) -> SchemaRef {
    let mut fields = vec![
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
        Field::new("id", DataType::Int64, true),
    ];
    if updating {
        fields.push(change_column());
    }
    Arc::new(Schema::new(fields))
}

fn top_n(shape: Shape, lsm: bool) -> Box<dyn Operator> {
    let mut params = String::new();
    if shape.keys {
        params.push_str(r#" param keys = "k""#);
    }
    if shape.keep_last {
        params.push_str(r#" param order = "v DESC" param limit = 1 param time = "v""#);
    } else {
        let dir = if shape.descending { "DESC" } else { "ASC" };
        params.push_str(&format!(
            r#" param order = "v {dir}" param limit = {}"#,
            shape.limit
        ));
    }
    if shape.ranked {
        params.push_str(r#" param rank_column = "rn""#);
    }
    let backend = if lsm { "lsm" } else { "heap" };
    let src = format!(
        r#"operator name = "op", type = "top_n" {{
  input name = "s" {params} param state_backend = "{backend}"
  output name = "out" }}"#
    );
    let spec = anduin_spec::parse_flow(&src).unwrap_or_else(|e| panic!("{src}\n{e}"));
    let def = spec.operators.first().expect("one operator");
    let binding = anduin_relational::top_n::bind(def, &[("s", schema(shape.updating))])
        .unwrap_or_else(|e| panic!("{src}\n{e}"));
    let Bound::Operator(factory) = binding.bound else {
        panic!("a top-N is an operator")
    };
    factory(&BuildContext::default()).expect("builds")
}

fn batch(rows: &[(Row, bool)], updating: bool) -> RecordBatch {
    let mut columns: Vec<Arc<dyn Array>> = vec![
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0 .0))),
        Arc::new(Int64Array::from(
            rows.iter().map(|r| r.0 .1).collect::<Vec<_>>(),
        )),
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

/// The folded changelog: rows by (key, rank) when ranked, else (key, row) with a count.
#[derive(Default)]
struct Folded {
    /// Whether ranks are per key (else one partition ranks every row).
    keyed: bool,
    ranked: BTreeMap<(String, String), Vec<String>>,
    rows: BTreeMap<Vec<String>, usize>,
    /// Rows of an append-only output (keep-first), in order.
    appended: Vec<Vec<String>>,
}

impl Collector for Folded {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        let options = FormatOptions::default().with_null("NULL");
        let updating = is_updating(&b.schema());
        let width = b.num_columns() - usize::from(updating);
        let ranked = b.schema().index_of("rn").is_ok();
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
            if ranked {
                let key = if self.keyed {
                    cells[0].clone()
                } else {
                    String::new()
                };
                let slot = (key, cells[3].clone());
                if kind.adds() {
                    assert!(
                        self.ranked.insert(slot.clone(), cells).is_none(),
                        "{kind} of {slot:?}, which has a row"
                    );
                } else {
                    let old = self.ranked.remove(&slot);
                    assert_eq!(old.as_ref(), Some(&cells), "{kind} retracts the slot's row");
                }
            } else if kind.adds() {
                *self.rows.entry(cells).or_default() += 1;
            } else {
                let n = self.rows.get_mut(&cells);
                let n = n.unwrap_or_else(|| panic!("{kind} of {cells:?}, which is not held"));
                *n -= 1;
                if *n == 0 {
                    self.rows.remove(&cells);
                }
            }
        }
        Ok(())
    }
}

fn text(v: Option<i64>) -> String {
    v.map_or("NULL".to_string(), |v| v.to_string())
}

/// The naive top-N of `live` (in arrival order), folded as [`Folded`] folds.
fn naive(live: &[Row], shape: Shape) -> Folded {
    let mut parts: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
    for r in live {
        parts
            .entry(if shape.keys { r.0 } else { 0 })
            .or_default()
            .push(*r);
    }
    let mut out = Folded {
        keyed: shape.keys,
        ..Folded::default()
    };
    for rows in parts.values_mut() {
        // Nulls are the smallest value: first ascending, last descending.
        let descending = shape.descending || shape.keep_last;
        let key = |r: &Row| r.1.map_or(i64::MIN, |v| v);
        if shape.keep_last {
            // Of equal times, the latest first.
            rows.reverse();
        }
        rows.sort_by(|a, b| {
            let o = key(a).cmp(&key(b)).then(a.1.is_some().cmp(&b.1.is_some()));
            if descending {
                o.reverse()
            } else {
                o
            }
        });
        let limit = if shape.keep_last { 1 } else { shape.limit };
        for (i, r) in rows.iter().take(limit).enumerate() {
            let mut cells = vec![r.0.to_string(), text(r.1), r.2.to_string()];
            if shape.ranked {
                cells.push((i + 1).to_string());
                let key = if shape.keys {
                    cells[0].clone()
                } else {
                    String::new()
                };
                out.ranked.insert((key, cells[3].clone()), cells);
            } else {
                *out.rows.entry(cells).or_default() += 1;
            }
        }
    }
    out
}

/// Runs `batches` of steps through a top-N and checks the folded output against the naive
/// one after each batch; with `restart_at`, checkpoints (full at half way, changes there)
/// and restores a fresh one, with its state in the LSM backend if asked.
fn check(batches: &[Vec<Step>], shape: Shape, restart_at: Option<(usize, bool)>) {
    let lsm = restart_at.is_some_and(|(_, lsm)| lsm);
    let make = || top_n(shape, lsm);
    let mut op = make();
    let mut folded = Folded {
        keyed: shape.keys,
        ..Folded::default()
    };
    let mut live: Vec<Row> = vec![];
    let mut full = None;
    for (i, steps) in batches.iter().enumerate() {
        if let Some((at, _)) = restart_at {
            if let Some(fresh) = common::restart_point(i, at, &mut op, &mut full, make) {
                op = fresh;
            }
        }
        let mut rows = vec![];
        for s in steps {
            match s {
                Step::Add(r) => {
                    live.push(*r);
                    rows.push((*r, true));
                }
                Step::Retract(at) if shape.updating && !live.is_empty() => {
                    let r = live[at % live.len()];
                    // The operator takes out the first equal row in rank order: the
                    // earliest, or for keep-last the latest.
                    let equal = |x: &Row| *x == r;
                    let i = if shape.keep_last {
                        live.iter().rposition(equal)
                    } else {
                        live.iter().position(equal)
                    };
                    live.remove(i.expect("a live row"));
                    rows.push((r, false));
                }
                Step::Retract(_) => {}
            }
        }
        op.process_batch(0, batch(&rows, shape.updating), &mut folded)
            .expect("processes");
        let expected = naive(&live, shape);
        assert_eq!(
            (&folded.ranked, &folded.rows),
            (&expected.ranked, &expected.rows),
            "after batch {i} of {shape:?} {batches:?}"
        );
        // Every live row of an updating input is held; of an append-only one, the first
        // `limit` of each partition.
        let held = if shape.updating {
            live.len()
        } else {
            let limit = if shape.keep_last { 1 } else { shape.limit };
            let mut per: BTreeMap<i64, usize> = BTreeMap::new();
            for r in &live {
                *per.entry(if shape.keys { r.0 } else { 0 }).or_default() += 1;
            }
            per.values().map(|n| (*n).min(limit)).sum()
        };
        let metrics: BTreeMap<_, _> = op.metrics().into_iter().collect();
        assert_eq!(
            metrics["rows_held"], held as u64,
            "after batch {i} of {shape:?} {batches:?}"
        );
    }
    op.on_end_of_input(&mut folded).expect("ends");
}

fn steps() -> impl Strategy<Value = Vec<Vec<Step>>> {
    // Few values, so that equal ones are many; ids tell equal values apart, or not.
    let row = (0i64..3, prop::option::weighted(0.85, 0i64..6), 0i64..4);
    let step = prop_oneof![
        3 => row.prop_map(Step::Add),
        2 => any::<usize>().prop_map(Step::Retract),
    ];
    prop::collection::vec(prop::collection::vec(step, 0..12), 1..10)
}

fn shapes() -> impl Strategy<Value = Shape> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        1usize..4,
        any::<bool>(),
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(updating, keys, descending, limit, ranked, keep_last)| Shape {
                updating,
                keys,
                descending,
                limit,
                ranked,
                keep_last,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn a_changelog_folds_to_the_naive_top_n_after_every_batch(
        bs in steps(),
        shape in shapes(),
        restart in any::<prop::sample::Index>(),
        lsm in any::<bool>(),
    ) {
        check(&bs, shape, None);
        let at = restart.index(bs.len());
        check(&bs, shape, Some((at, lsm)));
    }
}

#[test]
fn the_next_row_comes_in_when_a_first_one_is_retracted_and_goes_when_it_comes_back() {
    let shape = Shape {
        updating: true,
        keys: true,
        descending: true,
        limit: 2,
        ranked: true,
        keep_last: false,
    };
    let rows = vec![
        vec![
            Step::Add((1, Some(9), 0)),
            Step::Add((1, Some(7), 0)),
            Step::Add((1, Some(5), 0)),
        ],
        vec![Step::Retract(0)],
        vec![Step::Add((1, Some(9), 0))],
        vec![Step::Retract(0), Step::Retract(0), Step::Retract(0)],
    ];
    check(&rows, shape, None);
    check(
        &rows,
        Shape {
            ranked: false,
            ..shape
        },
        Some((2, true)),
    );
}

fn keep_first() -> Box<dyn Operator> {
    let src = r#"operator name = "op", type = "top_n" {
  input name = "s" param keys = "k" param order = "v" param limit = 1 param time = "v"
  output name = "out" }"#;
    let spec = anduin_spec::parse_flow(src).expect("parses");
    let def = spec.operators.first().expect("one operator");
    let binding = anduin_relational::top_n::bind(def, &[("s", schema(false))]).expect("binds");
    assert!(
        !is_updating(&binding.outputs[0]),
        "keep-first is append-only"
    );
    let Bound::Operator(factory) = binding.bound else {
        panic!("a top-N is an operator")
    };
    factory(&BuildContext::default()).expect("builds")
}

#[test]
fn keep_first_emits_each_key_s_earliest_row_once_the_watermark_passes_it_and_never_again() {
    let mut op = keep_first();
    let mut out = Folded::default();
    let add = |rows: &[Row]| batch(&rows.iter().map(|r| (*r, true)).collect::<Vec<_>>(), false);
    op.process_batch(
        0,
        add(&[(1, Some(20), 0), (2, Some(15), 0), (1, Some(12), 1)]),
        &mut out,
    )
    .expect("processes");
    assert!(out.appended.is_empty(), "nothing before the watermark");
    op.handle_watermark(Watermark(12), &mut out).expect("fires");
    assert_eq!(out.appended, [vec!["1", "12", "1"]]);
    // Earlier than key 2's held row, though behind the watermark: it is still the first.
    op.process_batch(0, add(&[(2, Some(11), 1), (1, Some(3), 2)]), &mut out)
        .expect("processes");
    let metrics: BTreeMap<_, _> = op.metrics().into_iter().collect();
    assert_eq!(
        metrics["duplicates_dropped"], 1,
        "key 1's row came after its first"
    );
    // Checkpointed and restored: what was emitted stays emitted, what waits still waits.
    let full = common::checkpoint(&mut op, false);
    let mut op = common::restored(keep_first, vec![full]);
    op.handle_watermark(Watermark(13), &mut out).expect("fires");
    op.on_end_of_input(&mut out).expect("ends");
    assert_eq!(out.appended, [vec!["1", "12", "1"], vec!["2", "11", "1"]]);
}
