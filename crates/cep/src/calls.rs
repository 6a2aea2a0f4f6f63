//! Function calls in DEFINE conditions and MEASURES: navigation (`PREV`, `FIRST`, `LAST`),
//! aggregates over a variable's rows (`COUNT`, `SUM`, `AVG`, `MIN`, `MAX`), `CLASSIFIER()` and
//! `MATCH_NUMBER()`.

use anduin_expr::ExprError;
use anduin_types::ColumnType;
use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectNamePart, Spanned,
    Value as SqlValue,
};

use super::expr::{at, column, compile, numeric, variable, AggFn, Base, RowRef, Scope, Typed, E};

/// The arguments of a call, as expressions; `*` and `V.*` as `Err(variable)`.
enum Arg<'a> {
    Expr(&'a Expr),
    Star(Option<&'a Ident>),
}

pub(super) fn function(
    node: &Expr,
    f: &sqlparser::ast::Function,
    s: &Scope<'_>,
) -> Result<Typed, ExprError> {
    let name = match f.name.0.as_slice() {
        [ObjectNamePart::Identifier(id)] => id.value.to_uppercase(),
        _ => return Err(at(node.span(), format!("unknown function `{}`", f.name))),
    };
    let args: Vec<Arg<'_>> = match &f.args {
        FunctionArguments::None => Vec::new(),
        FunctionArguments::List(list) => {
            if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
                return Err(at(
                    node.span(),
                    format!("`{node}` is not supported in a pattern yet"),
                ));
            }
            list.args
                .iter()
                .map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(Arg::Expr(e)),
                    FunctionArg::Unnamed(FunctionArgExpr::Wildcard) => Ok(Arg::Star(None)),
                    FunctionArg::Unnamed(FunctionArgExpr::QualifiedWildcard(o)) => {
                        match o.0.as_slice() {
                            [ObjectNamePart::Identifier(v)] => Ok(Arg::Star(Some(v))),
                            _ => Err(at(node.span(), format!("expected `V.*`, found `{o}.*`"))),
                        }
                    }
                    _ => Err(at(node.span(), format!("unsupported argument in `{node}`"))),
                })
                .collect::<Result<_, _>>()?
        }
        FunctionArguments::Subquery(_) => {
            return Err(at(node.span(), "a subquery is not supported in a pattern"))
        }
    };
    if f.filter.is_some() || f.over.is_some() || !f.within_group.is_empty() {
        return Err(at(
            node.span(),
            format!("`{node}` is not supported in a pattern yet"),
        ));
    }
    let typed = |e: E, ty: ColumnType| Ok(Typed { e, ty: Some(ty) });
    match (name.as_str(), args.as_slice()) {
        ("PREV", [Arg::Expr(r)] | [Arg::Expr(r), Arg::Expr(_)]) => {
            let n = offset(node, &args)?;
            let (mut row, col, ty) = navigation(r, s)?;
            row.back += n;
            typed(E::Col(row, col), ty)
        }
        ("NEXT", _) => Err(at(
            node.span(),
            "NEXT looks at rows that have not arrived: it is not supported in a stream (use PREV on a later variable)",
        )),
        ("FIRST" | "LAST", [Arg::Expr(r)] | [Arg::Expr(r), Arg::Expr(_)]) => {
            let n = offset(node, &args)?;
            let (var, col, ty) = column(r, s)?;
            let base = if name == "FIRST" {
                Base::First { var, n }
            } else {
                Base::Last { var, n }
            };
            typed(E::Col(RowRef { base, back: 0 }, col), ty)
        }
        ("CLASSIFIER", []) => typed(
            E::Classifier(RowRef {
                base: Base::Last { var: None, n: 0 },
                back: 0,
            }),
            ColumnType::String,
        ),
        ("MATCH_NUMBER", []) => typed(E::MatchNumber, ColumnType::Int),
        ("COUNT", [Arg::Star(v)]) => typed(
            E::Agg {
                f: AggFn::Count,
                var: v.map(|v| variable(v, s)).transpose()?,
                col: None,
            },
            ColumnType::Int,
        ),
        ("COUNT" | "SUM" | "AVG" | "MIN" | "MAX", [Arg::Expr(c)]) => {
            let (var, col, ty) = column(c, s)?;
            let f = match name.as_str() {
                "COUNT" => AggFn::Count,
                "SUM" => AggFn::Sum,
                "AVG" => AggFn::Avg,
                "MIN" => AggFn::Min,
                _ => AggFn::Max,
            };
            if matches!(f, AggFn::Sum | AggFn::Avg) && !numeric(ty) {
                return Err(at(c.span(), format!("{name} needs a number, `{c}` is {}", ty.name())));
            }
            let out = match f {
                AggFn::Count => ColumnType::Int,
                AggFn::Avg => ColumnType::Double,
                _ => ty,
            };
            typed(E::Agg { f, var, col: Some(col) }, out)
        }
        ("PREV" | "FIRST" | "LAST" | "COUNT" | "SUM" | "AVG" | "MIN" | "MAX" | "CLASSIFIER" | "MATCH_NUMBER", _) => {
            Err(at(node.span(), format!("wrong arguments for {name} in `{node}`")))
        }
        _ => Err(at(
            node.span(),
            format!("the function `{}` is not supported in a pattern yet: PREV, FIRST, LAST, COUNT, SUM, AVG, MIN, MAX, CLASSIFIER and MATCH_NUMBER are", f.name),
        )),
    }
}

/// The optional second argument of PREV/FIRST/LAST: a non-negative whole number (default
/// 1 for PREV, 0 for FIRST/LAST).
fn offset(node: &Expr, args: &[Arg<'_>]) -> Result<usize, ExprError> {
    let is_prev =
        matches!(node, Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("PREV"));
    match args.get(1) {
        None => Ok(usize::from(is_prev)),
        Some(Arg::Expr(Expr::Value(v))) => match &v.value {
            SqlValue::Number(n, _) => n.parse().map_err(|_| {
                at(
                    node.span(),
                    format!("the offset `{n}` must be a whole number ≥ 0"),
                )
            }),
            other => Err(at(
                node.span(),
                format!("the offset `{other}` must be a whole number ≥ 0"),
            )),
        },
        Some(_) => Err(at(node.span(), "the offset must be a whole number ≥ 0")),
    }
}

/// The argument of PREV: a column reference or FIRST/LAST of one.
fn navigation(r: &Expr, s: &Scope<'_>) -> Result<(RowRef, usize, ColumnType), ExprError> {
    match compile(r, s)? {
        Typed {
            e: E::Col(row, col),
            ty: Some(ty),
        } => Ok((row, col, ty)),
        _ => Err(at(
            r.span(),
            format!("PREV takes a column (`x`, `A.x`) or FIRST/LAST of one, found `{r}`"),
        )),
    }
}
