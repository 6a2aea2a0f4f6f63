//! Every stateful operator told that its inputs are exhausted emits then what the end of event
//! time would have emitted, says that its output is exhausted too, and emits nothing after:
//! a run told so before its +∞ and its end gives the same rows and watermarks, in the same
//! order, as a run told only of the +∞ and the end (after an exhausted input the next
//! watermark is that +∞: its producers are idle or done). So an operator after it that waits
//! for its input's end (a lookup join's side) goes on without waiting for event time to end,
//! and no row is dropped or repeated.

use std::sync::Arc;

use anduin_operator_api::{Bound, BuildContext, Collector, Operator, OperatorError};
use anduin_types::Watermark;
use arrow::array::Int64Array;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};

/// The columns of every input: an event time in epoch milliseconds, a key, a value.
fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ts", DataType::Int64, true),
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
    ]))
}

fn batch(rows: &[(i64, i64, i64)]) -> RecordBatch {
    let column = |f: fn(&(i64, i64, i64)) -> i64| {
        Arc::new(Int64Array::from_iter_values(rows.iter().map(f))) as _
    };
    RecordBatch::try_new(
        schema(),
        vec![column(|r| r.0), column(|r| r.1), column(|r| r.2)],
    )
    .expect("a batch")
}

/// The operator `src` declares (its inputs named `a` and, for two, `b`), built.
fn build(src: &str, inputs: usize) -> Box<dyn Operator> {
    let spec = anduin_spec::parse_flow(src).expect("parses");
    let op = spec.operators.first().expect("one operator");
    let ins: Vec<(&str, SchemaRef)> = ["a", "b"][..inputs]
        .iter()
        .map(|n| (*n, schema()))
        .collect();
    let bound = match op.kind.as_str() {
        "window" => crate::window::bind(op, &ins),
        "over" => crate::over::bind(op, &ins),
        "top_n" => crate::top_n::bind(op, &ins),
        "aggregate" => crate::group::bind(op, &ins),
        "join" => crate::join::bind(op, &ins),
        "regular_join" => crate::regular_join::bind(op, &ins),
        other => panic!("no operator {other} here"),
    }
    .unwrap_or_else(|e| panic!("binds: {e:?}"));
    let Bound::Operator(factory) = bound.bound else {
        panic!("an operator with inputs")
    };
    factory(&BuildContext::default()).expect("builds")
}

/// What an operator emitted, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    /// A row on an output port, its values joined by commas.
    Row(usize, String),
    /// A watermark it forwarded.
    Watermark(i64),
    /// Here the operator was told that its last input is exhausted.
    Exhausted,
}

#[derive(Default)]
struct Seen(Vec<Event>);

impl Collector for Seen {
    fn collect(&mut self, port: usize, batch: RecordBatch) -> Result<(), OperatorError> {
        let options = FormatOptions::default();
        let formatters: Vec<ArrayFormatter> = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).expect("displayable"))
            .collect();
        for r in 0..batch.num_rows() {
            let values: Vec<String> = formatters.iter().map(|f| f.value(r).to_string()).collect();
            self.0.push(Event::Row(port, values.join(",")));
        }
        Ok(())
    }

    fn watermark(&mut self, watermark: Watermark) -> Result<(), OperatorError> {
        self.0.push(Event::Watermark(watermark.0));
        Ok(())
    }
}

/// What the task gives an operator.
enum Step {
    Rows(usize, Vec<(i64, i64, i64)>),
    Watermark(i64),
}

/// The events of one run of `src` over `script`, then (if `exhausted`) each input's
/// exhaustion, then the end of event time and the end of input.
fn run(src: &str, inputs: usize, script: &[Step], exhausted: bool) -> Vec<Event> {
    let mut op = build(src, inputs);
    let mut out = Seen::default();
    let forward = |op: &mut Box<dyn Operator>, out: &mut Seen, w: Watermark| {
        if let Some(w) = op.handle_watermark(w, out).expect("a watermark") {
            out.0.push(Event::Watermark(w.0));
        }
    };
    for step in script {
        match step {
            Step::Rows(input, rows) => op
                .process_batch(*input, batch(rows), &mut out)
                .expect("rows"),
            Step::Watermark(w) => forward(&mut op, &mut out, Watermark(*w)),
        }
    }
    if exhausted {
        let mut done = false;
        for input in 0..inputs {
            done = op
                .on_input_exhausted(input, &mut out)
                .expect("told of its input's exhaustion");
        }
        assert!(done, "{src}: its output is exhausted once its inputs are");
        out.0.push(Event::Exhausted);
    }
    forward(&mut op, &mut out, Watermark::MAX);
    op.on_end_of_input(&mut out).expect("the end");
    out.0
}

/// `src` over `script` told of its inputs' exhaustion gives what it gives without, and no
/// row after it; returns the rows.
fn same_with_exhaustion(src: &str, inputs: usize, script: &[Step]) -> Vec<String> {
    let ended = run(src, inputs, script, false);
    let exhausted = run(src, inputs, script, true);
    let at = exhausted
        .iter()
        .position(|e| *e == Event::Exhausted)
        .expect("told");
    assert!(
        !exhausted[at..].iter().any(|e| matches!(e, Event::Row(..))),
        "{src}: no row after its output said it was exhausted: {exhausted:?}"
    );
    let without: Vec<Event> = exhausted
        .into_iter()
        .filter(|e| *e != Event::Exhausted)
        .collect();
    assert_eq!(without, ended, "{src}");
    ended
        .into_iter()
        .filter_map(|e| match e {
            Event::Row(_, r) => Some(r),
            _ => None,
        })
        .collect()
}

/// Rows of keys 1 and 2 over 35 seconds, the first 12 seconds passed by the watermark.
fn one_input() -> Vec<Step> {
    vec![
        Step::Rows(0, vec![(1_000, 1, 10), (2_000, 2, 20), (4_000, 1, 11)]),
        Step::Rows(0, vec![(9_000, 2, 21), (11_000, 1, 12), (13_000, 1, 13)]),
        Step::Watermark(12_000),
        Step::Rows(0, vec![(14_000, 2, 22), (21_000, 1, 14), (22_000, 1, 15)]),
        Step::Rows(0, vec![(33_000, 2, 23), (35_000, 2, 24), (35_000, 1, 16)]),
    ]
}

fn window(kind: &str) -> String {
    format!(
        r#"operator name = "w", type = "window" {{
  input name = "a"
  {kind}
  param time = "ts"
  param keys = "k"
  param aggregates = "COUNT(*) AS n, SUM(v) AS s"
  output name = "out"
}}"#
    )
}

#[test]
fn a_tumbling_window_fires_its_open_windows_when_its_input_is_exhausted() {
    let src = window(r#"param kind = "tumbling" param size = "10s""#);
    let rows = same_with_exhaustion(&src, 1, &one_input());
    assert_eq!(rows.len(), 7, "every window of every key: {rows:?}");
}

#[test]
fn a_sliding_window_fires_its_open_windows_when_its_input_is_exhausted() {
    let src = window(r#"param kind = "sliding" param size = "10s" param slide = "5s""#);
    let rows = same_with_exhaustion(&src, 1, &one_input());
    assert!(rows.len() > 7, "{rows:?}");
}

#[test]
fn a_session_window_closes_its_open_sessions_when_its_input_is_exhausted() {
    let src = window(r#"param kind = "session" param gap = "3s""#);
    let rows = same_with_exhaustion(&src, 1, &one_input());
    assert_eq!(rows.len(), 8, "{rows:?}");
}

#[test]
fn a_count_window_short_of_its_size_stays_unfired_when_its_input_is_exhausted() {
    let src = window(r#"param kind = "count" param size = "4""#);
    let rows = same_with_exhaustion(&src, 1, &one_input());
    assert_eq!(
        rows.len(),
        2,
        "two keys of six rows: one window each: {rows:?}"
    );
}

#[test]
fn an_over_window_releases_its_waiting_rows_when_its_input_is_exhausted() {
    let src = r#"operator name = "o", type = "over" {
  input name = "a"
  param keys = "k"
  param time = "ts"
  param frame = "rows 2"
  param aggregates = "SUM(v) AS s"
  output name = "out"
}"#;
    let rows = same_with_exhaustion(src, 1, &one_input());
    assert_eq!(rows.len(), 12, "every row once: {rows:?}");
}

#[test]
fn a_keep_first_deduplication_emits_its_waiting_rows_when_its_input_is_exhausted() {
    let src = r#"operator name = "d", type = "top_n" {
  input name = "a"
  param keys = "k"
  param order = "ts"
  param limit = 1
  param time = "ts"
  output name = "out"
}"#;
    let rows = same_with_exhaustion(src, 1, &one_input());
    assert_eq!(rows, ["1000,1,10", "2000,2,20"]);
}

#[test]
fn a_ranking_and_a_group_by_say_their_output_is_exhausted_with_their_input() {
    let top = r#"operator name = "t", type = "top_n" {
  input name = "a"
  param keys = "k"
  param order = "v DESC"
  param limit = 2
  output name = "out"
}"#;
    same_with_exhaustion(top, 1, &one_input());
    let group = r#"operator name = "g", type = "aggregate" {
  input name = "a"
  param keys = "k"
  param aggregates = "COUNT(*) AS n, MAX(v) AS hi"
  output name = "out"
}"#;
    same_with_exhaustion(group, 1, &one_input());
}

/// Rows of both inputs; the watermark passes the first 5 seconds.
fn two_inputs() -> Vec<Step> {
    vec![
        Step::Rows(0, vec![(1_000, 1, 10), (2_000, 2, 20), (8_000, 1, 11)]),
        Step::Rows(1, vec![(1_500, 1, 100), (9_000, 1, 101)]),
        Step::Watermark(5_000),
        Step::Rows(0, vec![(12_000, 2, 21), (19_000, 3, 30)]),
        Step::Rows(1, vec![(13_000, 2, 200), (18_000, 1, 102)]),
    ]
}

#[test]
fn a_left_interval_join_emits_its_rows_left_alone_when_both_inputs_are_exhausted() {
    let src = r#"operator name = "j", type = "join" {
  input name = "a"
  input name = "b"
  param kind = "interval"
  param how = "left"
  param on = "a.k = b.k"
  param left_time = "ts"
  param right_time = "ts"
  param lower = "-2s"
  param upper = "2s"
  output name = "out"
}"#;
    let rows = same_with_exhaustion(src, 2, &two_inputs());
    assert_eq!(rows.len(), 5, "three pairs, two rows alone: {rows:?}");
}

#[test]
fn a_window_join_fires_its_open_windows_when_both_inputs_are_exhausted() {
    let src = r#"operator name = "j", type = "join" {
  input name = "a"
  input name = "b"
  param kind = "window"
  param on = "a.k = b.k"
  param left_time = "ts"
  param right_time = "ts"
  param size = "10s"
  output name = "out"
}"#;
    let rows = same_with_exhaustion(src, 2, &two_inputs());
    assert_eq!(rows.len(), 5, "four pairs of key 1, one of key 2: {rows:?}");
}

#[test]
fn a_join_with_one_input_exhausted_holds_its_output_open() {
    let src = r#"operator name = "j", type = "join" {
  input name = "a"
  input name = "b"
  param kind = "window"
  param on = "a.k = b.k"
  param left_time = "ts"
  param right_time = "ts"
  param size = "10s"
  output name = "out"
}"#;
    let mut op = build(src, 2);
    let mut out = Seen::default();
    op.process_batch(0, batch(&[(1_000, 1, 10)]), &mut out)
        .expect("rows");
    assert!(!op.on_input_exhausted(1, &mut out).expect("told"));
    assert_eq!(out.0, [], "the other input may still bring a partner");
}

#[test]
fn a_regular_join_says_its_output_is_exhausted_with_its_inputs() {
    let src = r#"operator name = "j", type = "regular_join" {
  input name = "a"
  input name = "b"
  param how = "full"
  param on = "a.k = b.k"
  output name = "out"
}"#;
    same_with_exhaustion(src, 2, &two_inputs());
}
