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
/// DataFusion's message for a function given arguments of types it has no signature for (a
/// list of every signature tried, and a request to report a bug), said in a sentence.
fn no_signature(msg: &str) -> Option<String> {
    if !msg.contains("failed to match any signature") {
        return None;
    }
    let name = msg.split("Function '").nth(1)?.split('\'').next()?;
    let received = msg
        .split("but received ")
        .nth(1)
        .and_then(|r| r.split(" (").next())
        .map(|t| format!(" an argument of type {t}"))
        .unwrap_or_else(|| " these arguments".to_string());
    Some(format!(
        "function `{name}` does not take{received}: CAST the argument to a type it takes (e.g. CAST(… AS BIGINT))"
    ))
}

/// An error evaluating an expression: its message cleaned, and of kind
/// [`ExprErrorKind::Exhausted`](crate::ExprErrorKind::Exhausted) if a function ran out of
/// resources (DataFusion's `ResourcesExhausted`, which a user-defined function that ran out
/// of fuel returns).
pub(crate) fn evaluation_error(e: &DataFusionError) -> ExprError {
    let mut err = ExprError::whole(clean_message(e));
    if matches!(e.find_root(), DataFusionError::ResourcesExhausted(_)) {
        err.kind = crate::ExprErrorKind::Exhausted;
    }
    err
}

pub(crate) fn clean_message(e: &DataFusionError) -> String {
    let root = e.find_root();
    let msg = root.message().to_string();
    let msg = msg.split("\n\nbacktrace").next().unwrap_or(&msg);
    if let Some(short) = no_signature(msg) {
        return short;
    }
    // A function's own coercion (a user-defined function's) said what is wrong: its words.
    let msg = msg
        .split_once("user-defined coercion failed with: ")
        .map_or(msg, |(_, own)| own);
    let msg = msg.strip_prefix("Error during planning: ").unwrap_or(msg);
    msg.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_without_a_signature_for_its_argument_is_said_in_a_sentence() {
        let df = "Function 'sum' failed to match any signature, errors: Error during planning: Function 'sum' requires Decimal, but received String (DataType: Utf8).,Error during planning: Function 'sum' requires Int64, but received String (DataType: Utf8).. This issue was likely caused by a bug in DataFusion's code.";
        assert_eq!(
            no_signature(df).as_deref(),
            Some("function `sum` does not take an argument of type String: CAST the argument to a type it takes (e.g. CAST(… AS BIGINT))")
        );
        assert_eq!(no_signature("column `x` not found"), None);
    }
}
