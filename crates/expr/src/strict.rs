//! Where anduin is stricter than DataFusion: no silent number/text coercion, no aggregates
//! outside windows, no functions fixed at the moment a query starts.

use arrow::datatypes::DataType;
use datafusion_common::tree_node::TreeNode;
use datafusion_common::DFSchema;
use datafusion_expr::{BinaryExpr, Expr, ExprSchemable, Operator};
use sqlparser::tokenizer::Location;

use crate::ExprError;

/// Rejects comparisons and arithmetic between numbers and text, which DataFusion would
/// coerce silently (comparing `value < 'abc'` as strings).
pub(crate) fn check_comparisons(
    e: &Expr,
    schema: &DFSchema,
    start: Location,
) -> Result<(), ExprError> {
    let mut err = None;
    let _ = e.apply(|node| {
        if let Expr::BinaryExpr(BinaryExpr { left, op, right }) = node {
            if is_typed_op(*op) {
                let (lt, rt) = (left.get_type(schema), right.get_type(schema));
                if let (Ok(lt), Ok(rt)) = (lt, rt) {
                    if (lt.is_numeric() && is_text(&rt)) || (is_text(&lt) && rt.is_numeric()) {
                        let loc = first_span(node).unwrap_or(start);
                        err = Some(ExprError::at(
                            loc.line,
                            loc.column,
                            format!(
                                "type mismatch: `{}` is {} but `{}` is {}; cast one of them, e.g. CAST(… AS BIGINT)",
                                show(left),
                                type_name(&lt),
                                show(right),
                                type_name(&rt)
                            ),
                        ));
                        return Ok(datafusion_common::tree_node::TreeNodeRecursion::Stop);
                    }
                }
            }
        }
        Ok(datafusion_common::tree_node::TreeNodeRecursion::Continue)
    });
    match err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Rejects what a streaming expression cannot evaluate row by row: aggregates (they need a
/// window) and functions fixed when a query starts (`now()`, `current_date`, …).
pub(crate) fn check_functions(e: &Expr, start: Location) -> Result<(), ExprError> {
    let mut err = None;
    let _ = e.apply(|node| {
        let problem = match node {
            Expr::AggregateFunction(a) => Some(format!(
                "aggregate function `{}` is not allowed here: aggregates need a window operator",
                a.func.name()
            )),
            Expr::WindowFunction(_) => {
                Some("window functions (`… OVER (…)`) are not supported in expressions".to_string())
            }
            Expr::ScalarFunction(f)
                if f.func.signature().volatility == datafusion_expr::Volatility::Stable =>
            {
                Some(format!(
                    "`{}()` would be fixed at the moment the query starts, which a continuous query cannot use: compare with an event-time column instead",
                    f.func.name()
                ))
            }
            _ => None,
        };
        match problem {
            Some(p) => {
                err = Some(ExprError::at(start.line, start.column, p));
                Ok(datafusion_common::tree_node::TreeNodeRecursion::Stop)
            }
            None => Ok(datafusion_common::tree_node::TreeNodeRecursion::Continue),
        }
    });
    match err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// An expression as a user would write it: `value`, `'abc'`, `value + 1`.
fn show(e: &Expr) -> String {
    match e {
        Expr::Column(c) => c.name.clone(),
        Expr::Literal(datafusion_common::ScalarValue::Utf8(Some(s)), _) => {
            format!("'{}'", s.replace('\'', "''"))
        }
        other => other.human_display().to_string(),
    }
}

fn is_typed_op(op: Operator) -> bool {
    use Operator::*;
    matches!(
        op,
        Eq | NotEq | Lt | LtEq | Gt | GtEq | Plus | Minus | Multiply | Divide | Modulo
    )
}

fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

fn type_name(t: &DataType) -> String {
    anduin_types_name(t).unwrap_or_else(|| t.to_string())
}

fn anduin_types_name(t: &DataType) -> Option<String> {
    Some(
        match t {
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => "int",
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => "int",
            DataType::Float16 | DataType::Float32 | DataType::Float64 => "double",
            DataType::Boolean => "bool",
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "string",
            DataType::Timestamp(_, _) => "timestamp",
            _ => return None,
        }
        .to_string(),
    )
}

/// The start of the first column reference in `e` that carries a source span.
fn first_span(e: &Expr) -> Option<Location> {
    let mut found = None;
    let _ = e.apply(|node| {
        if let Expr::Column(c) = node {
            if let Some(s) = c.spans().first() {
                found = Some(Location::new(s.start.line, s.start.column));
                return Ok(datafusion_common::tree_node::TreeNodeRecursion::Stop);
            }
        }
        Ok(datafusion_common::tree_node::TreeNodeRecursion::Continue)
    });
    found
}
