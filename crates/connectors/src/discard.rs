//! `discard`: a sink that drops its input (Flink's and Nexmark's "blackhole"), for
//! benchmarks and for queries whose only output is their side effects.

use std::sync::Arc;

use anduin_graph::{Arity, Binding, OperatorSignature};
use anduin_spec::OperatorDef;
use anduin_types::Diagnostics;
use arrow::record_batch::RecordBatch;

use anduin_operator_api::Bound;
use anduin_operator_api::{Collector, Operator, OperatorError};

/// The `discard` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "discard",
    doc: "drops every row it receives (a blackhole sink; the run summary still counts them)",
    inputs: Arity::Exactly(1),
    outputs: Arity::Exactly(0),
    stateful: false,
    params: &[],
};

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(op: &OperatorDef) -> Result<Binding<Bound>, Diagnostics> {
    let name = op.name.to_string();
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |_| {
            Ok(Box::new(Discard { name: name.clone() }))
        })),
        outputs: vec![],
        warnings: Diagnostics::default(),
        partition_by: Vec::new(),
    })
}

/// A running discard sink.
struct Discard {
    name: String,
}

impl Operator for Discard {
    fn name(&self) -> &str {
        &self.name
    }

    fn process_batch(
        &mut self,
        _input: usize,
        _batch: RecordBatch,
        _out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        Ok(())
    }
}
