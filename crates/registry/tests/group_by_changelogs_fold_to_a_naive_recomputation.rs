//! The `aggregate` operator (a GROUP BY without a window) over seeded random rows, inserted
//! and retracted upstream at random: after every batch, its changelog folded into a table
//! (a `+I` or `+U` adds a row of a key that has none, a `-U` or `-D` removes exactly the row
//! the key has) equals a naive recomputation from the rows live at that point — COUNT(*),
//! COUNT(v), SUM, AVG, MIN, MAX, COUNT(DISTINCT), a FILTER and, in one variant, a HAVING. The
//! same holds for an append-only input, for an aggregate checkpointed twice (a full snapshot,
//! then the changes since) and restored from both with its state in the heap and in the LSM
//! backend, and for one group of every row (no keys).

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use anduin_operator_api::{Bound, BuildContext, Collector, Operator, OperatorError};
use anduin_types::{change_column, ChangeKind};
use arrow::array::{Array, Int64Array, Int8Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use proptest::prelude::*;

/// (key, value)
type Row = (i64, Option<i64>);

/// One change upstream: a row added, or the live row at an index (modulo their number) taken
/// out.
#[derive(Debug, Clone)]
enum Step {
    Add(Row),
    Retract(usize),
}

const AGGREGATES: &str = "COUNT(*) AS n, COUNT(v) AS nv, SUM(v) AS total, AVG(v) AS mean, MIN(v) AS lo, MAX(v) AS hi, COUNT(DISTINCT v) AS d, SUM(v) FILTER (WHERE v > 0) AS pos";

fn schema(updating: bool) -> SchemaRef {
    let mut fields = vec![
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
    ];
    if updating {
        fields.push(change_column());
    }
    Arc::new(Schema::new(fields))
}

/// An aggregate over `(k, v)` (with a change kind if `updating`).
fn aggregate(updating: bool, keys: bool, having: bool, lsm: bool) -> Box<dyn Operator> {
    aggregate_having(
        updating,
        keys,
        if having {
            r#"param having = "n > 1 AND (lo IS NULL OR lo < 30)""#
        } else {
            ""
        },
        lsm,
    )
}

/// An aggregate with `having` (a `param having = …` or nothing).
fn aggregate_having(updating: bool, keys: bool, having: &str, lsm: bool) -> Box<dyn Operator> {
    let keys = if keys { r#"param keys = "k""# } else { "" };
    let backend = if lsm { "lsm" } else { "heap" };
    let src = format!(
        r#"operator name = "op", type = "aggregate" {{
  input name = "s" {keys} {having} param state_backend = "{backend}"
  param aggregates = "{AGGREGATES}"
  output name = "out" }}"#
    );
    let spec = anduin_spec::parse_flow(&src).unwrap_or_else(|e| panic!("{src}\n{e}"));
    let def = spec.operators.first().expect("one operator");
    let binding = anduin_relational::group::bind(def, &[("s", schema(updating))])
        .unwrap_or_else(|e| panic!("{src}\n{e}"));
    let Bound::Operator(factory) = binding.bound else {
        panic!("an aggregate is an operator")
    };
    factory(&BuildContext::default()).expect("builds")
}

fn batch(rows: &[(Row, bool)], updating: bool) -> RecordBatch {
    let mut columns: Vec<Arc<dyn Array>> = vec![
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0 .0))),
        Arc::new(Int64Array::from(
            rows.iter().map(|r| r.0 .1).collect::<Vec<_>>(),
        )),
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

/// The folded changelog: the current row of each key, as its cells' text.
#[derive(Default)]
struct Folded {
    table: BTreeMap<String, Vec<String>>,
    /// Whether the last change was a `-U` (a `+U` must follow, for the same key).
    pending_before: Option<String>,
}

impl Collector for Folded {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        let options = FormatOptions::default().with_null("NULL");
        let last = b.num_columns() - 1;
        let kinds = b
            .column(last)
            .as_any()
            .downcast_ref::<Int8Array>()
            .expect("a change kind");
        let formatters: Vec<ArrayFormatter<'_>> = b
            .columns()
            .iter()
            .take(last)
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).expect("formats"))
            .collect();
        for i in 0..b.num_rows() {
            let cells: Vec<String> = formatters.iter().map(|f| f.value(i).to_string()).collect();
            // The key: the first cell when keyed; "" for one group (its first cell is `n`).
            let key = if b.schema().field(0).name() == "k" {
                cells[0].clone()
            } else {
                String::new()
            };
            let kind = ChangeKind::from_code(kinds.value(i)).expect("a valid kind");
            if let Some(k) = self.pending_before.take() {
                assert_eq!(kind, ChangeKind::UpdateAfter, "a -U is followed by its +U");
                assert_eq!(k, key, "a -U and its +U are of one key");
            }
            match kind {
                ChangeKind::Insert | ChangeKind::UpdateAfter => {
                    assert!(
                        self.table.insert(key.clone(), cells).is_none(),
                        "{kind} of key {key}, which has a row"
                    );
                }
                ChangeKind::UpdateBefore | ChangeKind::Delete => {
                    let old = self.table.remove(&key);
                    assert_eq!(old.as_ref(), Some(&cells), "{kind} retracts the key's row");
                    if kind == ChangeKind::UpdateBefore {
                        self.pending_before = Some(key);
                    }
                }
            }
        }
        assert!(
            self.pending_before.is_none(),
            "a batch ends with no -U open"
        );
        Ok(())
    }
}

fn text(v: Option<i64>) -> String {
    v.map_or("NULL".to_string(), |v| v.to_string())
}

/// The naive result over the live rows: the table the changelog must fold to.
fn naive(live: &[Row], keys: bool, having: bool) -> BTreeMap<String, Vec<String>> {
    let mut groups: BTreeMap<i64, Vec<Option<i64>>> = BTreeMap::new();
    for (k, v) in live {
        groups
            .entry(if keys { *k } else { 0 })
            .or_default()
            .push(*v);
    }
    let mut out = BTreeMap::new();
    for (k, vs) in groups {
        let present: Vec<i64> = vs.iter().flatten().copied().collect();
        let n = vs.len() as i64;
        let sum = (!present.is_empty()).then(|| present.iter().sum::<i64>());
        let mean = sum.map(|s| s as f64 / present.len() as f64);
        let lo = present.iter().min().copied();
        let hi = present.iter().max().copied();
        let distinct = present
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        let positive: Vec<i64> = present.iter().filter(|v| **v > 0).copied().collect();
        let pos = (!positive.is_empty()).then(|| positive.iter().sum::<i64>());
        if having && !(n > 1 && lo.is_none_or(|l| l < 30)) {
            continue;
        }
        let mean_text = {
            let a = arrow::array::Float64Array::from(vec![mean]);
            let options = FormatOptions::default().with_null("NULL");
            let text = ArrayFormatter::try_new(&a, &options)
                .expect("formats")
                .value(0)
                .to_string();
            text
        };
        let mut cells = vec![];
        if keys {
            cells.push(k.to_string());
        }
        cells.extend([
            n.to_string(),
            present.len().to_string(),
            text(sum),
            mean_text,
            text(lo),
            text(hi),
            distinct.to_string(),
            text(pos),
        ]);
        out.insert(if keys { k.to_string() } else { String::new() }, cells);
    }
    out
}

/// Runs `batches` of steps through an aggregate and checks the folded output against the
/// naive result after each batch; with `restart_at`, checkpoints (full at half way, changes
/// there) and restores a fresh one, with its state in the LSM backend if asked.
fn check(
    batches: &[Vec<Step>],
    updating: bool,
    keys: bool,
    having: bool,
    restart_at: Option<(usize, bool)>,
) {
    let lsm = restart_at.is_some_and(|(_, lsm)| lsm);
    let make = || aggregate(updating, keys, having, lsm);
    let mut op = make();
    let mut folded = Folded::default();
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
                Step::Retract(at) if updating && !live.is_empty() => {
                    let r = live.remove(at % live.len());
                    rows.push((r, false));
                }
                Step::Retract(_) => {}
            }
        }
        op.process_batch(0, batch(&rows, updating), &mut folded)
            .expect("processes");
        assert_eq!(
            folded.table,
            naive(&live, keys, having),
            "after batch {i} of {batches:?}"
        );
    }
    op.on_end_of_input(&mut folded).expect("ends");
}

fn steps() -> impl Strategy<Value = Vec<Vec<Step>>> {
    let row = (0i64..4, prop::option::weighted(0.85, -40i64..60));
    let step = prop_oneof![
        3 => row.prop_map(Step::Add),
        2 => any::<usize>().prop_map(Step::Retract),
    ];
    prop::collection::vec(prop::collection::vec(step, 0..12), 1..10)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn a_changelog_folds_to_the_naive_result_after_every_batch(
        bs in steps(),
        updating in any::<bool>(),
        keys in any::<bool>(),
        having in any::<bool>(),
        restart in any::<prop::sample::Index>(),
        lsm in any::<bool>(),
    ) {
        check(&bs, updating, keys, having, None);
        let at = restart.index(bs.len());
        check(&bs, updating, keys, having, Some((at, lsm)));
    }
}

#[test]
fn a_group_whose_last_row_is_retracted_is_deleted_and_a_value_held_twice_stays_the_max() {
    let rows = vec![
        vec![
            Step::Add((1, Some(9))),
            Step::Add((1, Some(9))),
            Step::Add((1, Some(3))),
        ],
        vec![Step::Retract(0)],
        vec![Step::Retract(0)],
        vec![Step::Retract(0)],
    ];
    check(&rows, true, true, false, None);
    check(&rows, true, true, true, Some((2, true)));
}

#[test]
fn having_is_evaluated_only_on_the_results_of_groups_that_hold_rows() {
    // `100 / n` fails on an empty group's result (n = 0), which is never in the output.
    let mut op = aggregate_having(true, true, r#"param having = "100 / n >= 50""#, false);
    let mut folded = Folded::default();
    let rows = [
        ((1, Some(5)), true),
        ((1, Some(6)), true),
        ((2, Some(7)), true),
    ];
    op.process_batch(0, batch(&rows, true), &mut folded)
        .expect("processes");
    let keys: Vec<&String> = folded.table.keys().collect();
    assert_eq!(keys, ["1", "2"]);
    op.process_batch(
        0,
        batch(&[((1, Some(5)), false), ((1, Some(6)), false)], true),
        &mut folded,
    )
    .expect("a group emptied is deleted, not evaluated");
    let keys: Vec<&String> = folded.table.keys().collect();
    assert_eq!(keys, ["2"]);
}

#[test]
fn a_having_that_fails_on_a_result_names_its_group_and_condition() {
    let mut op = aggregate_having(false, true, r#"param having = "100 / (n - 2) > 0""#, false);
    let mut folded = Folded::default();
    op.process_batch(0, batch(&[((7, Some(1)), true)], false), &mut folded)
        .expect("n = 1 passes");
    let e = op
        .process_batch(
            0,
            batch(&[((3, Some(1)), true), ((7, Some(2)), true)], false),
            &mut folded,
        )
        .expect_err("n = 2 divides by zero")
        .to_string();
    assert!(
        e.contains("HAVING condition `100 / (n - 2) > 0` failed on the result for key k = 7")
            && e.contains("Divide by zero"),
        "{e}"
    );
}

#[test]
fn an_integer_avg_loses_no_small_value_beside_a_large_one_taken_out() {
    let mut op = aggregate_having(true, true, "", false);
    let mut folded = Folded::default();
    let big = 1_i64 << 60;
    op.process_batch(
        0,
        batch(&[((1, Some(1)), true), ((1, Some(big)), true)], true),
        &mut folded,
    )
    .expect("processes");
    op.process_batch(0, batch(&[((1, Some(big)), false)], true), &mut folded)
        .expect("processes");
    let row = &folded.table["1"];
    assert_eq!((row[3].as_str(), row[4].as_str()), ("1", "1.0"), "{row:?}");
}
