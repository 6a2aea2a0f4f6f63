//! The schema a source declares for its single output.

use std::sync::Arc;

use anduin_spec::OperatorDef;
use anduin_types::{Diagnostic, Diagnostics};
use arrow::datatypes::SchemaRef;

/// The schema of a source's single output, which must be declared.
pub(crate) fn declared_source_schema(
    op: &OperatorDef,
    declared: &[Option<SchemaRef>],
) -> Result<SchemaRef, Diagnostics> {
    match declared.first() {
        Some(Some(s)) => Ok(Arc::clone(s)),
        _ => {
            let pos = op.outputs.first().map(|o| o.name.pos()).unwrap_or(op.pos);
            Err(Diagnostic::error(
                pos,
                format!(
                    "the output of {} \"{}\" needs a type: `output name = \"…\", type = \"…\"`",
                    op.kind, op.name
                ),
            )
            .into())
        }
    }
}
