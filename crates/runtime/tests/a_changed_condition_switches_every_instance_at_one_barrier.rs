//! A filter's condition changed while the query runs switches at one consistent point: a
//! barrier injected at every source instance after exactly the rows it had emitted, aligned
//! where the instances meet. Each source instance here holds its rows back at a gate (`n >=
//! GATE`) until the change is applied, so the rows before the gate were all filtered with the
//! old condition and the rows after it with the new one — with one source instance (the
//! filter fused behind it) and with four (the filter aligning the barrier over four inputs),
//! with and without checkpoints (the change then rides on a checkpoint's barrier, whose
//! epoch the change reports). A change the validator refuses changes nothing and the output
//! is as without it.
//!
//! The test defines its source and sink through a catalog of its own; the filter is anduin's.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anduin_graph::{Arity, Binding, Catalog, OperatorSignature, ParamKind, ParamSpec};
use anduin_operator_api::{
    Bound, BuildContext, Collector, Operator, OperatorError, RestoreIn, SnapshotOut, Source,
    SourcePoll,
};
use anduin_registry::BuiltinCatalog;
use anduin_runtime::control::{ChangeRequest, Control, ControlFailure, ParamInfo};
use anduin_runtime::{run, RunConfig};
use anduin_spec::OperatorDef;
use anduin_types::Diagnostics;
use arrow::array::{Array, Int64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use crossbeam_channel::{Receiver, Sender};

use crate::common;

const ROWS: i64 = 20_000;
const GATE: i64 = 7_000;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, true)]))
}

/// Instance `i` of `k`: the numbers `n < ROWS` with `n % k == i`, holding back those from
/// [`GATE`] on until the gate opens (it says when it has reached the gate).
struct Gated {
    next: i64,
    step: i64,
    reached: Sender<()>,
    told: bool,
    open: Receiver<()>,
    opened: bool,
}

impl Source for Gated {
    fn name(&self) -> &str {
        "numbers"
    }

    fn poll(&mut self, max_rows: usize, deadline: Instant) -> Result<SourcePoll, OperatorError> {
        if self.next >= ROWS {
            return Ok(SourcePoll::Exhausted);
        }
        if self.next >= GATE && !self.opened {
            if !self.told {
                self.told = true;
                let _ = self.reached.send(());
            }
            // Waits for the gate, but never past the deadline (the runtime injects barriers
            // between polls).
            match self.open.recv_deadline(deadline) {
                Ok(()) => self.opened = true,
                Err(_) => return Ok(SourcePoll::Idle),
            }
        }
        let limit = if self.opened { ROWS } else { GATE };
        let mut values = Vec::new();
        while self.next < limit && values.len() < max_rows.min(250) {
            values.push(self.next);
            self.next += self.step;
        }
        let batch = RecordBatch::try_new(schema(), vec![Arc::new(Int64Array::from(values))])
            .expect("valid");
        Ok(SourcePoll::Batch(batch))
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

/// Every number received, with how many times.
type Seen = Arc<Mutex<BTreeMap<i64, usize>>>;

struct Collect(Seen);

impl Operator for Collect {
    fn name(&self) -> &str {
        "collect"
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let n = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ints");
        let mut seen = self.0.lock().expect("not poisoned");
        for i in 0..n.len() {
            *seen.entry(n.value(i)).or_default() += 1;
        }
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
        kind: "gated",
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
    seen: Seen,
    reached: Sender<()>,
    open: Receiver<()>,
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

    fn bind(
        &self,
        op: &OperatorDef,
        inputs: &[(&str, SchemaRef)],
        declared: &[Option<SchemaRef>],
    ) -> Result<Binding<Bound>, Diagnostics> {
        let bound = match op.kind.as_str() {
            "gated" => {
                let (reached, open) = (self.reached.clone(), self.open.clone());
                Bound::Source(Arc::new(move |ctx: &BuildContext| {
                    Ok(Box::new(Gated {
                        next: ctx.instance as i64,
                        step: ctx.parallelism as i64,
                        reached: reached.clone(),
                        told: false,
                        open: open.clone(),
                        opened: false,
                    }))
                }))
            }
            "collect" => {
                let seen = Arc::clone(&self.seen);
                Bound::Operator(Arc::new(move |_| Ok(Box::new(Collect(Arc::clone(&seen))))))
            }
            _ => return BuiltinCatalog.bind(op, inputs, declared),
        };
        let outputs = if op.kind.as_str() == "gated" {
            vec![schema()]
        } else {
            vec![]
        };
        Ok(Binding {
            bound,
            outputs,
            warnings: Diagnostics::default(),
            partition_by: Vec::new(),
        })
    }
}

fn query(parallelism: usize) -> String {
    format!(
        r#"
operator name = "numbers", type = "gated" {{
  param parallelism = {parallelism}
  output name = "numbers"
}}
operator name = "even", type = "filter" {{
  input name = "numbers"
  param condition = "n % 2 = 0"
  output name = "kept"
}}
operator name = "collect", type = "collect" {{ input name = "kept" }}
"#
    )
}

/// What came of the run: the numbers the sink saw, and the change (or its refusal).
struct Outcome {
    seen: BTreeMap<i64, usize>,
    change: Result<anduin_runtime::control::ChangeRecord, ControlFailure>,
    history: usize,
    metrics: anduin_runtime::control::QueryMetrics,
}

/// Runs the query with `parallelism` source instances; once every instance waits at the
/// gate, sets the filter's condition to `value` (refused when the validator says so), then
/// opens the gate.
fn run_with_change(
    parallelism: usize,
    value: &str,
    checkpoints: Option<&std::path::Path>,
) -> Outcome {
    run_with(parallelism, checkpoints, |control| {
        control.set(ChangeRequest {
            operator: "even".into(),
            param: "condition".into(),
            value: value.into(),
            from: "test".into(),
        })
    })
}

/// Runs the query with `parallelism` source instances; once every instance waits at the
/// gate, does `act` with the query's control handle, then opens the gate.
fn run_with(
    parallelism: usize,
    checkpoints: Option<&std::path::Path>,
    act: impl FnOnce(&Control) -> Result<anduin_runtime::control::ChangeRecord, ControlFailure>,
) -> Outcome {
    let (reached_tx, reached_rx) = crossbeam_channel::unbounded();
    let (open_tx, open_rx) = crossbeam_channel::unbounded();
    let catalog = TestCatalog {
        seen: Arc::new(Mutex::new(BTreeMap::new())),
        reached: reached_tx,
        open: open_rx,
    };
    let spec = anduin_spec::parse_flow(&query(parallelism)).expect("parses");
    let (graph, _) = anduin_graph::check(&spec, &catalog).expect("checks");
    let params = BTreeMap::from([(
        "even".to_string(),
        vec![ParamInfo {
            name: "condition".into(),
            kind: "expression".into(),
            value: "n % 2 = 0".into(),
            doc: String::new(),
        }],
    )]);
    let control = Arc::new(Control::new(
        "gated",
        None,
        params,
        Box::new(|r: &ChangeRequest, _: &_| {
            if r.value.contains("nope") {
                Err(ControlFailure::Invalid {
                    operator: r.operator.clone(),
                    param: r.param.clone(),
                    message: "refused by the test's validator".into(),
                })
            } else {
                Ok(())
            }
        }),
    ));
    let config = RunConfig {
        batch_size: 300,
        linger: Duration::from_millis(5),
        control: Some(Arc::clone(&control)),
        checkpointing: checkpoints.map(|dir| common::checkpointing(dir, None, None)),
        ..RunConfig::default()
    };
    let ctx = BuildContext {
        checkpointing: checkpoints.is_some(),
        ..BuildContext::default()
    };
    let outcome = std::thread::scope(|s| {
        let runner = s.spawn(|| run(&graph, &config, &ctx));
        for _ in 0..parallelism {
            reached_rx.recv().expect("every instance reaches the gate");
        }
        let change = act(&control);
        for _ in 0..parallelism {
            open_tx.send(()).expect("the sources listen");
        }
        runner.join().expect("no panic").expect("runs");
        change
    });
    let seen = catalog.seen.lock().expect("not poisoned").clone();
    Outcome {
        seen,
        change: outcome,
        history: control.history().len(),
        metrics: control.metrics(),
    }
}

/// The rows before the gate kept by `n % 2 = 0`, the rows after it by `after`.
fn expected(after: impl Fn(i64) -> bool) -> BTreeMap<i64, usize> {
    (0..ROWS)
        .filter(|n| if *n < GATE { n % 2 == 0 } else { after(*n) })
        .map(|n| (n, 1))
        .collect()
}

#[test]
fn one_source_instance_switches_its_fused_filter_between_two_rows() {
    let o = run_with_change(1, "n % 3 = 0", None);
    let record = o.change.expect("applied");
    assert_eq!(record.old, "n % 2 = 0");
    assert_eq!(record.new, "n % 3 = 0");
    assert_eq!(record.from, "test");
    assert_eq!(
        record.epoch, 1,
        "the first barrier of a run without checkpoints"
    );
    assert_eq!(o.seen, expected(|n| n % 3 == 0));
}

#[test]
fn four_source_instances_switch_the_filter_at_one_aligned_barrier() {
    let o = run_with_change(4, "n % 3 = 0", None);
    o.change.expect("applied");
    assert_eq!(o.seen, expected(|n| n % 3 == 0));
}

#[test]
fn with_checkpoints_the_change_rides_on_a_checkpoint_barrier_that_records_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = run_with_change(4, "n % 5 = 1", Some(dir.path()));
    let record = o.change.expect("applied");
    assert_eq!(o.seen, expected(|n| n % 5 == 1));
    // The checkpoint of the change's epoch, and every later one, record it.
    let store = anduin_checkpoint::Store::open(dir.path()).expect("opens");
    let manifest = store
        .manifest(anduin_types::Epoch(record.epoch))
        .expect("reads")
        .expect("the change's checkpoint completed");
    assert_eq!(manifest.controls, vec![record]);
}

#[test]
fn a_refused_change_changes_nothing() {
    let o = run_with_change(4, "nope", None);
    assert!(
        matches!(&o.change, Err(ControlFailure::Invalid { message, .. }) if message.contains("refused")),
        "{:?}",
        o.change
    );
    assert_eq!(o.history, 0);
    assert_eq!(o.seen, expected(|n| n % 2 == 0));
}

#[test]
fn a_checkpoint_asked_for_completes_and_the_live_figures_count_every_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut epoch = None;
    let o = run_with(4, Some(dir.path()), |control| {
        epoch = Some(control.checkpoint().expect("completes"));
        let list = control.checkpoints().expect("lists");
        assert_eq!(list.last().map(|c| c.epoch), epoch);
        control.set(ChangeRequest {
            operator: "even".into(),
            param: "condition".into(),
            value: "n % 3 = 0".into(),
            from: "test".into(),
        })
    });
    let record = o.change.expect("applied");
    assert!(
        record.epoch > epoch.expect("taken"),
        "the change comes after the checkpoint"
    );
    assert_eq!(o.seen, expected(|n| n % 3 == 0));
    let filtered: Vec<_> = o
        .metrics
        .instances
        .iter()
        .filter(|m| m.operator == "even")
        .collect();
    assert_eq!(filtered.len(), 1, "the filter runs once");
    assert_eq!(filtered[0].rows_in, ROWS as u64);
    assert_eq!(filtered[0].rows_out, expected(|n| n % 3 == 0).len() as u64);
    let sources: u64 = o
        .metrics
        .instances
        .iter()
        .filter(|m| m.operator == "numbers")
        .map(|m| m.rows_out)
        .sum();
    assert_eq!(sources, ROWS as u64);
    assert_eq!(o.metrics.control_changes, 1);
    let c = o.metrics.checkpoints.expect("the run takes checkpoints");
    assert!(c.completed >= 2, "{c:?}");
}

#[test]
fn a_resume_of_a_query_without_the_changed_operator_is_refused_naming_the_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    run_with_change(1, "n % 3 = 0", Some(dir.path()))
        .change
        .expect("applied");
    let store = anduin_checkpoint::Store::open(dir.path()).expect("opens");
    let last = store
        .epochs()
        .expect("lists")
        .into_iter()
        .max()
        .expect("one");
    let restore = store.validate(last).expect("valid");
    // The same source and sink, without the filter.
    let (reached, _) = crossbeam_channel::unbounded();
    let (_, open) = crossbeam_channel::unbounded();
    let catalog = TestCatalog {
        seen: Arc::new(Mutex::new(BTreeMap::new())),
        reached,
        open,
    };
    let query = r#"
operator name = "numbers", type = "gated" { param parallelism = 1 output name = "numbers" }
operator name = "collect", type = "collect" { input name = "numbers" }
"#;
    let spec = anduin_spec::parse_flow(query).expect("parses");
    let (graph, _) = anduin_graph::check(&spec, &catalog).expect("checks");
    let config = RunConfig {
        checkpointing: Some(common::checkpointing(dir.path(), None, Some(restore))),
        ..RunConfig::default()
    };
    let ctx = BuildContext {
        checkpointing: true,
        ..BuildContext::default()
    };
    let e = run(&graph, &config, &ctx).expect_err("refused");
    let message = e.to_string();
    assert!(
        message.contains("\"even\"") && message.contains("no longer has"),
        "{message}"
    );
}
