//! Issue 22, point 9: `MIN` and `MAX` of floats (NaNs of any sign and payload, ±0, ±∞, random
//! numbers and nulls) give the minimum and maximum in SQL's total order (`-∞ < … < -0 < +0 <
//! … < +∞ < NaN`), bit for bit, whatever the order of the rows: accumulated in one batch, or
//! shuffled, split into batches accumulated apart and their states merged in any order (as a
//! sliding window merges its panes and a session merges sessions), and after a round trip of
//! the state through Arrow's row format (as a checkpoint stores it).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use anduin_expr::{compile_aggregates, CompiledAggregate, Scope, SqlFloat};
use arrow::array::{Array, ArrayRef, Float32Array, Float64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use arrow::row::{RowConverter, SortField};
use datafusion_expr::EmitTo;
use proptest::prelude::*;

/// Rows are of groups 0, 1 and 2.
const GROUPS: usize = 3;

/// A row: (group, value).
type Row = (usize, Option<f64>);

fn aggregates(t: DataType) -> (Vec<CompiledAggregate>, Arc<Schema>) {
    let schema = Arc::new(Schema::new(vec![Field::new("x", t, true)]));
    let aggs = compile_aggregates(
        "MIN(x) AS lo, MAX(x) AS hi, MIN(DISTINCT x) AS dlo",
        &Scope::new("s", Arc::clone(&schema)),
    )
    .expect("compiles");
    (aggs, schema)
}

/// One column of `values` as `t` (f64 or f32).
fn column(values: &[Option<f64>], t: &DataType) -> ArrayRef {
    match t {
        DataType::Float32 => Arc::new(Float32Array::from(
            values
                .iter()
                .map(|v| v.map(|f| f as f32))
                .collect::<Vec<_>>(),
        )),
        _ => Arc::new(Float64Array::from(values.to_vec())),
    }
}

/// The bits of each group's result (as f64 bits; `None` for null).
fn bits(a: &ArrayRef) -> Vec<Option<u64>> {
    let a = arrow::compute::cast(a, &DataType::Float64).expect("casts");
    let a = a.as_any().downcast_ref::<Float64Array>().expect("f64");
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| a.value(i).to_bits()))
        .collect()
}

/// Dense group ids (0, 1, … in order of first appearance, as a window numbers its keys:
/// every group has a row) for `groups`, and the group of each id.
fn dense(groups: impl Iterator<Item = usize>) -> (Vec<usize>, Vec<usize>) {
    let (mut ids, mut of_id) = (vec![], vec![]);
    for g in groups {
        let id = of_id.iter().position(|x| *x == g).unwrap_or_else(|| {
            of_id.push(g);
            of_id.len() - 1
        });
        ids.push(id);
    }
    (ids, of_id)
}

/// The result per group: rows (group, value) accumulated in one go, or shuffled by `order`,
/// cut at `cuts` into parts accumulated apart, their states sent through the row format and
/// merged last part first.
fn run(
    agg: &CompiledAggregate,
    schema: &Arc<Schema>,
    rows: &[Row],
    parts: Option<(&[usize], &[usize])>,
) -> BTreeMap<usize, Option<u64>> {
    let t = schema.field(0).data_type();
    let accumulate = |rows: &[Row]| {
        let mut acc = agg.groups_accumulator().expect("accumulator");
        let values: Vec<Option<f64>> = rows.iter().map(|r| r.1).collect();
        let batch =
            RecordBatch::try_new(Arc::clone(schema), vec![column(&values, t)]).expect("batch");
        let args = agg.arguments(&batch).expect("arguments");
        let (ids, of_id) = dense(rows.iter().map(|r| r.0));
        acc.update_batch(&args, &ids, None, of_id.len())
            .expect("updates");
        (acc, of_id)
    };
    let Some((order, cuts)) = parts else {
        let (mut acc, of_id) = accumulate(rows);
        let out = bits(&acc.evaluate(EmitTo::All).expect("evaluates"));
        return of_id.into_iter().zip(out).collect();
    };
    let shuffled: Vec<Row> = order.iter().map(|i| rows[*i]).collect();
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (rows.len() + 1)).collect();
    bounds.extend([0, rows.len()]);
    bounds.sort_unstable();
    bounds.dedup();
    let fields = agg.state_fields().expect("state fields");
    let converter = RowConverter::new(
        fields
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect(),
    )
    .expect("converter");
    let mut merged = agg.groups_accumulator().expect("accumulator");
    let mut merged_groups: Vec<usize> = vec![];
    for w in bounds.windows(2).rev() {
        let (mut part, of_id) = accumulate(&shuffled[w[0]..w[1]]);
        let state = part.state(EmitTo::All).expect("state");
        // What a checkpoint stores and reads back.
        let rows = converter.convert_columns(&state).expect("rows");
        let state = converter.convert_rows(rows.iter()).expect("columns");
        let ids: Vec<usize> = of_id
            .iter()
            .map(|g| {
                merged_groups
                    .iter()
                    .position(|x| x == g)
                    .unwrap_or_else(|| {
                        merged_groups.push(*g);
                        merged_groups.len() - 1
                    })
            })
            .collect();
        merged
            .merge_batch(&state, &ids, merged_groups.len())
            .expect("merges");
    }
    let out = bits(&merged.evaluate(EmitTo::All).expect("evaluates"));
    merged_groups.into_iter().zip(out).collect()
}

/// The minimum or maximum of each group in SQL's order, computed one pair at a time.
fn naive(rows: &[Row], t: &DataType, min: bool) -> BTreeMap<usize, Option<u64>> {
    let mut by_group: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for (g, v) in rows {
        let values = by_group.entry(*g).or_default();
        if let Some(v) = v {
            values.push(match t {
                DataType::Float32 => f64::from(*v as f32),
                _ => *v,
            });
        }
    }
    by_group
        .into_iter()
        .map(|(g, values)| {
            let best = values.into_iter().reduce(|a, b| {
                let keep_a = match a.sql_cmp(b) {
                    Ordering::Less => min,
                    Ordering::Greater => !min,
                    Ordering::Equal => true,
                };
                if keep_a {
                    a
                } else {
                    b
                }
            });
            (g, best.map(|v| v.canonical().to_bits()))
        })
        .collect()
}

fn value() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        Just(Some(f64::NAN)),
        Just(Some(-f64::NAN)),
        any::<u64>().prop_map(|payload| Some(f64::from_bits(
            0x7ff8_0000_0000_0000 | (payload & 0xf_ffff_ffff_ffff)
        ))),
        Just(Some(0.0)),
        Just(Some(-0.0)),
        Just(Some(f64::INFINITY)),
        Just(Some(f64::NEG_INFINITY)),
        Just(Some(f64::MAX)),
        Just(Some(f64::MIN)),
        Just(Some(1.5)),
        any::<f64>().prop_map(Some),
        Just(None),
    ]
}

/// Rows, a permutation of them, and where to cut the permuted rows into parts.
fn case() -> impl Strategy<Value = (Vec<Row>, Vec<usize>, Vec<usize>)> {
    prop::collection::vec((0..GROUPS, value()), 0..40).prop_flat_map(|rows| {
        let n = rows.len();
        (
            Just(rows),
            Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
            prop::collection::vec(any::<usize>(), 0..5),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn min_and_max_are_the_sql_order_s_extremes_in_any_order((rows, order, cuts) in case()) {
        for t in [DataType::Float64, DataType::Float32] {
            let (aggs, schema) = aggregates(t.clone());
            for (agg, min) in aggs.iter().zip([true, false, true]) {
                let expected = naive(&rows, &t, min);
                prop_assert_eq!(run(agg, &schema, &rows, None), expected.clone(), "{} {:?} in order", agg.name, t);
                prop_assert_eq!(run(agg, &schema, &rows, Some((&order, &cuts))), expected, "{} {:?} shuffled and merged", agg.name, t);
            }
        }
    }
}

#[test]
fn the_issue_s_examples() {
    let (aggs, schema) = aggregates(DataType::Float64);
    let one = |values: &[f64], agg: usize| {
        let rows: Vec<Row> = values.iter().map(|v| (0, Some(*v))).collect();
        run(&aggs[agg], &schema, &rows, None)[&0].map(f64::from_bits)
    };
    let min = one(&[1.5, 0.0, -0.0, f64::NAN, f64::INFINITY], 0).expect("a value");
    assert_eq!(min.to_bits(), (-0.0f64).to_bits(), "MIN is -0, below +0");
    assert!(one(&[1.5, f64::NAN], 1).expect("a value").is_nan());
    assert!(one(&[f64::NAN, 1.5], 1).expect("a value").is_nan());
    assert_eq!(one(&[1.5, f64::NAN], 0), Some(1.5));
    assert_eq!(one(&[f64::NAN, 1.5], 0), Some(1.5));
    assert_eq!(one(&[f64::NEG_INFINITY], 1), Some(f64::NEG_INFINITY));
    assert_eq!(one(&[f64::INFINITY], 0), Some(f64::INFINITY));
}
