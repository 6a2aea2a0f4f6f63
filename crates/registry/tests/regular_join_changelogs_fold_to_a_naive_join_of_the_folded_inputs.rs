//! The `regular_join` operator (a join without a time bound) over seeded random rows of two
//! inputs, each append-only or updating (rows inserted and retracted upstream at random),
//! INNER, LEFT, RIGHT and FULL, with and without a residual condition: after every batch,
//! its output folded into a multiset (`+I`/`+U` add a row, `-U`/`-D` take out one that is
//! there) equals a naive join of the rows live on each side at that point. The same holds for
//! a join checkpointed twice (a full snapshot, then the changes since) and restored from both,
//! with its state in the heap or in the LSM backend. Some keys are null: they join nothing,
//! and an outer side keeps their rows padded with nulls. A join that keeps only the values
//! (`keep = "v, w"`, as the SQL planner asks when the keys are not read after it) gives the
//! naive join with its keys left out.

use std::collections::BTreeMap;
use std::sync::Arc;

use anduin_operator_api::{Bound, BuildContext, Collector, Operator, OperatorError};
use anduin_types::{change_column, is_updating, ChangeKind};
use arrow::array::{Array, Int64Array, Int8Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use proptest::prelude::*;

use crate::common;

/// (key, value)
type Row = (Option<i64>, i64);

/// A joined row: left (key, value) and right (key, value), each side possibly nulls.
type Joined = (Option<Row>, Option<Row>);

/// One batch from one side: rows added, or live rows (at an index, modulo their number)
/// taken out.
#[derive(Debug, Clone)]
struct Batch {
    side: usize,
    steps: Vec<Step>,
}

#[derive(Debug, Clone)]
enum Step {
    Add(Row),
    Retract(usize),
}

const HOWS: [&str; 4] = ["inner", "left", "right", "full"];

fn schema(value: &str, updating: bool) -> SchemaRef {
    let mut fields = vec![
        Field::new("k", DataType::Int64, true),
        Field::new(value, DataType::Int64, false),
    ];
    if updating {
        fields.push(change_column());
    }
    Arc::new(Schema::new(fields))
}

/// A regular join of `l (k, v)` and `r (k, w)`; `keep`: of the values only.
fn join(
    how: &str,
    condition: bool,
    updating: [bool; 2],
    lsm: bool,
    keep: bool,
) -> Box<dyn Operator> {
    let condition = if condition {
        r#"param condition = "v <= w + 2""#
    } else {
        ""
    };
    let condition = if keep {
        format!(r#"{condition} param keep = "v, w""#)
    } else {
        condition.to_string()
    };
    let backend = if lsm { "lsm" } else { "heap" };
    let src = format!(
        r#"operator name = "op", type = "regular_join" {{
  input name = "l" input name = "r" param on = "l.k = r.k" param how = "{how}" {condition}
  param state_backend = "{backend}"
  output name = "out" }}"#
    );
    let spec = anduin_spec::parse_flow(&src).unwrap_or_else(|e| panic!("{src}\n{e}"));
    let def = spec.operators.first().expect("one operator");
    let inputs = [
        ("l", schema("v", updating[0])),
        ("r", schema("w", updating[1])),
    ];
    let binding = anduin_relational::regular_join::bind(def, &inputs)
        .unwrap_or_else(|e| panic!("{src}\n{e}"));
    let outer = how != "inner";
    assert_eq!(
        is_updating(&binding.outputs[0]),
        outer || updating.contains(&true),
        "{how} of {updating:?}: updating output"
    );
    let Bound::Operator(factory) = binding.bound else {
        panic!("a join is an operator")
    };
    factory(&BuildContext::default()).expect("builds")
}

fn batch(rows: &[(Row, bool)], value: &str, updating: bool) -> RecordBatch {
    let mut columns: Vec<Arc<dyn Array>> = vec![
        Arc::new(Int64Array::from(
            rows.iter().map(|r| r.0 .0).collect::<Vec<_>>(),
        )),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0 .1))),
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
    RecordBatch::try_new(schema(value, updating), columns).expect("valid")
}

/// The folded output: each joined row and how many times it is there.
#[derive(Default)]
struct Folded {
    rows: BTreeMap<Joined, i64>,
}

impl Collector for Folded {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        // By name: a join that keeps the values only has no key columns.
        let int = |name: &str| -> Vec<Option<i64>> {
            let Ok(i) = b.schema().index_of(name) else {
                return vec![None; b.num_rows()];
            };
            let a = b
                .column(i)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("int");
            a.iter().collect()
        };
        let (lk, v, rk, w) = (int("k"), int("v"), int("r_k"), int("w"));
        let kinds: Vec<ChangeKind> = if is_updating(&b.schema()) {
            let a = b
                .column(b.num_columns() - 1)
                .as_any()
                .downcast_ref::<Int8Array>()
                .expect("a change kind");
            a.iter()
                .map(|c| c.and_then(ChangeKind::from_code).expect("a valid kind"))
                .collect()
        } else {
            vec![ChangeKind::Insert; b.num_rows()]
        };
        for (i, kind) in kinds.into_iter().enumerate() {
            let row = (v[i].map(|v| (lk[i], v)), w[i].map(|w| (rk[i], w)));
            let n = self.rows.entry(row).or_default();
            *n += if kind.adds() { 1 } else { -1 };
            assert!(*n >= 0, "{kind} of {row:?}, which is not there");
            if *n == 0 {
                self.rows.remove(&row);
            }
        }
        Ok(())
    }
}

/// The naive join of the live rows.
fn naive(live: &[Vec<Row>; 2], how: &str, condition: bool) -> BTreeMap<Joined, i64> {
    let joins = |l: &Row, r: &Row| l.0.is_some() && l.0 == r.0 && (!condition || l.1 <= r.1 + 2);
    let mut out: BTreeMap<Joined, i64> = BTreeMap::new();
    for l in &live[0] {
        for r in &live[1] {
            if joins(l, r) {
                *out.entry((Some(*l), Some(*r))).or_default() += 1;
            }
        }
    }
    if how == "left" || how == "full" {
        for l in &live[0] {
            if !live[1].iter().any(|r| joins(l, r)) {
                *out.entry((Some(*l), None)).or_default() += 1;
            }
        }
    }
    if how == "right" || how == "full" {
        for r in &live[1] {
            if !live[0].iter().any(|l| joins(l, r)) {
                *out.entry((None, Some(*r))).or_default() += 1;
            }
        }
    }
    out
}

/// Runs `batches` through a join and checks the folded output after each; with
/// `restart_at`, checkpoints (full at half way, changes there) and restores a fresh one.
fn check(
    batches: &[Batch],
    how: &str,
    condition: bool,
    updating: [bool; 2],
    restart_at: Option<(usize, bool)>,
) {
    check_keeping(batches, (how, condition, updating), restart_at, false);
}

/// [`check`], the join keeping the values only when `keep`.
fn check_keeping(
    batches: &[Batch],
    (how, condition, updating): (&str, bool, [bool; 2]),
    restart_at: Option<(usize, bool)>,
    keep: bool,
) {
    let lsm = restart_at.is_some_and(|(_, lsm)| lsm);
    let make = || join(how, condition, updating, lsm, keep);
    let mut op = make();
    let mut folded = Folded::default();
    let mut live: [Vec<Row>; 2] = [vec![], vec![]];
    let mut full = None;
    for (i, b) in batches.iter().enumerate() {
        if let Some((at, _)) = restart_at {
            if let Some(fresh) = common::restart_point(i, at, &mut op, &mut full, make) {
                op = fresh;
            }
        }
        let side = b.side;
        let mut rows = vec![];
        for s in &b.steps {
            match s {
                Step::Add(r) => {
                    live[side].push(*r);
                    rows.push((*r, true));
                }
                Step::Retract(at) if updating[side] && !live[side].is_empty() => {
                    let n = live[side].len();
                    let r = live[side].remove(at % n);
                    rows.push((r, false));
                }
                Step::Retract(_) => {}
            }
        }
        let value = if side == 0 { "v" } else { "w" };
        op.process_batch(side, batch(&rows, value, updating[side]), &mut folded)
            .expect("processes");
        let mut want = naive(&live, how, condition);
        if keep {
            let mut projected: BTreeMap<Joined, i64> = BTreeMap::new();
            for ((l, r), n) in want {
                let key_out = |s: Option<Row>| s.map(|(_, v)| (None, v));
                *projected.entry((key_out(l), key_out(r))).or_default() += n;
            }
            want = projected;
        }
        assert_eq!(
            folded.rows, want,
            "{how}, condition {condition}, updating {updating:?}, keep {keep}: after batch {i} of {batches:?}"
        );
    }
    op.on_end_of_input(&mut folded).expect("ends");
}

fn batches() -> impl Strategy<Value = Vec<Batch>> {
    let row = (prop::option::weighted(0.9, 0i64..4), -3i64..6);
    let step = prop_oneof![
        3 => row.prop_map(Step::Add),
        2 => any::<usize>().prop_map(Step::Retract),
    ];
    let batch = (0usize..2, prop::collection::vec(step, 0..8))
        .prop_map(|(side, steps)| Batch { side, steps });
    prop::collection::vec(batch, 1..14)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn a_changelog_folds_to_the_naive_join_after_every_batch(
        bs in batches(),
        how in 0usize..4,
        condition in any::<bool>(),
        updating in any::<[bool; 2]>(),
        restart in any::<prop::sample::Index>(),
        lsm in any::<bool>(),
    ) {
        let how = HOWS[how];
        check(&bs, how, condition, updating, None);
        let at = restart.index(bs.len());
        check(&bs, how, condition, updating, Some((at, lsm)));
        check_keeping(&bs, (how, condition, updating), Some((at, lsm)), true);
    }
}

#[test]
fn a_left_row_alone_is_retracted_when_its_partner_comes_and_comes_back_when_it_goes() {
    let add = |k, v| Step::Add((Some(k), v));
    let bs = vec![
        Batch {
            side: 0,
            steps: vec![add(1, 10), add(1, 10), add(2, 20)],
        },
        Batch {
            side: 1,
            steps: vec![add(1, 5), add(1, 6)],
        },
        Batch {
            side: 1,
            steps: vec![Step::Retract(0), Step::Retract(0)],
        },
    ];
    for how in HOWS {
        check(&bs, how, false, [false, true], None);
        check(&bs, how, false, [true, true], Some((2, true)));
    }
}

#[test]
fn every_join_kind_over_updating_inputs_is_covered_by_hand() {
    // Both sides updating, null keys, a condition that only some pairs pass.
    let bs = vec![
        Batch {
            side: 0,
            steps: vec![
                Step::Add((None, 1)),
                Step::Add((Some(0), 1)),
                Step::Add((Some(0), 5)),
            ],
        },
        Batch {
            side: 1,
            steps: vec![Step::Add((Some(0), 0)), Step::Add((None, 9))],
        },
        Batch {
            side: 0,
            steps: vec![Step::Retract(1), Step::Retract(0)],
        },
        Batch {
            side: 1,
            steps: vec![Step::Retract(0)],
        },
    ];
    for how in HOWS {
        check(&bs, how, true, [true, true], None);
        check(&bs, how, true, [true, true], Some((3, false)));
    }
}

#[test]
fn a_condition_that_fails_on_a_pair_stops_the_query_naming_it() {
    let src = r#"operator name = "op", type = "regular_join" {
  input name = "l" input name = "r" param on = "l.k = r.k" param condition = "100 / (w - v) > 0"
  output name = "out" }"#;
    let spec = anduin_spec::parse_flow(src).expect("parses");
    let def = spec.operators.first().expect("one operator");
    let inputs = [("l", schema("v", false)), ("r", schema("w", false))];
    let binding = anduin_relational::regular_join::bind(def, &inputs).expect("binds");
    let Bound::Operator(factory) = binding.bound else {
        panic!("a join is an operator")
    };
    let mut op = factory(&BuildContext::default()).expect("builds");
    let mut folded = Folded::default();
    op.process_batch(0, batch(&[((Some(1), 5), true)], "v", false), &mut folded)
        .expect("no pair yet");
    let e = op
        .process_batch(1, batch(&[((Some(1), 5), true)], "w", false), &mut folded)
        .expect_err("5 - 5 divides by zero")
        .to_string();
    assert!(
        e.contains("the join condition `100 / (w - v) > 0` failed") && e.contains("Divide by zero"),
        "{e}"
    );
}

#[test]
fn a_volatile_condition_is_refused() {
    let src = r#"operator name = "op", type = "regular_join" {
  input name = "l" input name = "r" param on = "l.k = r.k" param condition = "v < random() * 10"
  output name = "out" }"#;
    let spec = anduin_spec::parse_flow(src).expect("parses");
    let def = spec.operators.first().expect("one operator");
    let inputs = [("l", schema("v", false)), ("r", schema("w", false))];
    let Err(e) = anduin_relational::regular_join::bind(def, &inputs) else {
        panic!("a volatile condition binds")
    };
    assert!(
        e.to_string()
            .contains("`random()` gives another value at each call"),
        "{e}"
    );
}

/// A join whose left side carries a 1 KB string nobody reads holds, with `keep`, only the
/// values read: its state (the operator's `state_bytes`) is a small part of what it holds
/// keeping every column, and it writes the same pairs.
#[test]
fn a_regular_join_over_a_wide_input_holds_only_the_columns_read() {
    let wide: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, false),
        Field::new("pad", DataType::Utf8, false),
    ]));
    let build = |keep: &str| {
        let src = format!(
            r#"operator name = "op", type = "regular_join" {{
  input name = "l" input name = "r" param on = "l.k = r.k" {keep}
  output name = "out" }}"#
        );
        let spec = anduin_spec::parse_flow(&src).unwrap_or_else(|e| panic!("{src}\n{e}"));
        let def = spec.operators.first().expect("one operator");
        let inputs = [("l", Arc::clone(&wide)), ("r", schema("w", false))];
        let binding = anduin_relational::regular_join::bind(def, &inputs)
            .unwrap_or_else(|e| panic!("{src}\n{e}"));
        let Bound::Operator(factory) = binding.bound else {
            panic!("a join is an operator")
        };
        factory(&BuildContext::default()).expect("builds")
    };
    let rows = 200i64;
    let left = RecordBatch::try_new(
        Arc::clone(&wide),
        vec![
            Arc::new(Int64Array::from_iter_values(0..rows)),
            Arc::new(Int64Array::from_iter_values((0..rows).map(|i| i * 10))),
            Arc::new(arrow::array::StringArray::from_iter_values(
                (0..rows).map(|i| format!("{i:>1024}")),
            )),
        ],
    )
    .expect("valid");
    let right = batch(
        &(0..rows).map(|i| ((Some(i), i), true)).collect::<Vec<_>>(),
        "w",
        false,
    );
    let state = |op: &dyn Operator| {
        op.metrics()
            .into_iter()
            .find(|(n, _)| *n == "state_bytes")
            .map(|(_, b)| b)
            .expect("a state_bytes metric")
    };
    let mut all = build("");
    let mut read = build(r#"param keep = "v, w""#);
    let (mut wide_out, mut narrow_out) = (Folded::default(), Folded::default());
    for (op, out) in [(&mut all, &mut wide_out), (&mut read, &mut narrow_out)] {
        op.process_batch(0, left.clone(), &mut Collected(out))
            .expect("processes");
        op.process_batch(1, right.clone(), &mut Collected(out))
            .expect("processes");
    }
    let (everything, kept) = (state(all.as_ref()), state(read.as_ref()));
    assert!(
        everything > (rows as u64) * 1024 && kept * 8 < everything,
        "kept {kept} bytes against {everything}"
    );
    // The same pairs, keys left out.
    let projected: BTreeMap<Joined, i64> = wide_out
        .rows
        .iter()
        .map(|((l, r), n)| ((l.map(|(_, v)| (None, v)), r.map(|(_, w)| (None, w))), *n))
        .collect();
    assert_eq!(narrow_out.rows, projected);
    assert_eq!(projected.len(), rows as usize);
}

/// Folds only the `k`, `v`, `r_k`, `w` columns of a join's output (a wide one too).
struct Collected<'a>(&'a mut Folded);

impl Collector for Collected<'_> {
    fn collect(&mut self, port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        let keep: Vec<usize> = ["k", "v", "r_k", "w"]
            .iter()
            .filter_map(|n| b.schema().index_of(n).ok())
            .collect();
        let b = b
            .project(&keep)
            .map_err(|e| OperatorError::internal("op", e.to_string()))?;
        self.0.collect(port, b)
    }
}
