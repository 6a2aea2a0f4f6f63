//! A run that fails before its tasks start (here a sink that cannot be built, as a writer
//! whose output is in the way) lets go of its control plane as a run that fails while
//! running does: the query answers as failed, not as starting, and the control plane drops
//! the sender of reports it was given. A cluster's executor waits for every such sender to go
//! before it reports its part's end: one kept for ever held the part, and its query, for ever
//! (the hang that came to light as d61db25 left an embedded run's output file where a
//! cluster's part directory was to go).

use std::sync::Arc;
use std::time::Instant;

use anduin_graph::{Arity, Binding, Catalog, OperatorSignature};
use anduin_operator_api::{Bound, BuildContext, OperatorError, Source, SourcePoll};
use anduin_runtime::control::{ChangeRequest, Control, QueryState};
use anduin_runtime::{run, RunConfig};
use anduin_spec::OperatorDef;
use anduin_types::Diagnostics;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use crossbeam_channel::TryRecvError;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, true)]))
}

/// Never polled: the run fails before its tasks start.
struct Idle;

impl Source for Idle {
    fn name(&self) -> &str {
        "idle"
    }

    fn poll(&mut self, _max: usize, _deadline: Instant) -> Result<SourcePoll, OperatorError> {
        Ok(SourcePoll::Exhausted)
    }
}

static SIGS: &[OperatorSignature] = &[
    OperatorSignature {
        kind: "idle",
        doc: "",
        inputs: Arity::Exactly(0),
        outputs: Arity::Exactly(1),
        stateful: false,
        params: &[],
    },
    OperatorSignature {
        kind: "blocked",
        doc: "",
        inputs: Arity::Exactly(1),
        outputs: Arity::Exactly(0),
        stateful: false,
        params: &[],
    },
];

struct TestCatalog;

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
        let (bound, outputs) = if op.kind.as_str() == "idle" {
            let factory: Bound = Bound::Source(Arc::new(|_: &BuildContext| Ok(Box::new(Idle))));
            (factory, vec![schema()])
        } else {
            let factory: Bound = Bound::Operator(Arc::new(|_: &BuildContext| {
                Err(OperatorError::Config {
                    operator: "blocked".into(),
                    message: "its output is in the way".into(),
                })
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
operator name = "idle", type = "idle" { output name = "numbers" }
operator name = "blocked", type = "blocked" { input name = "numbers" }
"#;

#[test]
fn the_query_answers_as_failed_and_the_sender_of_reports_is_dropped() {
    let spec = anduin_spec::parse_flow(QUERY).expect("parses");
    let (graph, _) = anduin_graph::check(&spec, &TestCatalog).expect("checks");
    let control = Arc::new(Control::new(
        "blocked",
        None,
        Default::default(),
        Box::new(|_: &ChangeRequest, _: &_| Ok(())),
    ));
    // As a cluster's executor gives it the sender of its events.
    let (reports, forwarded) = crossbeam_channel::unbounded();
    control.forward_reports(reports);
    let config = RunConfig {
        control: Some(Arc::clone(&control)),
        ..RunConfig::default()
    };
    let failed =
        run(&graph, &config, &BuildContext::default()).expect_err("the sink cannot be built");
    assert!(
        failed.to_string().contains("its output is in the way"),
        "{failed}"
    );
    assert_eq!(control.info().state, QueryState::Failed);
    assert!(
        matches!(forwarded.try_recv(), Err(TryRecvError::Disconnected)),
        "the control plane still holds the sender of reports"
    );
}
