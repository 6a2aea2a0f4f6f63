//! `map`: computed columns and projection.

use std::sync::Arc;

use anduin_expr::{compile_projection, CompiledExpr, Scope};
use anduin_graph::{Arity, Binding, OperatorSignature, ParamKind, ParamSpec};
use anduin_spec::OperatorDef;
use anduin_types::Diagnostics;
use arrow::datatypes::{Schema, SchemaRef};
use arrow::record_batch::RecordBatch;

use crate::catalog::Bound;
use crate::params::Params;
use crate::{Collector, Operator, OperatorError};

/// The `map` operator type.
pub const SIGNATURE: OperatorSignature = OperatorSignature {
    kind: "map",
    doc: "computes new columns from each row (a projection): one output row per input row",
    inputs: Arity::Exactly(1),
    outputs: Arity::Exactly(1),
    stateful: false,
    params: &[ParamSpec {
        name: "columns",
        required: true,
        kind: ParamKind::Text,
        default: None,
        doc: "comma-separated SQL expressions, each optionally `AS name`, e.g. \"ts, sensor, value * 2 AS doubled\"; `*` keeps every input column",
    }],
};

pub(crate) fn bind(
    op: &OperatorDef,
    inputs: &[(&str, SchemaRef)],
) -> Result<Binding<Bound>, Diagnostics> {
    let p = Params::new(op);
    let (stream, schema) = inputs.first().expect("arity checked: one input");
    let scope = Scope::new(*stream, Arc::clone(schema));
    let text = p.required("columns");
    let exprs = compile_projection(text.as_str(), &scope)
        .and_then(|exprs| {
            exprs
                .into_iter()
                .map(CompiledExpr::into_stream_type)
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| p.expr_error("columns", &text, e))?;
    let out_schema: SchemaRef = Arc::new(Schema::new(
        exprs.iter().map(CompiledExpr::field).collect::<Vec<_>>(),
    ));
    let name = op.name.to_string();
    let schema_for_factory = Arc::clone(&out_schema);
    Ok(Binding {
        bound: Bound::Operator(Arc::new(move |_| {
            Ok(Box::new(Map {
                name: name.clone(),
                exprs: exprs.clone(),
                schema: Arc::clone(&schema_for_factory),
            }))
        })),
        outputs: vec![out_schema],
        warnings: Diagnostics::default(),
        partition_by: Vec::new(),
    })
}

/// A running map.
struct Map {
    name: String,
    exprs: Vec<CompiledExpr>,
    schema: SchemaRef,
}

impl Operator for Map {
    fn name(&self) -> &str {
        &self.name
    }

    fn process_batch(
        &mut self,
        _input: usize,
        batch: RecordBatch,
        out: &mut dyn Collector,
    ) -> Result<(), OperatorError> {
        let columns = self
            .exprs
            .iter()
            .map(|e| {
                e.evaluate(&batch).map_err(|err| OperatorError::Execution {
                    operator: self.name.clone(),
                    message: format!("column `{}` failed: {err}", e.name),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let result = RecordBatch::try_new(Arc::clone(&self.schema), columns).map_err(|e| {
            OperatorError::Execution {
                operator: self.name.clone(),
                message: e.to_string(),
            }
        })?;
        out.collect(0, result)
    }
}
