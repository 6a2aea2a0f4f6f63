//! What the OVER window's property tests share: their rows, frames and aggregates, the
//! operator built over them (append-only or updating input), and the naive frame and its
//! aggregates' cells.

use std::sync::Arc;

use anduin_operator_api::{Bound, BuildContext, Operator};
use anduin_types::{change_column, is_updating};
use arrow::array::{Array, Float64Array, Int64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use proptest::prelude::*;

/// (key, time, value, id)
pub type Row = (i64, i64, Option<i64>, i64);

/// The frame: rows before (`None`: unbounded) or a time range before.
#[derive(Debug, Clone, Copy)]
pub enum Frame {
    Rows(Option<usize>),
    Range(Option<i64>),
}

/// The aggregates every test computes.
pub const AGGREGATES: &str = "COUNT(*) AS n, COUNT(v) AS nv, SUM(v) AS total, MIN(v) AS low, MAX(v) AS high, AVG(v) AS mean, SUM(v) FILTER (WHERE id > 1) AS some";

/// The input's schema (with the change column when `updating`).
pub fn schema(updating: bool) -> SchemaRef {
    let mut fields = vec![
        Field::new("k", DataType::Int64, true),
        Field::new("ts", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
        Field::new("id", DataType::Int64, true),
    ];
    if updating {
        fields.push(change_column());
    }
    Arc::new(Schema::new(fields))
}

/// An OVER window of [`AGGREGATES`] over `frame`, partitioned by `k` if `keys`, its state in
/// the LSM backend if `lsm`, over an input that is `updating` or append-only (its output is
/// updating then, as asserted).
pub fn over(keys: bool, frame: Frame, lsm: bool, updating: bool) -> Box<dyn Operator> {
    let frame = match frame {
        Frame::Rows(Some(n)) => format!("rows {n}"),
        Frame::Rows(None) => "rows unbounded".into(),
        Frame::Range(Some(x)) => format!("range {x}ms"),
        Frame::Range(None) => "range unbounded".into(),
    };
    let keys = if keys { r#"param keys = "k""# } else { "" };
    let backend = if lsm { "lsm" } else { "heap" };
    let src = format!(
        r#"operator name = "op", type = "over" {{
  input name = "s" {keys} param time = "ts" param frame = "{frame}"
  param aggregates = "{AGGREGATES}" param state_backend = "{backend}"
  output name = "out" }}"#
    );
    let spec = anduin_spec::parse_flow(&src).unwrap_or_else(|e| panic!("{src}\n{e}"));
    let def = spec.operators.first().expect("one operator");
    let binding = anduin_relational::over::bind(def, &[("s", schema(updating))])
        .unwrap_or_else(|e| panic!("{src}\n{e}"));
    assert_eq!(is_updating(&binding.outputs[0]), updating);
    let Bound::Operator(factory) = binding.bound else {
        panic!("an OVER window is an operator")
    };
    factory(&BuildContext::default()).expect("builds")
}

/// The four columns of `rows`.
pub fn columns<'a>(rows: impl Iterator<Item = &'a Row> + Clone) -> Vec<Arc<dyn Array>> {
    vec![
        Arc::new(Int64Array::from_iter_values(rows.clone().map(|r| r.0))),
        Arc::new(Int64Array::from_iter_values(rows.clone().map(|r| r.1))),
        Arc::new(Int64Array::from(
            rows.clone().map(|r| r.2).collect::<Vec<_>>(),
        )),
        Arc::new(Int64Array::from_iter_values(rows.map(|r| r.3))),
    ]
}

/// A cell as text.
pub fn cell(v: Option<impl std::fmt::Debug>) -> String {
    v.map_or("NULL".into(), |v| format!("{v:?}"))
}

/// The cells of row `i` of `columns` (integers and a double).
pub fn cells(columns: &[Arc<dyn Array>], i: usize) -> Vec<String> {
    columns
        .iter()
        .map(|c| match c.as_any().downcast_ref::<Int64Array>() {
            Some(a) => cell(a.is_valid(i).then(|| a.value(i))),
            None => {
                let a = c
                    .as_any()
                    .downcast_ref::<Float64Array>()
                    .expect("ints and a double");
                cell(a.is_valid(i).then(|| a.value(i)))
            }
        })
        .collect()
}

/// The rows of `frame` for row `r`, at `at` of its partition's `rows` in order.
pub fn framed(rows: &[Row], at: usize, r: &Row, frame: Frame) -> Vec<Row> {
    match frame {
        Frame::Rows(n) => rows[n.map_or(0, |n| at.saturating_sub(n))..=at].to_vec(),
        Frame::Range(d) => rows
            .iter()
            .filter(|x| x.1 <= r.1 && d.is_none_or(|d| x.1 >= r.1 - d))
            .copied()
            .collect(),
    }
}

/// Row `r` and its [`AGGREGATES`] over the rows `framed`, as the operator's output cells.
pub fn naive_cells(r: &Row, framed: &[Row]) -> Vec<String> {
    let vs: Vec<i64> = framed.iter().filter_map(|x| x.2).collect();
    let some: Vec<i64> = framed
        .iter()
        .filter(|x| x.3 > 1)
        .filter_map(|x| x.2)
        .collect();
    let sum = |v: &[i64]| (!v.is_empty()).then(|| v.iter().sum::<i64>());
    vec![
        cell(Some(r.0)),
        cell(Some(r.1)),
        cell(r.2),
        cell(Some(r.3)),
        cell(Some(framed.len() as i64)),
        cell(Some(vs.len() as i64)),
        cell(sum(&vs)),
        cell(vs.iter().min()),
        cell(vs.iter().max()),
        cell(sum(&vs).map(|s| s as f64 / vs.len() as f64)),
        cell(sum(&some)),
    ]
}

/// Frames of few rows and short ranges, bounded mostly.
pub fn frames() -> impl Strategy<Value = Frame> {
    prop_oneof![
        prop::option::weighted(0.8, 0usize..4).prop_map(Frame::Rows),
        prop::option::weighted(0.8, 0i64..4).prop_map(Frame::Range),
    ]
}

/// A batch of `columns` (the input's, `updating` or not).
pub fn batch(columns: Vec<Arc<dyn Array>>, updating: bool) -> RecordBatch {
    RecordBatch::try_new(schema(updating), columns).expect("valid")
}
