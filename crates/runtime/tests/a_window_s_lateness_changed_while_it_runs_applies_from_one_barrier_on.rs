//! A window's `allowed_lateness` changed while the query runs switches at one consistent
//! point. The source sends rows out of order, in batches of [`CHUNK`] (a watermark after
//! each: the largest event time so far less [`DELAY`]), and holds back the rows from [`GATE`]
//! on until the change is applied. The output is then exactly the naive windows of the rows
//! that count, where a row counts iff its event time is at or after the window's cutoff when
//! it arrives; the cutoff starts at −∞ and, at each watermark later than the last, becomes
//! `max(cutoff, watermark − lateness)`, with the query's lateness for the watermarks before
//! the gate and the new one after it. So with the window fused behind the source and with
//! four instances of it behind a hash exchange, shortening the lateness and lengthening it.
//!
//! With checkpoints, the change rides on a checkpoint barrier, whose manifest records it; a
//! run resumed from that checkpoint restores the window, applies the change again, and emits
//! exactly what the first run emitted after that barrier. A lateness that is not a duration
//! is refused, located in the value (`w.allowed_lateness:1:COL`), and changes nothing.
//!
//! The test defines its source and sink through a catalog of its own; the window is anduin's.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anduin_graph::{
    check_change, Arity, Binding, Catalog, ChangeRejected, OperatorSignature, ParamKind, ParamSpec,
};
use anduin_operator_api::{
    Bound, BuildContext, Collector, Operator, OperatorError, RestoreIn, SnapshotOut, Source,
    SourcePoll, WatermarkSpec,
};
use anduin_registry::BuiltinCatalog;
use anduin_runtime::control::{ChangeRequest, Control, ControlFailure, ParamInfo};
use anduin_runtime::{run, RunConfig};
use anduin_spec::OperatorDef;
use anduin_types::{Diagnostics, Epoch};
use arrow::array::{Array, Int64Array, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;
use crossbeam_channel::{Receiver, Sender};

use crate::common;

const ROWS: i64 = 6_000;
/// Rows per batch: the run's batch size, so that each poll is one batch and one watermark.
const CHUNK: i64 = 100;
const GATE: i64 = 3_000;
/// How far the watermark trails the largest event time, in milliseconds.
const DELAY: i64 = 10;
const BASE: i64 = 1_700_000_000_000;
/// The window's length, in milliseconds.
const SIZE: i64 = 50;

/// Row `n`'s event time: 3 ms apart, up to 79 ms earlier than that (out of order).
fn time_of(n: i64) -> i64 {
    BASE + 3 * n - (n * 7_919 + n * n * 31) % 80
}

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ),
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, false),
    ]))
}

/// The rows `n < ROWS`, `(time_of(n), n % 4, n)`, [`CHUNK`] a poll; with a gate, holding
/// back those from [`GATE`] on until it opens (it says when it has reached the gate).
struct Rows {
    next: i64,
    gate: Option<(Sender<()>, Receiver<()>)>,
    told: bool,
}

impl Source for Rows {
    fn name(&self) -> &str {
        "rows"
    }

    fn poll(&mut self, max_rows: usize, deadline: Instant) -> Result<SourcePoll, OperatorError> {
        if self.next >= ROWS {
            return Ok(SourcePoll::Exhausted);
        }
        if self.next >= GATE {
            if let Some((reached, open)) = &self.gate {
                if !self.told {
                    self.told = true;
                    let _ = reached.send(());
                }
                // Waits for the gate, but never past the deadline (the runtime injects
                // barriers between polls).
                match open.recv_deadline(deadline) {
                    Ok(()) => self.gate = None,
                    Err(_) => return Ok(SourcePoll::Idle),
                }
            }
        }
        if (max_rows as i64) < CHUNK {
            return Err(OperatorError::internal(
                "rows",
                format!(
                    "the test's source sends {CHUNK} rows a poll, and was asked for {max_rows}"
                ),
            ));
        }
        let n: Vec<i64> = (self.next..(self.next + CHUNK).min(ROWS)).collect();
        self.next += n.len() as i64;
        let batch = RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(TimestampMillisecondArray::from(
                    n.iter().map(|n| time_of(*n)).collect::<Vec<_>>(),
                )),
                Arc::new(Int64Array::from(
                    n.iter().map(|n| n % 4).collect::<Vec<_>>(),
                )),
                Arc::new(Int64Array::from(n)),
            ],
        )
        .expect("valid");
        Ok(SourcePoll::Batch(batch))
    }

    fn watermarks(&self) -> Option<WatermarkSpec> {
        Some(WatermarkSpec {
            column: 0,
            delay_ms: DELAY,
            idle_timeout_ms: None,
        })
    }

    fn can_resume(&self) -> Result<(), String> {
        Ok(())
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        out.inline(serde_json::json!({ "next": self.next }));
        Ok(())
    }

    fn restore(&mut self, state: RestoreIn) -> Result<(), OperatorError> {
        self.next = state
            .inline
            .and_then(|v| v["next"].as_i64())
            .expect("a position");
        Ok(())
    }
}

/// A window's result: start, key, count, sum.
type Result4 = (i64, i64, i64, i64);

/// What the sink saw, in order: results, and the checkpoint barriers between them.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Result(Result4),
    Barrier(u64),
}

struct Collect(Arc<Mutex<Vec<Seen>>>);

impl Operator for Collect {
    fn name(&self) -> &str {
        "collect"
    }

    fn process_batch(
        &mut self,
        _input: usize,
        b: RecordBatch,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let ts = |i: usize| {
            b.column(i)
                .as_any()
                .downcast_ref::<TimestampMillisecondArray>()
                .expect("a timestamp")
                .clone()
        };
        let int = |i: usize| {
            b.column(i)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("an int")
                .clone()
        };
        let (start, end, k, n, total) = (ts(0), ts(1), int(2), int(3), int(4));
        let mut seen = self.0.lock().expect("not poisoned");
        for i in 0..b.num_rows() {
            assert_eq!(end.value(i) - start.value(i), SIZE);
            seen.push(Seen::Result((
                start.value(i),
                k.value(i),
                n.value(i),
                total.value(i),
            )));
        }
        Ok(())
    }

    fn snapshot(&mut self, out: &mut dyn SnapshotOut) -> Result<(), OperatorError> {
        let mut seen = self.0.lock().expect("not poisoned");
        seen.push(Seen::Barrier(out.epoch().0));
        Ok(())
    }
}

const PARALLEL: &[ParamSpec] = &[ParamSpec {
    name: "parallelism",
    required: false,
    kind: ParamKind::Int,
    default: Some("1"),
    doc: "",
}];

static SIGS: &[OperatorSignature] = &[
    OperatorSignature {
        kind: "rows",
        doc: "",
        inputs: Arity::Exactly(0),
        outputs: Arity::Exactly(1),
        stateful: true,
        params: PARALLEL,
    },
    OperatorSignature {
        kind: "collect",
        doc: "",
        inputs: Arity::Exactly(1),
        outputs: Arity::Exactly(0),
        stateful: false,
        params: &[],
    },
];

/// The test's source and sink, and anduin's operators.
struct TestCatalog {
    seen: Arc<Mutex<Vec<Seen>>>,
    /// The source's gate, if it has one: it says on the first channel that it reached it,
    /// and waits for the second.
    gate: Option<(Sender<()>, Receiver<()>)>,
}

impl TestCatalog {
    fn ungated() -> Self {
        Self {
            seen: Arc::new(Mutex::new(Vec::new())),
            gate: None,
        }
    }
}

impl Catalog for TestCatalog {
    type Bound = Bound;

    fn signature(&self, kind: &str) -> Option<&OperatorSignature> {
        SIGS.iter()
            .find(|s| s.kind == kind)
            .or_else(|| BuiltinCatalog.signature(kind))
    }

    fn kinds(&self) -> Vec<&'static str> {
        SIGS.iter().map(|s| s.kind).collect()
    }

    fn adjustable(&self, kind: &str) -> Vec<&'static str> {
        BuiltinCatalog.adjustable(kind)
    }

    fn bind(
        &self,
        op: &OperatorDef,
        inputs: &[(&str, SchemaRef)],
        declared: &[Option<SchemaRef>],
    ) -> Result<Binding<Bound>, Diagnostics> {
        let (bound, outputs) = match op.kind.as_str() {
            "rows" => {
                let gate = self.gate.clone();
                let bound = Bound::Source(Arc::new(move |_: &BuildContext| {
                    Ok(Box::new(Rows {
                        next: 0,
                        gate: gate.clone(),
                        told: false,
                    }))
                }));
                (bound, vec![schema()])
            }
            "collect" => {
                let seen = Arc::clone(&self.seen);
                let bound =
                    Bound::Operator(Arc::new(move |_| Ok(Box::new(Collect(Arc::clone(&seen))))));
                (bound, vec![])
            }
            _ => return BuiltinCatalog.bind(op, inputs, declared),
        };
        Ok(Binding {
            bound,
            outputs,
            warnings: Diagnostics::default(),
            partition_by: Vec::new(),
        })
    }
}

fn query(parallelism: usize, lateness: &str) -> String {
    format!(
        r#"
operator name = "rows", type = "rows" {{ output name = "rows" }}
operator name = "w", type = "window" {{
  input name = "rows"
  param kind = "tumbling"
  param size = "{SIZE}ms"
  param time = "ts"
  param keys = "k"
  param aggregates = "COUNT(*) AS n, SUM(v) AS total"
  param allowed_lateness = "{lateness}"
  param parallelism = {parallelism}
  output name = "counts"
}}
operator name = "collect", type = "collect" {{ input name = "counts" }}
"#
    )
}

fn graph(src: &str, catalog: &TestCatalog) -> anduin_graph::LogicalGraph<Bound> {
    let spec = anduin_spec::parse_flow(src).expect("parses");
    anduin_graph::check(&spec, catalog).expect("checks").0
}

/// The results due by the model of the module's documentation, lateness `before` (ms) for the
/// watermarks before the gate and `after` from it on, sorted.
fn expected(before: i64, after: i64) -> Vec<Result4> {
    let mut windows: BTreeMap<(i64, i64), (i64, i64)> = BTreeMap::new();
    let (mut max, mut cutoff) = (i64::MIN, i64::MIN);
    for first in (0..ROWS).step_by(CHUNK as usize) {
        let chunk = first..(first + CHUNK).min(ROWS);
        for n in chunk.clone().filter(|n| time_of(*n) >= cutoff) {
            let t = time_of(n);
            let w = windows.entry((t - t.rem_euclid(SIZE), n % 4)).or_default();
            w.0 += 1;
            w.1 += n;
        }
        let lateness = if first < GATE { before } else { after };
        let m = chunk.map(time_of).max().expect("rows");
        if m > max {
            max = m;
            cutoff = cutoff.max(max - DELAY - lateness);
        }
    }
    windows
        .into_iter()
        .map(|((start, k), (n, total))| (start, k, n, total))
        .collect()
}

fn results(seen: &[Seen]) -> Vec<Result4> {
    let mut r: Vec<Result4> = seen
        .iter()
        .filter_map(|s| match s {
            Seen::Result(r) => Some(*r),
            Seen::Barrier(_) => None,
        })
        .collect();
    r.sort_unstable();
    r
}

fn ms(lateness: &str) -> i64 {
    anduin_types::parse_duration_ms(lateness)
        .and_then(|ms| i64::try_from(ms).ok())
        .expect("a duration")
}

/// What came of a run with a change.
struct Outcome {
    seen: Vec<Seen>,
    refused: ControlFailure,
    change: anduin_runtime::control::ChangeRecord,
    history: usize,
}

/// Runs the window at `parallelism` with the lateness `before`; once the source waits at the
/// gate, asks for a lateness that is no duration (refused), then for `after`, then opens the
/// gate. With `checkpoints`, checkpoints go there.
fn run_with_change(
    parallelism: usize,
    before: &str,
    after: &str,
    checkpoints: Option<&std::path::Path>,
) -> Outcome {
    let (reached_tx, reached_rx) = crossbeam_channel::unbounded();
    let (open_tx, open_rx) = crossbeam_channel::unbounded();
    let catalog = TestCatalog {
        gate: Some((reached_tx, open_rx)),
        ..TestCatalog::ungated()
    };
    let src = query(parallelism, before);
    let graph = graph(&src, &catalog);
    // The change is checked as `anduin ctl set` checks it, against the query as checked.
    let checked = Mutex::new(self::graph(&src, &TestCatalog::ungated()));
    let validate = move |r: &ChangeRequest, _: &BTreeMap<String, String>| {
        let g = checked.lock().expect("not poisoned");
        check_change(&g, &TestCatalog::ungated(), &r.operator, &r.param, &r.value).map_err(|e| {
            ControlFailure::Invalid {
                operator: r.operator.clone(),
                param: r.param.clone(),
                message: match e {
                    ChangeRejected::Invalid(m) => m,
                    other => format!("{other:?}"),
                },
            }
        })
    };
    let params = BTreeMap::from([(
        "w".to_string(),
        vec![ParamInfo {
            name: "allowed_lateness".into(),
            kind: "duration".into(),
            value: before.into(),
            doc: String::new(),
        }],
    )]);
    let control = Arc::new(Control::new("lateness", None, params, Box::new(validate)));
    let config = RunConfig {
        batch_size: CHUNK as usize,
        linger: Duration::from_millis(5),
        control: Some(Arc::clone(&control)),
        checkpointing: checkpoints.map(|dir| common::checkpointing(dir, None, None)),
        ..RunConfig::default()
    };
    let ctx = BuildContext {
        checkpointing: checkpoints.is_some(),
        ..BuildContext::default()
    };
    let set = |value: &str| {
        control.set(ChangeRequest {
            operator: "w".into(),
            param: "allowed_lateness".into(),
            value: value.into(),
            from: "test".into(),
        })
    };
    let (refused, change) = std::thread::scope(|s| {
        let runner = s.spawn(|| run(&graph, &config, &ctx));
        reached_rx.recv().expect("the source reaches the gate");
        let refused = set("soon").expect_err("not a duration");
        let change = set(after);
        open_tx.send(()).expect("the source listens");
        runner.join().expect("no panic").expect("runs");
        (refused, change.expect("applied"))
    });
    let seen = catalog.seen.lock().expect("not poisoned").clone();
    Outcome {
        seen,
        refused,
        change,
        history: control.history().len(),
    }
}

fn switch_and_check(parallelism: usize, before: &str, after: &str) {
    let o = run_with_change(parallelism, before, after, None);
    match &o.refused {
        ControlFailure::Invalid { message, .. } => {
            assert!(message.starts_with("w.allowed_lateness:1:"), "{message}");
            assert!(message.contains("duration"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(o.history, 1, "only the valid change is applied");
    assert_eq!(
        (o.change.old.as_str(), o.change.new.as_str()),
        (before, after)
    );
    let want = expected(ms(before), ms(after));
    assert_ne!(
        want,
        expected(ms(before), ms(before)),
        "the change makes a difference to the output"
    );
    assert_ne!(
        want,
        expected(ms(after), ms(after)),
        "the change makes a difference to the output"
    );
    assert_eq!(results(&o.seen), want);
}

#[test]
fn a_shorter_lateness_applies_from_the_barrier_with_the_window_fused_behind_the_source() {
    switch_and_check(1, "60ms", "0s");
}

#[test]
fn a_longer_lateness_applies_from_the_barrier_with_the_window_fused_behind_the_source() {
    switch_and_check(1, "0s", "60ms");
}

#[test]
fn four_window_instances_switch_at_one_aligned_barrier() {
    switch_and_check(4, "60ms", "5ms");
}

#[test]
fn a_run_resumed_from_the_change_s_checkpoint_applies_it_again_after_restoring_the_window() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (before, after) = ("60ms", "0s");
    let o = run_with_change(4, before, after, Some(dir.path()));
    assert_eq!(results(&o.seen), expected(ms(before), ms(after)));
    let epoch = o.change.epoch;
    let store = anduin_checkpoint::Store::open(dir.path()).expect("opens");
    let manifest = store
        .manifest(Epoch(epoch))
        .expect("reads")
        .expect("the change's checkpoint completed");
    assert_eq!(manifest.controls, vec![o.change.clone()]);
    let after_barrier: Vec<Seen> = o
        .seen
        .iter()
        .skip_while(|s| **s != Seen::Barrier(epoch))
        .cloned()
        .collect();
    assert!(
        after_barrier.len() > 1,
        "the change's barrier reached the sink, and results came after it"
    );

    // As if the run had crashed after the change's checkpoint: resumed from it.
    let later: Vec<Epoch> = store
        .epochs()
        .expect("lists")
        .into_iter()
        .filter(|e| e.0 > epoch)
        .collect();
    store.remove(&later).expect("removes the later checkpoints");
    let restore = store.validate(Epoch(epoch)).expect("valid");
    let catalog = TestCatalog::ungated();
    let graph = graph(&query(4, before), &catalog);
    let config = RunConfig {
        batch_size: CHUNK as usize,
        linger: Duration::from_millis(5),
        checkpointing: Some(common::checkpointing(dir.path(), None, Some(restore))),
        ..RunConfig::default()
    };
    let ctx = BuildContext {
        checkpointing: true,
        ..BuildContext::default()
    };
    run(&graph, &config, &ctx).expect("resumes and runs");
    let resumed = catalog.seen.lock().expect("not poisoned").clone();
    assert_eq!(results(&resumed), results(&after_barrier));
    // Without the change applied again, the resumed run would have given other results.
    assert_ne!(
        results(&after_barrier),
        results_after_gate(ms(before), ms(before))
    );
    assert_eq!(
        results(&after_barrier),
        results_after_gate(ms(before), ms(after))
    );
}

/// The results the model gives for the windows that had not fired at the gate (what a run
/// resumed there emits).
fn results_after_gate(before: i64, after: i64) -> Vec<Result4> {
    // The cutoff at the gate: every window ending by it fired before.
    let mut max = i64::MIN;
    let mut cutoff = i64::MIN;
    for first in (0..GATE).step_by(CHUNK as usize) {
        let m = (first..first + CHUNK).map(time_of).max().expect("rows");
        if m > max {
            max = m;
            cutoff = cutoff.max(max - DELAY - before);
        }
    }
    expected(before, after)
        .into_iter()
        .filter(|(start, ..)| start + SIZE > cutoff)
        .collect()
}
