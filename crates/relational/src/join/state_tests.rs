//! What a join keeps of its rows: only the columns `keep` names (the columns the rest of the
//! query reads), copied out of their input batches, so that an unread wide column costs its
//! state nothing (measured by the `state_bytes` metric); and with any `keep`, the rows a join
//! keeping every column gives, projected to the kept columns, before and after a restore.

use std::sync::Arc;

use anduin_operator_api::{
    Bound, BuildContext, Collector, Operator, OperatorError, RestoreIn, SnapshotOut,
};
use anduin_types::{Diagnostics, Epoch, SnapshotKind, Watermark};
use arrow::array::{Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};

/// The left input: an event time, a key, a value and a wide text nobody need read.
fn left_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, true),
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
        Field::new("pad", DataType::Utf8, true),
    ]))
}

/// The right input: an event time, a key, a value.
fn right_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, true),
        Field::new("k", DataType::Int64, true),
        Field::new("w", DataType::Int64, true),
    ]))
}

/// One row of either input: time, key (maybe null), value; the left's pad is `pad` long.
type Row = (i64, Option<i64>, i64);

fn batch(side: usize, rows: &[Row], pad: usize) -> RecordBatch {
    let ts = Int64Array::from_iter_values(rows.iter().map(|r| r.0));
    let k: Int64Array = rows.iter().map(|r| r.1).collect();
    let v = Int64Array::from_iter_values(rows.iter().map(|r| r.2));
    let columns: Vec<arrow::array::ArrayRef> = if side == 0 {
        let text: StringArray = rows
            .iter()
            .map(|r| Some(format!("{:0>pad$}", r.2)))
            .collect();
        vec![Arc::new(ts), Arc::new(k), Arc::new(v), Arc::new(text)]
    } else {
        vec![Arc::new(ts), Arc::new(k), Arc::new(v)]
    };
    let schema = if side == 0 {
        left_schema()
    } else {
        right_schema()
    };
    RecordBatch::try_new(schema, columns).expect("a batch")
}

/// The params of a join of `a` and `b` on `k`.
fn source(params: &str, keep: Option<&str>) -> String {
    let keep = keep.map_or_else(String::new, |k| {
        format!("  param keep = \"{}\"\n", k.replace('"', "\\\""))
    });
    format!(
        r#"operator name = "j", type = "join" {{
  input name = "a"
  input name = "b"
  param on = "a.k = b.k"
  param left_time = "ts"
  param right_time = "ts"
{params}{keep}  output name = "out"
}}"#
    )
}

fn bind(src: &str) -> Result<anduin_graph::Binding<Bound>, Diagnostics> {
    let spec = anduin_spec::parse_flow(src).expect("parses");
    let op = spec.operators.first().expect("one operator");
    super::bind(op, &[("a", left_schema()), ("b", right_schema())])
}

fn build(src: &str) -> Box<dyn Operator> {
    let bound = bind(src).unwrap_or_else(|e| panic!("binds: {e:?}"));
    let Bound::Operator(factory) = bound.bound else {
        panic!("an operator with inputs")
    };
    factory(&BuildContext::default()).expect("builds")
}

/// Rows emitted, each as its (column name, value) pairs.
#[derive(Default)]
struct Seen(Vec<Vec<(String, String)>>);

impl Collector for Seen {
    fn collect(&mut self, _port: usize, batch: RecordBatch) -> Result<(), OperatorError> {
        let options = FormatOptions::default();
        let formatters: Vec<ArrayFormatter> = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).expect("displayable"))
            .collect();
        let schema = batch.schema();
        for r in 0..batch.num_rows() {
            self.0.push(
                schema
                    .fields()
                    .iter()
                    .zip(&formatters)
                    .map(|(f, v)| (f.name().clone(), v.value(r).to_string()))
                    .collect(),
            );
        }
        Ok(())
    }

    fn watermark(&mut self, _watermark: Watermark) -> Result<(), OperatorError> {
        Ok(())
    }
}

/// A checkpoint in memory: the manifest's inline value and one full snapshot.
#[derive(Default)]
struct Memory {
    inline: Option<serde_json::Value>,
    bytes: Vec<u8>,
}

impl SnapshotOut for Memory {
    fn epoch(&self) -> Epoch {
        Epoch(1)
    }
    fn full_due(&self) -> bool {
        true
    }
    fn inline(&mut self, value: serde_json::Value) {
        self.inline = Some(value);
    }
    fn stream(&mut self, _kind: SnapshotKind) -> Result<&mut dyn std::io::Write, OperatorError> {
        Ok(&mut self.bytes)
    }
}

fn state_bytes(op: &dyn Operator) -> u64 {
    op.metrics()
        .into_iter()
        .find(|(n, _)| *n == "state_bytes")
        .map_or(0, |(_, b)| b)
}

/// What the task gives a join.
#[derive(Debug, Clone)]
enum Step {
    Rows(usize, Vec<Row>),
    Watermark(i64),
}

/// A seeded script: batches of both sides with times that mostly ascend (some late), keys
/// among a few (some null), and watermarks.
fn script(seed: u64) -> Vec<Step> {
    let mut rng = crate::test_rng::Lcg::scrambled(seed);
    let mut next = |n: u64| rng.below(n);
    let mut steps = Vec::new();
    let mut t = 0i64;
    let mut value = 0i64;
    for _ in 0..60 {
        if next(4) == 0 {
            steps.push(Step::Watermark(t - 3_000));
            continue;
        }
        let side = next(2) as usize;
        let rows = (0..1 + next(6))
            .map(|_| {
                t += next(700) as i64;
                value += 1;
                let time = if next(10) == 0 { t - 6_000 } else { t };
                let key = (next(12) != 0).then(|| next(4) as i64);
                (time, key, value)
            })
            .collect();
        steps.push(Step::Rows(side, rows));
    }
    steps
}

/// The rows of a join of `src` over `steps`, snapshot and restored into a new instance before
/// step `restore_at` (if given), to the end of event time.
fn run(src: &str, steps: &[Step], restore_at: Option<usize>) -> Vec<Vec<(String, String)>> {
    let mut op = build(src);
    let mut out = Seen::default();
    for (i, step) in steps.iter().enumerate() {
        if restore_at == Some(i) {
            let mut m = Memory::default();
            op.snapshot(&mut m).expect("a snapshot");
            op = build(src);
            op.restore(RestoreIn {
                epoch: Epoch(1),
                inline: m.inline,
                files: vec![Box::new(std::io::Cursor::new(m.bytes))],
            })
            .expect("restores");
        }
        match step {
            Step::Rows(side, rows) => op
                .process_batch(*side, batch(*side, rows, 16), &mut out)
                .expect("rows"),
            Step::Watermark(w) => {
                op.handle_watermark(Watermark(*w), &mut out)
                    .expect("a watermark");
            }
        }
    }
    op.handle_watermark(Watermark::MAX, &mut out)
        .expect("the end");
    out.0
}

#[test]
fn a_join_over_a_wide_input_keeps_in_its_state_only_the_columns_the_query_reads() {
    let rows = 2_000usize;
    let pad = 1_024usize;
    let src = |keep| {
        source(
            "  param kind = \"interval\"\n  param lower = \"-5s\"\n  param upper = \"5s\"\n",
            keep,
        )
    };
    let fill = |op: &mut Box<dyn Operator>| {
        // One batch of every row, given in slices of 200 as a source gives them.
        let all: Vec<Row> = (0..rows as i64).map(|i| (i, Some(i % 100), i)).collect();
        let whole = batch(0, &all, pad);
        let mut out = Seen::default();
        for start in (0..rows).step_by(200) {
            op.process_batch(0, whole.slice(start, 200), &mut out)
                .expect("rows");
        }
        state_bytes(op.as_ref())
    };
    let unread = (rows * pad) as u64;
    let narrow = fill(&mut build(&src(Some("v, w"))));
    assert!(
        narrow > 0 && narrow < unread / 8,
        "{rows} buffered rows keeping v and w hold {narrow} bytes, against {unread} bytes of the unread column"
    );
    let wide = fill(&mut build(&src(None)));
    assert!(
        wide >= unread,
        "{rows} buffered rows keeping every column hold {wide} bytes, less than their pads ({unread} bytes)"
    );
}

/// Issue 23: Nexmark q7 buffers millions of bids, each under a key (its price) of its own. A
/// key holding one row costs its index slot, its slab slot (its bytes and its row inline), and
/// the row's 16-byte entry: about 100 bytes a row beside its kept columns (24 bytes here),
/// where the layout of one list and one key allocation per key took over 200.
#[test]
fn a_join_holding_one_row_per_key_costs_about_a_hundred_bytes_a_row_beside_its_columns() {
    let src = source(
        "  param kind = \"interval\"\n  param lower = \"-5s\"\n  param upper = \"5s\"\n",
        Some("ts, k, v"),
    );
    let mut op = build(&src);
    let mut out = Seen::default();
    let rows = 100_000usize;
    // A thousand rows a millisecond, as q7's bids at its rate; every key new.
    let all: Vec<Row> = (0..rows as i64).map(|i| (i / 1_000, Some(i), i)).collect();
    let whole = batch(0, &all, 0);
    for start in (0..rows).step_by(1_000) {
        op.process_batch(0, whole.slice(start, 1_000), &mut out)
            .expect("rows");
    }
    let held = state_bytes(op.as_ref());
    let per_row = held / rows as u64;
    assert!(
        (24..130).contains(&per_row),
        "{rows} rows of distinct keys with 24 bytes of kept columns hold {held} bytes, {per_row} a row"
    );
}

#[test]
fn a_batch_of_which_one_row_is_buffered_is_not_kept_whole() {
    let src = source(
        "  param kind = \"interval\"\n  param lower = \"-5s\"\n  param upper = \"5s\"\n",
        None,
    );
    let mut op = build(&src);
    let mut out = Seen::default();
    // A watermark at 1 000 makes every row but the last late.
    op.handle_watermark(Watermark(1_000), &mut out)
        .expect("a watermark");
    let rows: Vec<Row> = (0..1_000)
        .map(|i| (i, Some(1), i))
        .chain([(5_000, Some(1), 7)])
        .collect();
    op.process_batch(0, batch(0, &rows, 1_024), &mut out)
        .expect("rows");
    let held = state_bytes(op.as_ref());
    assert!(
        held > 1_024 && held < 16 * 1_024,
        "one buffered row of 1 KB holds {held} bytes (its batch of 1 001 rows would hold 1 MB)"
    );
}

#[test]
fn a_join_keeping_some_columns_gives_the_rows_of_one_keeping_every_column_projected_to_them() {
    let kinds = [
        "  param kind = \"interval\"\n  param lower = \"-2s\"\n  param upper = \"1s\"\n",
        "  param kind = \"interval\"\n  param how = \"left\"\n  param lower = \"-1s\"\n  param upper = \"2s\"\n",
        "  param kind = \"window\"\n  param size = \"2s\"\n",
        "  param kind = \"window\"\n  param how = \"left\"\n  param size = \"2s\"\n",
    ];
    // Output names: the right side's `ts` and `k` are `b_ts` and `b_k`.
    let keeps = ["v, w", "\"pad\", b_ts", "v", "ts, k, v, pad, b_ts, b_k, w"];
    for seed in 1..=6u64 {
        let steps = script(seed);
        for kind in kinds {
            let full = run(&source(kind, None), &steps, None);
            assert!(!full.is_empty(), "seed {seed}, {kind}: no rows at all");
            for keep in keeps {
                let src = source(kind, Some(keep));
                for restore_at in [None, Some(steps.len() / 2)] {
                    let got = run(&src, &steps, restore_at);
                    let names: Vec<String> = got
                        .first()
                        .map(|r| r.iter().map(|(n, _)| n.clone()).collect())
                        .unwrap_or_default();
                    let projected: Vec<Vec<(String, String)>> = full
                        .iter()
                        .map(|r| {
                            r.iter()
                                .filter(|(n, _)| names.contains(n))
                                .cloned()
                                .collect()
                        })
                        .collect();
                    let (mut got, mut projected) = (got, projected);
                    got.sort();
                    projected.sort();
                    assert_eq!(
                        got, projected,
                        "seed {seed}, {kind}keep {keep}, restored before step {restore_at:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_side_none_of_whose_columns_is_read_keeps_its_time_and_the_output_names_the_kept_ones() {
    let bound = bind(&source(
        "  param kind = \"window\"\n  param size = \"2s\"\n",
        Some("v"),
    ))
    .unwrap_or_else(|e| panic!("binds: {e:?}"));
    let names: Vec<String> = bound.outputs[0]
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["window_start", "window_end", "v", "b_ts"]);
}

#[test]
fn keeping_a_column_the_join_does_not_have_is_refused_naming_it() {
    let Err(e) = bind(&source(
        "  param kind = \"window\"\n  param size = \"2s\"\n",
        Some("v, nope"),
    )) else {
        panic!("a join keeping `nope` binds");
    };
    let text = format!("{e:?}");
    assert!(
        text.contains("unknown column `nope`") && text.contains("b_ts"),
        "{text}"
    );
}
