//! `union`: merges several streams of one type into one.

use std::sync::Arc;

use anduin_graph::{describe_schema, schema_mismatch, Arity, Binding, OperatorSignature};
use anduin_spec::OperatorDef;
use anduin_types::{Diagnostic, Diagnostics};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;

use anduin_operator_api::Bound;
use anduin_operator_api::{Collector, Operator, OperatorError};

/// The `union` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "union",
    doc: "merges its inputs, which must have the same columns, into one stream (no order between inputs)",
    inputs: Arity::AtLeast(2),
    outputs: Arity::Exactly(1),
    stateful: false,
    params: &[],
};

/// Checks this operator's params and inputs as the query declares them, and binds it to a
/// factory of instances (called by the registry's catalog).
pub fn bind(op: &OperatorDef, inputs: &[(&str, SchemaRef)]) -> Result<Binding<Bound>, Diagnostics> {
    let first = same_columns(
        op,
        inputs,
        "union",
        "all inputs of a union need the same columns",
    )?;
    let name = op.name.to_string();
    let schema = Arc::clone(first);
    let out_schema = Arc::clone(first);
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |_| {
            Ok(Box::new(Union {
                name: name.clone(),
                schema: Arc::clone(&schema),
            }))
        })),
        outputs: vec![out_schema],
        warnings: Diagnostics::default(),
        partition_by: Vec::new(),
    })
}

/// The schema of the first of `inputs` of `op` (a `what`), or an error for each input whose
/// columns differ from it, ending with `why`.
pub(crate) fn same_columns<'a>(
    op: &OperatorDef,
    inputs: &'a [(&str, SchemaRef)],
    what: &str,
    why: &str,
) -> Result<&'a SchemaRef, Diagnostics> {
    let (first_name, first) = inputs.first().expect("arity checked: at least two inputs");
    let mut diags = Diagnostics::default();
    for (i, (name, schema)) in inputs.iter().enumerate().skip(1) {
        if let Some(problem) = schema_mismatch(first, schema) {
            diags.push(Diagnostic::error(
                op.inputs.get(i).map(|t| t.pos()).unwrap_or(op.pos),
                format!(
                    "input \"{name}\" of {what} \"{}\" has columns {} but input \"{first_name}\" has {} ({problem}): {why}",
                    op.name,
                    describe_schema(schema),
                    describe_schema(first)
                ),
            ));
        }
    }
    if diags.has_errors() {
        return Err(diags);
    }
    Ok(first)
}

/// A running union: batches pass through, relabelled with the union's schema.
struct Union {
    name: String,
    schema: SchemaRef,
}

impl Operator for Union {
    fn name(&self) -> &str {
        &self.name
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        if batch.schema() == self.schema {
            return out.collect(0, batch);
        }
        let relabelled = RecordBatch::try_new(Arc::clone(&self.schema), batch.columns().to_vec())
            .map_err(|e| OperatorError::Execution {
            operator: self.name.clone(),
            message: e.to_string(),
        })?;
        out.collect(0, relabelled)
    }

    /// Row by row: once every input is exhausted, so is its output.
    fn on_input_exhausted(
        &mut self,
        _input: usize,
        _out: &mut dyn Collector,
    ) -> Result<bool, OperatorError> {
        Ok(true)
    }
}
