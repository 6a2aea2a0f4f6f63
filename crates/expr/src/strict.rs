//! Where anduin is stricter than DataFusion: no silent number/text coercion, no aggregates
//! outside windows, no functions fixed at the moment a query starts.

use arrow::datatypes::DataType;
use datafusion_common::tree_node::{TreeNode, TreeNodeRecursion, TreeNodeVisitor};
use datafusion_common::DFSchema;
use datafusion_expr::type_coercion::binary::{comparison_coercion, BinaryTypeCoercer};
use datafusion_expr::{Between, BinaryExpr, Expr, ExprSchemable, Operator};
use sqlparser::tokenizer::Location;

use crate::ExprError;

/// Rejects comparisons and arithmetic between numbers and text, which DataFusion would
/// coerce silently (comparing `value < 'abc'` as strings).
///
/// One pass from the leaves up: the type of an operation is worked out from its operands'
/// (asking DataFusion for the whole subtree at each operation would be quadratic in a chain).
pub(crate) fn check_comparisons(
    e: &Expr,
    schema: &DFSchema,
    start: Location,
) -> Result<(), ExprError> {
    let mut check = Comparisons {
        schema,
        start,
        types: vec![Vec::new()],
        err: None,
    };
    let _ = e.visit(&mut check);
    match check.err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The types of the operands of the operations being visited.
struct Comparisons<'a> {
    schema: &'a DFSchema,
    start: Location,
    /// Per node being visited, the types of its children visited so far (`None`: not
    /// worked out, as for a function's result).
    types: Vec<Vec<Option<DataType>>>,
    err: Option<ExprError>,
}

impl<'n> TreeNodeVisitor<'n> for Comparisons<'_> {
    type Node = Expr;

    fn f_down(&mut self, _node: &'n Expr) -> datafusion_common::Result<TreeNodeRecursion> {
        self.types.push(Vec::new());
        Ok(TreeNodeRecursion::Continue)
    }

    fn f_up(&mut self, node: &'n Expr) -> datafusion_common::Result<TreeNodeRecursion> {
        let children = self.types.pop().unwrap_or_default();
        let ty = match node {
            Expr::BinaryExpr(b @ BinaryExpr { left, op, right }) => {
                let known = |i: usize, e: &Expr| {
                    children
                        .get(i)
                        .cloned()
                        .flatten()
                        .or_else(|| e.get_type(self.schema).ok())
                };
                match (known(0, left), known(1, right)) {
                    (Some(lt), Some(rt)) => {
                        if is_typed_op(*op) && mismatched(&lt, &rt) {
                            self.err = Some(mismatch(b, node, &lt, &rt, self.start));
                            return Ok(TreeNodeRecursion::Stop);
                        }
                        BinaryTypeCoercer::new(&lt, op, &rt).get_result_type().ok()
                    }
                    _ => None,
                }
            }
            Expr::Between(b) => {
                let known = |i: usize, e: &Expr| {
                    children
                        .get(i)
                        .cloned()
                        .flatten()
                        .or_else(|| e.get_type(self.schema).ok())
                };
                let types = (known(0, &b.expr), known(1, &b.low), known(2, &b.high));
                if let (Some(t), Some(low), Some(high)) = types {
                    if let Some(e) = between_mismatch(b, node, [&t, &low, &high], self.start) {
                        self.err = Some(e);
                        return Ok(TreeNodeRecursion::Stop);
                    }
                }
                Some(DataType::Boolean)
            }
            Expr::Column(_) | Expr::Literal(..) | Expr::Cast(_) | Expr::TryCast(_) => {
                node.get_type(self.schema).ok()
            }
            _ => None,
        };
        if let Some(parent) = self.types.last_mut() {
            parent.push(ty);
        }
        Ok(TreeNodeRecursion::Continue)
    }
}

fn mismatched(lt: &DataType, rt: &DataType) -> bool {
    (lt.is_numeric() && is_text(rt)) || (is_text(lt) && rt.is_numeric())
}

fn mismatch(
    b: &BinaryExpr,
    node: &Expr,
    lt: &DataType,
    rt: &DataType,
    start: Location,
) -> ExprError {
    let loc = first_span(node).unwrap_or(start);
    ExprError::at(
        loc.line,
        loc.column,
        format!(
            "type mismatch: `{}` is {} but `{}` is {}; cast one of them, e.g. CAST(… AS BIGINT)",
            show(&b.left),
            type_name(lt),
            show(&b.right),
            type_name(rt)
        ),
    )
}

/// `x BETWEEN low AND high` whose bounds cannot be compared with `x` (types `[x, low,
/// high]`): a timestamp between integers, a number between strings. DataFusion would
/// report it as an internal error ("likely caused by a bug in DataFusion's code"), or
/// compare numbers as text.
fn between_mismatch(
    b: &Between,
    node: &Expr,
    [t, low, high]: [&DataType; 3],
    start: Location,
) -> Option<ExprError> {
    let comparable = |a: &DataType, b: &DataType| {
        (!mismatched(a, b))
            .then(|| comparison_coercion(a, b))
            .flatten()
    };
    let (bound, bound_type) = match (comparable(t, low), comparable(t, high)) {
        (None, _) => (&b.low, low),
        (_, None) => (&b.high, high),
        (Some(l), Some(h)) if comparison_coercion(&l, &h).is_none() => (&b.high, high),
        _ => return None,
    };
    let loc = first_span(node).unwrap_or(start);
    let written = format!(
        "{} {}BETWEEN {} AND {}",
        show(&b.expr),
        if b.negated { "NOT " } else { "" },
        show(&b.low),
        show(&b.high)
    );
    Some(ExprError::at(
        loc.line,
        loc.column,
        format!(
            "type mismatch in `{written}`: `{}` is {} but its bound `{}` is {}; CAST the bound to {} (e.g. `CAST({} AS {})`)",
            show(&b.expr),
            type_name(t),
            show(bound),
            type_name(bound_type),
            type_name(t),
            show(bound),
            sql_type_name(t),
        ),
    ))
}

/// The SQL name of a column type, for a CAST in a message.
fn sql_type_name(t: &DataType) -> String {
    match anduin_types_name(t).as_deref() {
        Some("int") => "BIGINT",
        Some("double") => "DOUBLE",
        Some("bool") => "BOOLEAN",
        Some("string") => "VARCHAR",
        Some("timestamp") => "TIMESTAMP",
        _ => return t.to_string(),
    }
    .to_string()
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
                Ok(TreeNodeRecursion::Stop)
            }
            None => Ok(TreeNodeRecursion::Continue),
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
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    });
    found
}
