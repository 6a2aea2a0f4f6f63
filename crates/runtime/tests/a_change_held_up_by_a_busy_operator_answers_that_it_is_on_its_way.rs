//! A change that cannot reach its operator in time (the operator is busy: here it waits, in
//! the middle of a batch, until the test lets it go) gets an answer when `set`'s deadline
//! passes — the change is on its way — instead of hanging; a query that is stopping refuses
//! new changes at once; the change still applies when its barrier gets through, and the
//! history then shows it with the old value it replaced.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anduin_graph::{Arity, Binding, Catalog, OperatorSignature, ParamKind, ParamSpec};
use anduin_operator_api::{
    Bound, BuildContext, Collector, ControlError, Operator, OperatorError, Source, SourcePoll,
};
use anduin_runtime::control::{ChangeRequest, Control, ControlFailure, ParamInfo};
use anduin_runtime::{run, RunConfig};
use anduin_spec::OperatorDef;
use anduin_types::Diagnostics;
use arrow::array::Int64Array;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use crossbeam_channel::{Receiver, Sender};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, true)]))
}

/// Rows until the query is stopped.
struct Few;

impl Source for Few {
    fn name(&self) -> &str {
        "few"
    }

    fn poll(&mut self, _max: usize, _deadline: Instant) -> Result<SourcePoll, OperatorError> {
        let b = RecordBatch::try_new(schema(), vec![Arc::new(Int64Array::from(vec![1, 2, 3]))])
            .expect("valid");
        Ok(SourcePoll::Batch(b))
    }
}

/// Says when its first batch came, then waits until it is let go; its param `mode` can
/// change while running.
struct Busy {
    busy: Sender<()>,
    go: Receiver<()>,
    mode: String,
    gone: bool,
}

impl Operator for Busy {
    fn name(&self) -> &str {
        "busy"
    }

    fn process_batch(
        &mut self,
        _input: usize,
        _batch: RecordBatch,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        if !self.gone {
            self.gone = true;
            let _ = self.busy.send(());
            let _ = self.go.recv();
        }
        Ok(())
    }

    fn adjustable_params(&self) -> &'static [&'static str] {
        &["mode"]
    }

    fn set_param(&mut self, _param: &str, value: &str) -> Result<(), ControlError> {
        self.mode = value.to_string();
        Ok(())
    }
}

static SIGS: &[OperatorSignature] = &[
    OperatorSignature {
        kind: "few",
        doc: "",
        inputs: Arity::Exactly(0),
        outputs: Arity::Exactly(1),
        stateful: false,
        params: &[],
    },
    OperatorSignature {
        kind: "busy",
        doc: "",
        inputs: Arity::Exactly(1),
        outputs: Arity::Exactly(0),
        stateful: false,
        params: &[ParamSpec {
            name: "mode",
            required: false,
            kind: ParamKind::Text,
            default: Some("a"),
            doc: "",
        }],
    },
];

struct TestCatalog {
    busy: Sender<()>,
    go: Receiver<()>,
}

impl Catalog for TestCatalog {
    type Bound = Bound;

    fn signature(&self, kind: &str) -> Option<&OperatorSignature> {
        SIGS.iter().find(|s| s.kind == kind)
    }

    fn kinds(&self) -> Vec<&'static str> {
        SIGS.iter().map(|s| s.kind).collect()
    }

    fn bind(
        &self,
        op: &OperatorDef,
        _inputs: &[(&str, SchemaRef)],
        _declared: &[Option<SchemaRef>],
    ) -> Result<Binding<Bound>, Diagnostics> {
        let (bound, outputs) = if op.kind.as_str() == "few" {
            let factory: Bound = Bound::Source(Arc::new(|_: &BuildContext| Ok(Box::new(Few))));
            (factory, vec![schema()])
        } else {
            let (busy, go) = (self.busy.clone(), self.go.clone());
            let factory: Bound = Bound::Operator(Arc::new(move |_: &BuildContext| {
                Ok(Box::new(Busy {
                    busy: busy.clone(),
                    go: go.clone(),
                    mode: "a".into(),
                    gone: false,
                }))
            }));
            (factory, vec![])
        };
        Ok(Binding {
            bound,
            outputs,
            warnings: Diagnostics::default(),
            partition_by: Vec::new(),
        })
    }
}

const QUERY: &str = r#"
operator name = "few", type = "few" { output name = "numbers" }
operator name = "busy", type = "busy" { input name = "numbers" }
"#;

fn change(value: &str) -> ChangeRequest {
    ChangeRequest {
        operator: "busy".into(),
        param: "mode".into(),
        value: value.into(),
        from: "test".into(),
    }
}

#[test]
fn a_change_held_up_answers_that_it_is_on_its_way_and_applies_once_it_gets_through() {
    let (busy_tx, busy_rx) = crossbeam_channel::unbounded();
    let (go_tx, go_rx) = crossbeam_channel::unbounded();
    let catalog = TestCatalog {
        busy: busy_tx,
        go: go_rx,
    };
    let spec = anduin_spec::parse_flow(QUERY).expect("parses");
    let (graph, _) = anduin_graph::check(&spec, &catalog).expect("checks");
    let params = std::collections::BTreeMap::from([(
        "busy".to_string(),
        vec![ParamInfo {
            name: "mode".into(),
            kind: "text".into(),
            value: "a".into(),
            doc: String::new(),
        }],
    )]);
    let control = Arc::new(
        Control::new(
            "busy",
            None,
            params,
            Box::new(|_: &ChangeRequest, _: &_| Ok(())),
        )
        .with_deadline(Duration::from_millis(20)),
    );
    let config = RunConfig {
        control: Some(Arc::clone(&control)),
        chaining: false,
        ..RunConfig::default()
    };
    let ctx = BuildContext::default();
    std::thread::scope(|s| {
        let runner = s.spawn(|| run(&graph, &config, &ctx));
        busy_rx
            .recv()
            .expect("the operator is busy with its first batch");
        // The barrier waits behind the batch the operator is busy with.
        match control.set(change("b")) {
            Err(ControlFailure::NotYetApplied { seq, operator, .. }) => {
                assert_eq!((seq, operator.as_str()), (1, "busy"));
            }
            other => panic!("the change cannot have been applied: {other:?}"),
        }
        // A second change of the same param queues behind the first.
        assert!(matches!(
            control.set(change("c")),
            Err(ControlFailure::NotYetApplied { seq: 2, .. })
        ));
        control.stop().expect("stops");
        assert!(
            matches!(
                control.set(change("d")),
                Err(ControlFailure::NotRunning { .. })
            ),
            "a stopping query refuses changes at once"
        );
        go_tx.send(()).expect("lets the operator go");
        runner.join().expect("no panic").expect("runs");
    });
    let history = control.history();
    let changes: Vec<(&str, &str)> = history
        .iter()
        .map(|r| (r.old.as_str(), r.new.as_str()))
        .collect();
    assert_eq!(changes, vec![("a", "b"), ("b", "c")]);
}
