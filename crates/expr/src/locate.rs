//! DataFusion's errors, located in the expression text and worded for users.

use datafusion_common::{DataFusionError, SchemaError};
use sqlparser::tokenizer::Location;

use crate::{ExprError, Scope};

/// Turns a DataFusion error into one located in the expression text, with a message that
/// names columns as the user wrote them.
pub(crate) fn located(e: &DataFusionError, start: Location, scope: &Scope) -> ExprError {
    let loc = e
        .diagnostic()
        .and_then(|d| d.span)
        .map(|s| Location::new(s.start.line, s.start.column))
        .unwrap_or(start);
    let (line, col) = if loc.line == 0 {
        (start.line, start.column)
    } else {
        (loc.line, loc.column)
    };
    {
        if let DataFusionError::SchemaError(inner, _) = e.find_root() {
            if let SchemaError::FieldNotFound { field, .. } = inner.as_ref() {
                let cols: Vec<&str> = scope
                    .schema
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect();
                let what = match &field.relation {
                    Some(r) if r.table() != scope.qualifier => {
                        format!(
                            "unknown stream `{r}` in `{field}`: expected `{}`",
                            scope.qualifier
                        )
                    }
                    _ => format!(
                        "unknown column `{}`: stream `{}` has {}",
                        field.name,
                        scope.qualifier,
                        cols.join(", ")
                    ),
                };
                return ExprError::at(line, col, what);
            }
        }
    }
    ExprError::at(line, col, clean_message(e))
}

/// DataFusion's message without its error-class prefix and backtrace.
pub(crate) fn clean_message(e: &DataFusionError) -> String {
    let root = e.find_root();
    let msg = root.message().to_string();
    let msg = msg.split("\n\nbacktrace").next().unwrap_or(&msg);
    msg.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
