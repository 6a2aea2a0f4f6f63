//! The window top-N (`top_n` with `window_end`, issue 17) over seeded random rows of windows,
//! watermarks between batches: at each watermark it emits exactly the windows that end by
//! it and were not emitted before, each window's rows (per other key) those of a naive top-N
//! of the rows that came for it in time — stably sorted by the order (ties by arrival, nulls
//! the smallest value), the first `limit`, ranked from 1 — and drops a row of a window that
//! ended (counted as late). Checkpointed twice (a full snapshot, then the changes) and
//! restored from both, heap and LSM, it emits the same. Of an updating input the param does
//! not make a window top-N: the output stays updating.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use anduin_operator_api::{Bound, BuildContext, Collector, Operator, OperatorError};
use anduin_types::{change_column, is_updating, Watermark};
use arrow::array::{Array, Int64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use proptest::prelude::*;

/// (window end, key, value, id); windows are 10 long: the start is the end less 10.
type Row = (i64, i64, Option<i64>, i64);

#[derive(Debug, Clone, Copy)]
struct Shape {
    /// Partitioned by the key too, not only the window.
    keyed: bool,
    descending: bool,
    limit: usize,
}

fn schema(updating: bool) -> SchemaRef {
    let mut fields = vec![
        Field::new("ws", DataType::Int64, true),
        Field::new("we", DataType::Int64, true),
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
        Field::new("id", DataType::Int64, true),
    ];
    if updating {
        fields.push(change_column());
    }
    Arc::new(Schema::new(fields))
}

fn bind(shape: Shape, lsm: bool, updating: bool) -> Result<(Box<dyn Operator>, SchemaRef), String> {
    let keys = if shape.keyed { "ws, we, k" } else { "ws, we" };
    let dir = if shape.descending { "DESC" } else { "ASC" };
    let backend = if lsm { "lsm" } else { "heap" };
    let src = format!(
        r#"operator name = "op", type = "top_n" {{
  input name = "s" param keys = "{keys}" param window_end = "we" param order = "v {dir}"
  param limit = {} param rank_column = "rn" param state_backend = "{backend}"
  output name = "out" }}"#,
        shape.limit
    );
    let spec = anduin_spec::parse_flow(&src).map_err(|e| format!("{src}\n{e}"))?;
    let def = spec.operators.first().expect("one operator");
    let binding = anduin_relational::top_n::bind(def, &[("s", schema(updating))])
        .map_err(|e| e.to_string())?;
    let Bound::Operator(factory) = binding.bound else {
        panic!("a top-N is an operator")
    };
    let op = factory(&BuildContext::default()).map_err(|e| e.to_string())?;
    Ok((op, Arc::clone(&binding.outputs[0])))
}

fn window_top_n(shape: Shape, lsm: bool) -> Box<dyn Operator> {
    let (op, out) = bind(shape, lsm, false).expect("binds");
    assert!(!is_updating(&out), "a window top-N is append-only");
    op
}

fn batch(rows: &[Row]) -> RecordBatch {
    let col = |f: fn(&Row) -> Option<i64>| -> Arc<dyn Array> {
        Arc::new(Int64Array::from(rows.iter().map(f).collect::<Vec<_>>()))
    };
    RecordBatch::try_new(
        schema(false),
        vec![
            col(|r| Some(r.0 - 10)),
            col(|r| Some(r.0)),
            col(|r| Some(r.1)),
            col(|r| r.2),
            col(|r| Some(r.3)),
        ],
    )
    .expect("valid")
}

/// The rows emitted, as text, in order.
#[derive(Default)]
struct Emitted(Vec<Vec<String>>);

impl Collector for Emitted {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        assert!(!is_updating(&b.schema()), "append-only");
        let options = FormatOptions::default().with_null("NULL");
        let formatters: Vec<ArrayFormatter<'_>> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).expect("formats"))
            .collect();
        for i in 0..b.num_rows() {
            self.0
                .push(formatters.iter().map(|f| f.value(i).to_string()).collect());
        }
        Ok(())
    }
}

fn text(v: Option<i64>) -> String {
    v.map_or("NULL".to_string(), |v| v.to_string())
}

/// The naive top rows of the windows in `windows` (rows in arrival order, by partition),
/// as the operator writes them, sorted.
fn naive(parts: &BTreeMap<(i64, i64), Vec<Row>>, shape: Shape) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for rows in parts.values() {
        let mut rows = rows.clone();
        let key = |r: &Row| (r.2.is_some(), r.2.unwrap_or(0));
        // A stable sort: ties keep their arrival order.
        rows.sort_by(|a, b| {
            let o = key(a).cmp(&key(b));
            if shape.descending {
                o.reverse()
            } else {
                o
            }
        });
        for (i, r) in rows.iter().take(shape.limit).enumerate() {
            out.push(vec![
                (r.0 - 10).to_string(),
                r.0.to_string(),
                r.1.to_string(),
                text(r.2),
                r.3.to_string(),
                (i + 1).to_string(),
            ]);
        }
    }
    out.sort();
    out
}

/// Runs `batches` (rows, then a watermark) and checks what each watermark emits; with
/// `restart_at`, checkpoints (full at half way, changes there) and restores a fresh one.
fn check(batches: &[(Vec<Row>, i64)], shape: Shape, restart_at: Option<(usize, bool)>) {
    let lsm = restart_at.is_some_and(|(_, lsm)| lsm);
    let make = || window_top_n(shape, lsm);
    let mut op = make();
    let mut full = None;
    let mut watermark = i64::MIN;
    let mut late = 0u64;
    // The rows held, by (window end, partition key).
    let mut held: BTreeMap<(i64, i64), Vec<Row>> = BTreeMap::new();
    for (i, (rows, wm)) in batches.iter().enumerate() {
        if let Some((at, _)) = restart_at {
            if let Some(fresh) = common::restart_point(i, at, &mut op, &mut full, make) {
                op = fresh;
            }
        }
        for r in rows {
            if r.0 <= watermark {
                late += 1;
            } else {
                let k = if shape.keyed { r.1 } else { 0 };
                held.entry((r.0, k)).or_default().push(*r);
            }
        }
        let mut out = Emitted::default();
        if !rows.is_empty() {
            op.process_batch(0, batch(rows), &mut out)
                .expect("processes");
        }
        assert!(out.0.is_empty(), "nothing before a watermark");
        let wm = (*wm).max(watermark);
        op.handle_watermark(Watermark(wm), &mut out)
            .expect("advances");
        watermark = wm;
        let ended: BTreeMap<(i64, i64), Vec<Row>> = held
            .iter()
            .filter(|((end, _), _)| *end <= wm)
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        held.retain(|(end, _), _| *end > wm);
        // Windows come out in order of their ends, each with its ranks in order.
        let ends: Vec<i64> = out
            .0
            .iter()
            .map(|r| r[1].parse().expect("an end"))
            .collect();
        assert!(ends.windows(2).all(|w| w[0] <= w[1]), "{ends:?}");
        let mut got = out.0;
        got.sort();
        assert_eq!(
            got,
            naive(&ended, shape),
            "at watermark {wm} (batch {i}) of {shape:?}, restart {restart_at:?}: {batches:?}"
        );
    }
    let mut out = Emitted::default();
    op.on_end_of_input(&mut out).expect("ends");
    let mut got = out.0;
    got.sort();
    assert_eq!(
        got,
        naive(&held, shape),
        "at the end of {shape:?}: {batches:?}"
    );
    let metrics: BTreeMap<_, _> = op.metrics().into_iter().collect();
    assert_eq!(metrics["late_rows_dropped"], late, "{batches:?}");
    assert_eq!(metrics["rows_held"], 0, "every window's state dropped");
}

fn batches() -> impl Strategy<Value = Vec<(Vec<Row>, i64)>> {
    // Few window ends, keys and values, so that ties and late rows are many.
    let row = (
        (1i64..8).prop_map(|e| e * 10),
        0i64..3,
        prop::option::weighted(0.85, 0i64..5),
        0i64..4,
    );
    prop::collection::vec((prop::collection::vec(row, 0..12), 0i64..80), 1..10)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn each_window_s_rows_equal_a_naive_top_n_once_the_watermark_passes_its_end(
        bs in batches(),
        keyed in any::<bool>(),
        descending in any::<bool>(),
        limit in 1usize..4,
        restart in any::<prop::sample::Index>(),
        lsm in any::<bool>(),
    ) {
        let shape = Shape { keyed, descending, limit };
        check(&bs, shape, None);
        check(&bs, shape, Some((restart.index(bs.len()), lsm)));
    }
}

#[test]
fn of_an_updating_input_the_top_n_stays_updating_and_the_window_end_must_be_a_key() {
    let shape = Shape {
        keyed: false,
        descending: true,
        limit: 2,
    };
    let (_, out) = bind(shape, false, true).expect("binds");
    assert!(
        is_updating(&out),
        "the running top-N ranks an updating input"
    );
    let src = r#"operator name = "op", type = "top_n" {
  input name = "s" param keys = "ws" param window_end = "we" param order = "v" param limit = 1
  output name = "out" }"#;
    let spec = anduin_spec::parse_flow(src).expect("parses");
    let def = spec.operators.first().expect("one operator");
    let Err(e) = anduin_relational::top_n::bind(def, &[("s", schema(false))]) else {
        panic!("a window end that is no key is refused")
    };
    assert!(e.to_string().contains("is not one of `keys`"), "{e}");
}
