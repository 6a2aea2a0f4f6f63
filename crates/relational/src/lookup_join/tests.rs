//! One lookup join instance told what its task tells it: rows, each input's event time (+∞
//! while the input is idle), its inputs' exhaustion, checkpoints. The side table ends when
//! its input is exhausted, not when it looks idle.

use std::sync::Arc;

use anduin_operator_api::{
    BuildContext, Collector, Operator, OperatorError, RestoreIn, SnapshotOut,
};
use anduin_types::{Epoch, SnapshotKind, Watermark};
use arrow::array::{Array, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;

fn stream_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
    ]))
}

fn side_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("label", DataType::Utf8, true),
    ]))
}

/// An inner lookup join of stream `s` (k, v) with side `d` (id, label) on `s.k = d.id`.
fn join() -> Box<dyn Operator> {
    let src = r#"operator name = "j", type = "lookup_join" {
  input name = "s" input name = "d" param on = "s.k = d.id" output name = "out" }"#;
    let spec = anduin_spec::parse_flow(src).expect("parses");
    let op = spec.operators.first().expect("one operator");
    let binding = super::bind(op, &[("s", stream_schema()), ("d", side_schema())]).expect("binds");
    let anduin_operator_api::Bound::Operator(factory) = binding.bound else {
        panic!("a lookup join is an operator with inputs")
    };
    factory(&BuildContext::default()).expect("builds")
}

fn stream(rows: &[(i64, i64)]) -> RecordBatch {
    RecordBatch::try_new(
        stream_schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
        ],
    )
    .expect("a batch")
}

fn side(rows: &[(i64, &str)]) -> RecordBatch {
    RecordBatch::try_new(
        side_schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
        ],
    )
    .expect("a batch")
}

/// What the join emitted, in order: a joined row `(v, label)`, or the end of event time.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Out {
    Row(i64, String),
    End,
}

#[derive(Default)]
struct Emitted(Vec<Out>);

impl Emitted {
    fn take(&mut self) -> Vec<Out> {
        std::mem::take(&mut self.0)
    }
}

impl Collector for Emitted {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        let v = b
            .column(1)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("v");
        let label = b
            .column(3)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("label");
        for i in 0..b.num_rows() {
            self.0
                .push(Out::Row(v.value(i), label.value(i).to_string()));
        }
        Ok(())
    }

    fn watermark(&mut self, watermark: Watermark) -> Result<(), OperatorError> {
        assert_eq!(
            watermark,
            Watermark::MAX,
            "a lookup join forwards only the end"
        );
        self.0.push(Out::End);
        Ok(())
    }
}

fn row(v: i64, label: &str) -> Out {
    Out::Row(v, label.to_string())
}

/// What the task tells the join when its side's producers all go idle: that input's event
/// time is +∞ (and the minimum is the stream's).
fn side_goes_idle(j: &mut Box<dyn Operator>, out: &mut Emitted) {
    j.handle_input_watermark(1, Watermark::MAX, out)
        .expect("an idle side is no error");
}

#[test]
fn an_idle_side_is_not_taken_as_ended_and_its_later_rows_are_joined() {
    let mut j = join();
    let mut out = Emitted::default();
    j.process_batch(1, side(&[(1, "a")]), &mut out)
        .expect("side");
    j.process_batch(0, stream(&[(1, 10), (2, 20)]), &mut out)
        .expect("stream rows wait");
    side_goes_idle(&mut j, &mut out);
    assert_eq!(
        out.take(),
        vec![],
        "no stream row is joined with part of the side"
    );
    // The side wakes up: its rows are the table's, not an error.
    j.process_batch(1, side(&[(2, "b"), (1, "c")]), &mut out)
        .expect("a row after idleness is the side's");
    j.process_batch(0, stream(&[(2, 21)]), &mut out)
        .expect("waits");
    assert_eq!(out.take(), vec![]);
    assert!(!j.on_input_exhausted(1, &mut out).expect("the side ends"));
    assert_eq!(
        out.take(),
        vec![row(10, "a"), row(10, "c"), row(20, "b"), row(21, "b")],
        "every waiting row, in arrival order, with the whole side"
    );
    j.process_batch(0, stream(&[(1, 11)]), &mut out)
        .expect("joined");
    assert_eq!(out.take(), vec![row(11, "a"), row(11, "c")]);
    assert!(
        j.on_input_exhausted(0, &mut out).expect("the stream ends"),
        "with both inputs exhausted, so is the output"
    );
}

#[test]
fn the_end_of_event_time_waits_for_the_side_and_follows_the_rows_it_releases() {
    let mut j = join();
    let mut out = Emitted::default();
    j.process_batch(0, stream(&[(1, 10)]), &mut out)
        .expect("waits");
    side_goes_idle(&mut j, &mut out);
    // The stream finished while the side was idle: the task's minimum is +∞.
    assert!(!j.on_input_exhausted(0, &mut out).expect("the stream ends"));
    let forwarded = j.handle_watermark(Watermark::MAX, &mut out).expect("held");
    assert_eq!(
        forwarded, None,
        "not before the rows that wait for the side"
    );
    j.process_batch(1, side(&[(1, "a")]), &mut out)
        .expect("side");
    assert!(j.on_input_exhausted(1, &mut out).expect("the side ends"));
    assert_eq!(out.take(), vec![row(10, "a"), Out::End]);
}

#[test]
fn a_stopped_join_joins_nothing_with_part_of_the_side() {
    let mut j = join();
    let mut out = Emitted::default();
    j.process_batch(1, side(&[(1, "a")]), &mut out)
        .expect("side");
    j.process_batch(0, stream(&[(1, 10)]), &mut out)
        .expect("waits");
    j.on_end_of_input(&mut out).expect("ends");
    assert_eq!(out.take(), vec![]);
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

fn restored(m: Memory) -> Box<dyn Operator> {
    let mut j = join();
    j.restore(RestoreIn {
        epoch: Epoch(1),
        inline: m.inline,
        files: vec![Box::new(std::io::Cursor::new(m.bytes))],
    })
    .expect("restores");
    j
}

#[test]
fn a_restored_join_whose_side_had_not_ended_waits_for_its_end_whatever_idleness_came_before() {
    let mut j = join();
    let mut out = Emitted::default();
    j.process_batch(1, side(&[(1, "a")]), &mut out)
        .expect("side");
    j.process_batch(0, stream(&[(1, 10)]), &mut out)
        .expect("waits");
    side_goes_idle(&mut j, &mut out);
    let mut m = Memory::default();
    j.snapshot(&mut m).expect("snapshots");

    let mut j = restored(m);
    side_goes_idle(&mut j, &mut out);
    j.process_batch(1, side(&[(1, "b")]), &mut out)
        .expect("side");
    assert_eq!(out.take(), vec![]);
    j.on_input_exhausted(1, &mut out).expect("the side ends");
    assert_eq!(out.take(), vec![row(10, "a"), row(10, "b")]);
}

#[test]
fn a_restored_join_whose_side_had_ended_joins_at_once() {
    let mut j = join();
    let mut out = Emitted::default();
    j.process_batch(1, side(&[(1, "a")]), &mut out)
        .expect("side");
    j.on_input_exhausted(1, &mut out).expect("the side ends");
    let mut m = Memory::default();
    j.snapshot(&mut m).expect("snapshots");

    let mut j = restored(m);
    j.process_batch(0, stream(&[(1, 10), (2, 20)]), &mut out)
        .expect("joined");
    assert_eq!(out.take(), vec![row(10, "a")]);
    // Its resumed side source says again that it is exhausted.
    j.on_input_exhausted(1, &mut out).expect("said again");
    assert_eq!(out.take(), vec![]);
    assert_eq!(
        j.handle_watermark(Watermark::MAX, &mut out)
            .expect("forwarded"),
        Some(Watermark::MAX)
    );
}
