//! The parts of DEFINE conditions and MEASURES that the pattern's own interpreter does not
//! evaluate (scalar functions such as `abs`, `lower` or `coalesce`, `CASE`, `LIKE`, `IN (…)`,
//! `||`, `DECIMAL` and casts to any type DataFusion knows), evaluated by DataFusion as a
//! `map` evaluates them, with the same functions, types and messages.
//!
//! Such a part is compiled with its pattern references (`A.x`, `PREV(x)`, `LAST(B.x, 1)`,
//! `CLASSIFIER()`, aggregates over a variable's rows) replaced by columns of a one-row batch
//! ("slots"): the interpreter computes the slots on the match, DataFusion the rest. Its
//! result is cast to the type a stream carries (a `DECIMAL` becomes a `DOUBLE`, as in a `map`).
//! AND, OR, NOT and IS NULL above such parts stay with the interpreter, which evaluates the
//! right side of AND and OR only when the left one does not decide.

use std::ops::ControlFlow;
use std::sync::Arc;

use anduin_expr::{CompiledExpr, ExprError, FunctionProvider};
use anduin_types::ColumnType;
use arrow::array::{new_null_array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use sqlparser::ast::{Expr, Ident, ObjectNamePart, Spanned, VisitMut, VisitorMut};

use super::calls;
use super::cells::{cells_to_column, column_to_cells};
use super::expr::{at, compile, Scope, Typed, E};
use super::value::{EvalError, Value};

/// A part of an expression that DataFusion evaluates, over its slots.
#[derive(Debug)]
pub(crate) struct Df {
    compiled: CompiledExpr,
    /// The slots' columns.
    schema: SchemaRef,
    /// Each slot's type (`None`: a bare NULL).
    types: Vec<Option<ColumnType>>,
    /// The result's type.
    out: ColumnType,
}

impl PartialEq for Df {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

fn slot_name(i: usize) -> String {
    format!("__slot{i}")
}

/// Replaces the pattern references of an expression by slots, compiling each.
struct Slots<'s, 'a> {
    scope: &'s Scope<'a>,
    /// Each slot's text as written and its compiled reference.
    leaves: Vec<(String, Typed)>,
}

impl VisitorMut for Slots<'_, '_> {
    type Break = ExprError;

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<ExprError> {
        if let Some(case) = if_as_case(e) {
            *e = case;
        }
        if matches!(
            e,
            Expr::Subquery(_) | Expr::InSubquery { .. } | Expr::Exists { .. }
        ) {
            return ControlFlow::Break(at(
                e.span(),
                format!("a subquery (`{e}`) is not supported in a pattern's DEFINE or MEASURES: a condition or a measure reads the rows of the match"),
            ));
        }
        let leaf = match e {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => true,
            Expr::Function(f) => {
                let name = match f.name.0.as_slice() {
                    [ObjectNamePart::Identifier(id)] => id.value.to_uppercase(),
                    _ => String::new(),
                };
                if calls::is_pattern_function(&name) {
                    true
                } else if let Some(err) = calls::not_scalar(&name, &f.name, f.name.span()) {
                    return ControlFlow::Break(err);
                } else {
                    false
                }
            }
            _ => false,
        };
        if !leaf {
            return ControlFlow::Continue(());
        }
        let text = e.to_string();
        let i = match self.leaves.iter().position(|(t, _)| *t == text) {
            Some(i) => i,
            None => match compile(e, self.scope) {
                Ok(t) => {
                    self.leaves.push((text, t));
                    self.leaves.len() - 1
                }
                Err(err) => return ControlFlow::Break(err),
            },
        };
        let span = e.span();
        let mut id = Ident::with_quote('"', slot_name(i));
        id.span = span;
        *e = Expr::Identifier(id);
        ControlFlow::Continue(())
    }
}

/// `IF(condition, then, else)` (Trino's, Spark's) as the `CASE` DataFusion evaluates.
fn if_as_case(e: &Expr) -> Option<Expr> {
    use sqlparser::ast::{
        helpers::attached_token::AttachedToken, CaseWhen, FunctionArg, FunctionArgExpr,
        FunctionArguments,
    };
    let Expr::Function(f) = e else { return None };
    let [ObjectNamePart::Identifier(id)] = f.name.0.as_slice() else {
        return None;
    };
    if !id.value.eq_ignore_ascii_case("IF") {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    let args: Vec<&Expr> = list
        .args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => Some(x),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let (cond, then, otherwise) = match args.as_slice() {
        [c, t] => (*c, *t, None),
        [c, t, o] => (*c, *t, Some(Box::new((*o).clone()))),
        _ => return None,
    };
    Some(Expr::Case {
        case_token: AttachedToken::empty(),
        end_token: AttachedToken::empty(),
        operand: None,
        conditions: vec![CaseWhen {
            condition: cond.clone(),
            result: then.clone(),
        }],
        else_result: otherwise,
    })
}

/// Compiles `e` with DataFusion over slots for its pattern references.
pub(crate) fn compile_df(e: &Expr, s: &Scope<'_>) -> Result<Typed, ExprError> {
    let mut sql = e.clone();
    let mut slots = Slots {
        scope: s,
        leaves: Vec::new(),
    };
    if let ControlFlow::Break(err) = sql.visit(&mut slots) {
        return Err(err);
    }
    let leaves = slots.leaves;
    let fields: Vec<Field> = leaves
        .iter()
        .enumerate()
        .map(|(i, (_, t))| {
            Field::new(
                slot_name(i),
                t.ty.map_or(DataType::Null, ColumnType::arrow_type),
                true,
            )
        })
        .collect();
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let scope = anduin_expr::Scope::new("match", Arc::clone(&schema));
    let renamed = |mut err: ExprError| {
        for (i, (text, _)) in leaves.iter().enumerate().rev() {
            let name = slot_name(i);
            err.message = err
                .message
                .replace(&format!("match.{name}"), text)
                .replace(&name, text);
        }
        err
    };
    let compiled = anduin_expr::compile_parsed(sql, &scope, s.depth)
        .and_then(CompiledExpr::into_stream_type)
        .map_err(renamed)?;
    let ty = ColumnType::from_arrow(&compiled.data_type);
    let out = match (ty, &compiled.data_type) {
        (Some(t), _) => t,
        (None, DataType::Null) => ColumnType::Int,
        (None, other) => {
            return Err(at(
                e.span(),
                format!("`{e}` is of type {other}, which a pattern cannot compute with yet"),
            ))
        }
    };
    let types = leaves.iter().map(|(_, t)| t.ty).collect();
    let args = leaves.into_iter().map(|(_, t)| t.e).collect();
    Ok(Typed {
        e: E::Df(
            Arc::new(Df {
                compiled,
                schema,
                types,
                out,
            }),
            args,
        ),
        ty,
    })
}

impl Df {
    /// The first function it calls whose value changes between calls (`random()`), if any.
    pub(crate) fn volatile_function(&self) -> Option<String> {
        self.compiled.volatile_function()
    }

    /// The value over the slots' values `args`.
    pub(crate) fn eval(&self, args: &[Value]) -> Result<Value, EvalError> {
        let columns: Vec<ArrayRef> = args
            .iter()
            .zip(&self.types)
            .map(|(v, t)| match t {
                Some(t) => cells_to_column(std::iter::once(v), *t),
                None => new_null_array(&DataType::Null, 1),
            })
            .collect();
        let batch = RecordBatch::try_new_with_options(
            Arc::clone(&self.schema),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(1)),
        )
        .map_err(|e| EvalError::row(e.to_string().into()))?;
        let out = self.compiled.evaluate(&batch).map_err(EvalError::of)?;
        let cells = column_to_cells(&out, self.out).map_err(|e| EvalError::row(e.into()))?;
        Ok(cells.into_iter().next().unwrap_or(Value::Null))
    }
}

/// Whether the interpreter leaves `e` (not a part of it) to DataFusion: what it does not
/// evaluate itself, and arithmetic, comparisons and casts over such parts (so that a
/// `DECIMAL` computes as a `DECIMAL`). AND, OR, NOT and IS NULL are the interpreter's.
pub(crate) fn needs_df(e: &Expr) -> bool {
    use sqlparser::ast::{BinaryOperator as B, CastKind, UnaryOperator as U};
    match e {
        Expr::Nested(x) => needs_df(x),
        Expr::Value(v) => super::expr::literal(&v.value).is_none(),
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => false,
        Expr::Function(f) => {
            let name = match f.name.0.as_slice() {
                [ObjectNamePart::Identifier(id)] => id.value.to_uppercase(),
                _ => return true,
            };
            !calls::is_pattern_function(&name)
        }
        Expr::BinaryOp { left, op, right } => match op {
            B::And | B::Or => false,
            B::Plus
            | B::Minus
            | B::Multiply
            | B::Divide
            | B::Modulo
            | B::Eq
            | B::NotEq
            | B::Lt
            | B::LtEq
            | B::Gt
            | B::GtEq => needs_df(left) || needs_df(right),
            _ => true,
        },
        Expr::UnaryOp { op, expr } => match op {
            U::Not => false,
            U::Minus | U::Plus => needs_df(expr),
            _ => true,
        },
        Expr::IsNull(_) | Expr::IsNotNull(_) => false,
        Expr::Between {
            expr, low, high, ..
        } => needs_df(expr) || needs_df(low) || needs_df(high),
        Expr::Cast {
            kind: CastKind::Cast | CastKind::DoubleColon,
            expr,
            data_type,
            format: None,
            ..
        } => ColumnType::parse(&data_type.to_string().to_lowercase()).is_none() || needs_df(expr),
        _ => true,
    }
}

/// Whether DataFusion knows `name` as a scalar function.
pub(crate) fn is_scalar(name: &str) -> bool {
    FunctionProvider::get().is_scalar(name)
}

/// Whether DataFusion knows `name` as an aggregate function.
pub(crate) fn is_aggregate(name: &str) -> bool {
    FunctionProvider::get().is_aggregate(name)
}

#[cfg(test)]
mod tests {
    use super::super::expr::{compile_defines, compile_measures};
    use super::*;

    #[test]
    fn a_subquery_is_refused_naming_it_and_its_place() {
        let columns: Vec<(String, ColumnType)> = vec![("x".into(), ColumnType::Int)];
        let vars = vec!["A".to_string()];
        let scope = Scope::new(&columns, &vars);
        for (text, at) in [
            ("A AS A.x IN (SELECT 1)", (1, 6)),
            ("A AS x > 0 AND EXISTS (SELECT 1)", (1, 24)),
            ("A AS coalesce((SELECT 1), x) > 0", (1, 16)),
        ] {
            let e = compile_defines(text, &scope).expect_err(text);
            assert!(
                e.message.starts_with("a subquery (`")
                    && e.message
                        .contains("is not supported in a pattern's DEFINE or MEASURES"),
                "{text}: {e}"
            );
            assert_eq!((e.line, e.col), at, "{text}: {e}");
        }
        let e = compile_measures("(SELECT 1) AS m", &scope).expect_err("a measure");
        assert!(e.message.starts_with("a subquery"), "{e}");
    }
}
