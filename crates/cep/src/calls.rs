//! The pattern's own function calls in DEFINE conditions and MEASURES: navigation (`PREV`,
//! `NEXT`, `FIRST`, `LAST`, of any expression: [`super::navigation`]), aggregates over a
//! variable's rows (`COUNT`, `SUM`, `AVG`, `MIN`, `MAX`, `MAX_BY`, `MIN_BY`,
//! `BOOL_AND`/`EVERY`, `BOOL_OR`, `ANY_VALUE`/`ARBITRARY`, `COUNT_IF`, the measures of spread,
//! `STRING_AGG`/`LISTAGG` and `ARRAY_AGG` (a measure's whole expression), with `WITHIN GROUP (ORDER BY …)`, `APPROX_DISTINCT`) of any expression, `CLASSIFIER()` and
//! `MATCH_NUMBER()`, each optionally `FINAL` in a measure.
//! Other functions are DataFusion's scalar functions ([`super::df`]).

use anduin_expr::ExprError;
use anduin_types::ColumnType;
use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArgumentClause, FunctionArguments, Ident,
    ObjectNamePart, OrderByExpr, Spanned, Value as SqlValue,
};

use super::expr::{
    at, compile, numeric, selector, Agg, AggFn, Base, RowRef, Scope, Sel, SortKey, Spread, Typed, E,
};
use super::navigation::{navigate, Nav};
use super::value::Value;

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
    if !is_pattern_function(&name) {
        return Err(not_scalar(&name, &f.name, node.span()).unwrap_or_else(|| {
            at(
                node.span(),
                format!("`{}` is computed by DataFusion", f.name),
            )
        }));
    }
    let mut distinct = false;
    // `WITHIN GROUP (ORDER BY …)`, or the same ORDER BY inside the arguments (PostgreSQL's and
    // DataFusion's `string_agg(x, ',' ORDER BY y)`).
    let mut order_by: &[OrderByExpr] = &f.within_group;
    let args: Vec<Arg<'_>> = match &f.args {
        FunctionArguments::None => Vec::new(),
        FunctionArguments::List(list) => {
            match list.clauses.as_slice() {
                [] => {}
                [FunctionArgumentClause::OrderBy(keys)] if f.within_group.is_empty() => {
                    order_by = keys
                }
                _ => {
                    return Err(at(
                        node.span(),
                        format!("`{node}` is not supported in a pattern yet"),
                    ))
                }
            }
            distinct = matches!(
                list.duplicate_treatment,
                Some(sqlparser::ast::DuplicateTreatment::Distinct)
            );
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
    if !order_by.is_empty() && !matches!(name.as_str(), "LISTAGG" | "STRING_AGG" | "ARRAY_AGG") {
        return Err(at(
            node.span(),
            format!("`{node}`: WITHIN GROUP (ORDER BY …) orders the values of listagg, string_agg and array_agg in a pattern, not of {}", f.name),
        ));
    }
    if f.over.is_some() {
        return Err(at(
            node.span(),
            format!("`{node}` is not supported in a pattern yet"),
        ));
    }
    let modified = distinct || f.filter.is_some();
    if modified
        && (!AGGREGATES.contains(&name.as_str()) || matches!(name.as_str(), "MAX_BY" | "MIN_BY"))
    {
        return Err(at(
            node.span(),
            format!("`{node}`: DISTINCT and FILTER (WHERE …) apply to the aggregates COUNT, SUM, AVG, MIN, MAX, COUNT_IF, BOOL_AND, BOOL_OR, ANY_VALUE, STRING_AGG, ARRAY_AGG, APPROX_DISTINCT and the measures of spread in a pattern"),
        ));
    }
    let name_at = match f.name.0.as_slice() {
        [ObjectNamePart::Identifier(id)] => id.span.start,
        _ => node.span().start,
    };
    if name == "ARRAY_AGG" && !s.lists.contains(&(name_at.line, name_at.column)) {
        return Err(at(
            node.span(),
            if s.measure {
                format!("`{node}`: array_agg must be a measure of its own (`array_agg(A.price) AS prices`, RUNNING or FINAL): its list goes to a list column, and no expression computes on a list in a pattern yet")
            } else {
                format!("`{node}`: array_agg in DEFINE is not supported: a condition cannot compute on a list (use count, string_agg or the other aggregates)")
            },
        ));
    }
    let fin = s.finals.contains(&(name_at.line, name_at.column));
    if fin && !s.measure {
        return Err(at(
            node.span(),
            "FINAL in DEFINE: a condition sees the rows matched so far (RUNNING)",
        ));
    }
    if fin && s.inside.is_some() {
        return Err(at(node.span(), "FINAL inside an aggregate's argument"));
    }
    let mut t = if modified {
        modified_aggregate(node, &name, &args, s, distinct, f.filter.as_deref())?
    } else {
        call(node, &name, &args, s)?
    };
    if !order_by.is_empty() {
        ordered(node, &mut t, order_by, s)?;
    }
    Ok(if fin {
        Typed {
            e: E::Final(Box::new(t.e)),
            ty: t.ty,
        }
    } else {
        t
    })
}

/// The aggregates a pattern computes, by the names SQL (and Trino) call them.
const AGGREGATES: [&str; 24] = anduin_spec::PATTERN_AGGREGATES;

/// Whether `name` (upper case) is a function of the pattern's own: navigation,
/// `CLASSIFIER()`, `MATCH_NUMBER()` or an aggregate over a variable's rows.
pub(crate) fn is_pattern_function(name: &str) -> bool {
    matches!(
        name,
        "PREV" | "NEXT" | "FIRST" | "LAST" | "CLASSIFIER" | "MATCH_NUMBER"
    ) || AGGREGATES.contains(&name)
}

/// The error for a call of `name` (upper case; written `written`, at `span`) that neither
/// the pattern nor DataFusion's scalar functions have; `None` for a scalar function.
pub(crate) fn not_scalar(
    name: &str,
    written: &sqlparser::ast::ObjectName,
    span: sqlparser::tokenizer::Span,
) -> Option<ExprError> {
    if super::df::is_scalar(name) {
        return None;
    }
    let list = AGGREGATES.join(", ");
    Some(if super::df::is_aggregate(name) {
        at(
            span,
            format!("the aggregate `{written}` is not supported in a pattern's DEFINE or MEASURES: {list} are"),
        )
    } else {
        at(
            span,
            format!("unknown function `{written}` in a pattern's DEFINE or MEASURES: the pattern's own are PREV, FIRST, LAST, CLASSIFIER, MATCH_NUMBER and the aggregates {list}; the others are those of a `map`"),
        )
    })
}

fn call(node: &Expr, name: &str, args: &[Arg<'_>], s: &Scope<'_>) -> Result<Typed, ExprError> {
    let typed = |e: E, ty: ColumnType| Ok(Typed { e, ty: Some(ty) });
    match (name, args) {
        ("PREV" | "NEXT" | "FIRST" | "LAST", [Arg::Expr(r)] | [Arg::Expr(r), Arg::Expr(_)])
            if name != "NEXT" || (s.measure && s.inside.is_none()) =>
        {
            if matches!(name, "FIRST" | "LAST") && s.inside.is_some() {
                return Err(at(
                    node.span(),
                    format!("{name} inside an aggregate's argument is not supported: the argument is evaluated at each row aggregated"),
                ));
            }
            let nav = match name {
                "PREV" => Nav::Prev,
                "NEXT" => Nav::Next,
                "FIRST" => Nav::First,
                _ => Nav::Last,
            };
            navigate(node, nav, r, offset(node, args)?, s)
        }
        ("NEXT", _) if !s.measure || s.inside.is_some() => Err(at(
            node.span(),
            "NEXT in DEFINE looks at rows that have not arrived: it is not supported in a stream (use PREV on a later variable; in MEASURES, NEXT sees the rows of the match)",
        )),
        ("CLASSIFIER", []) => typed(
            E::Classifier(RowRef {
                base: if s.inside.is_some() {
                    Base::Here
                } else {
                    Base::Last { var: None, n: 0 }
                },
                back: 0,
            }),
            ColumnType::String,
        ),
        // CLASSIFIER(U): the variable of the last row mapped to U (to one of its members).
        ("CLASSIFIER", [Arg::Expr(Expr::Identifier(v))]) if s.inside.is_none() => typed(
            E::Classifier(RowRef {
                base: Base::Last {
                    var: Some(selector(v, s)?),
                    n: 0,
                },
                back: 0,
            }),
            ColumnType::String,
        ),
        ("MATCH_NUMBER", []) => typed(E::MatchNumber, ColumnType::Int),
        (_, _) if AGGREGATES.contains(&name) => aggregate(node, name, args, s),
        ("PREV" | "NEXT" | "FIRST" | "LAST" | "CLASSIFIER" | "MATCH_NUMBER", _) => Err(at(
            node.span(),
            format!("wrong arguments for {name} in `{node}`"),
        )),
        _ => Err(at(node.span(), format!("unknown function `{name}`"))),
    }
}

/// An aggregate call over the rows of one variable (or all rows of the match).
fn aggregate(node: &Expr, name: &str, args: &[Arg<'_>], s: &Scope<'_>) -> Result<Typed, ExprError> {
    if s.inside.is_some() {
        return Err(at(
            node.span(),
            format!("{name} inside an aggregate's argument is not supported"),
        ));
    }
    let f = match name {
        "COUNT" => AggFn::Count,
        "SUM" => AggFn::Sum,
        "AVG" => AggFn::Avg,
        "MIN" => AggFn::Min,
        "MAX" => AggFn::Max,
        "MAX_BY" => AggFn::MaxBy,
        "MIN_BY" => AggFn::MinBy,
        "BOOL_AND" | "EVERY" => AggFn::BoolAnd,
        "BOOL_OR" => AggFn::BoolOr,
        "COUNT_IF" => AggFn::CountIf,
        "STDDEV" | "STDDEV_SAMP" => AggFn::Spread(Spread::StddevSample),
        "STDDEV_POP" => AggFn::Spread(Spread::StddevPopulation),
        "VARIANCE" | "VAR_SAMP" => AggFn::Spread(Spread::VarianceSample),
        "VAR_POP" | "VAR_POPULATION" => AggFn::Spread(Spread::VariancePopulation),
        "STRING_AGG" | "LISTAGG" => AggFn::StringAgg,
        "APPROX_DISTINCT" => AggFn::ApproxDistinct,
        "ARRAY_AGG" => AggFn::ArrayAgg,
        _ => AggFn::AnyValue,
    };
    let wrong = || {
        at(
            node.span(),
            format!(
                "wrong arguments for {name} in `{node}`: {}",
                match f {
                    AggFn::Count => "COUNT(*), COUNT(V.*) or COUNT(expression)",
                    AggFn::MaxBy | AggFn::MinBy => "two expressions (the value, the key)",
                    AggFn::StringAgg =>
                        "two arguments, the strings and the separator (a string constant)",
                    _ => "one expression",
                }
            ),
        )
    };
    let exprs: Vec<&Expr> = match (f, args) {
        (AggFn::Count, []) | (AggFn::Count, [Arg::Star(None)]) => {
            return count_rows(None);
        }
        (AggFn::Count, [Arg::Star(Some(v))]) => return count_rows(Some(selector(v, s)?)),
        (AggFn::MaxBy | AggFn::MinBy, [Arg::Expr(a), Arg::Expr(b)]) => vec![*a, *b],
        (AggFn::MaxBy | AggFn::MinBy, _) => return Err(wrong()),
        (AggFn::StringAgg, [Arg::Expr(a), Arg::Expr(_)]) => vec![*a],
        (AggFn::StringAgg, _) => return Err(wrong()),
        (_, [Arg::Expr(a)]) => vec![*a],
        _ => return Err(wrong()),
    };
    let var = aggregated_variable(node, &exprs, s)?;
    let inner = Scope {
        inside: Some(var),
        ..*s
    };
    let arg = compile(exprs[0], &inner)?;
    let by = exprs.get(1).map(|b| compile(b, &inner)).transpose()?;
    let sep = match (f, args) {
        (AggFn::StringAgg, [_, Arg::Expr(sep)]) => Some(separator(name, sep, s)?),
        _ => None,
    };
    let is = |t: Option<ColumnType>, ok: fn(ColumnType) -> bool| t.is_none_or(ok);
    let ty = match f {
        AggFn::Count => Some(ColumnType::Int),
        AggFn::Sum | AggFn::Avg | AggFn::Spread(_) if !is(arg.ty, numeric) => {
            return Err(at(
                exprs[0].span(),
                format!(
                    "{name} needs a number, `{}` is {}",
                    exprs[0],
                    arg.ty.map_or("NULL", ColumnType::name)
                ),
            ))
        }
        AggFn::BoolAnd | AggFn::BoolOr | AggFn::CountIf
            if !is(arg.ty, |t| t == ColumnType::Bool) =>
        {
            return Err(at(
                exprs[0].span(),
                format!("{name} needs a boolean, `{}` is not", exprs[0]),
            ))
        }
        AggFn::StringAgg if !is(arg.ty, |t| t == ColumnType::String) => {
            return Err(at(
                exprs[0].span(),
                format!(
                    "{name} needs a string, `{}` is {} (CAST it AS VARCHAR)",
                    exprs[0],
                    arg.ty.map_or("NULL", ColumnType::name)
                ),
            ))
        }
        AggFn::Avg | AggFn::Spread(_) => Some(ColumnType::Double),
        AggFn::CountIf | AggFn::ApproxDistinct => Some(ColumnType::Int),
        AggFn::StringAgg => Some(ColumnType::String),
        AggFn::BoolAnd | AggFn::BoolOr => Some(ColumnType::Bool),
        AggFn::Sum if arg.ty.is_none() => Some(ColumnType::Int),
        _ => arg.ty,
    };
    Ok(Typed {
        e: E::Agg(Box::new(Agg {
            f,
            var,
            arg: Some(arg.e),
            by: by.map(|b| b.e),
            filter: None,
            distinct: false,
            sep,
            order: Vec::new(),
        })),
        ty,
    })
}

/// The separator of `string_agg` / `listagg`: one string for every match, computed once
/// here. The standard and Trino take a string literal; Oracle and DB2 a constant expression,
/// as this does (`', ' || ' '`, `CAST(1 AS VARCHAR)`, `chr(59)`): one that reads no row
/// (no column, navigation, aggregate, `CLASSIFIER()` or `MATCH_NUMBER()`) and calls no
/// function whose value changes between calls (`random()`). A NULL one joins the strings
/// without a separator, as Oracle's default.
fn separator(name: &str, sep: &Expr, s: &Scope<'_>) -> Result<std::sync::Arc<str>, ExprError> {
    if let Expr::Value(v) = sep {
        if let SqlValue::SingleQuotedString(s) = &v.value {
            return Ok(s.as_str().into());
        }
    }
    let t = compile(sep, s)?;
    let mut per_row = None;
    t.e.walk(&mut |x| {
        let what = match x {
            E::Col(..) | E::Next { .. } => Some("a row's column".to_string()),
            E::Classifier(_) => Some("CLASSIFIER()".to_string()),
            E::MatchNumber => Some("MATCH_NUMBER()".to_string()),
            E::Agg(_) | E::Final(_) => Some("an aggregate of the match's rows".to_string()),
            E::Df(df, _) => df
                .volatile_function()
                .map(|f| format!("`{f}()`, whose value changes between calls")),
            _ => None,
        };
        if per_row.is_none() {
            per_row = what;
        }
    });
    if let Some(what) = per_row {
        return Err(at(
            sep.span(),
            format!("the separator of {name} must be the same for every match: `{sep}` reads {what}. Give a string literal (`', '`) or a constant expression (`', ' || ' '`), as Oracle does (Trino and the standard take a literal)"),
        ));
    }
    if t.ty.is_some_and(|ty| ty != ColumnType::String) {
        return Err(at(
            sep.span(),
            format!(
                "the separator of {name} must be a string, `{sep}` is {} (CAST it AS VARCHAR)",
                t.ty.map_or("NULL", ColumnType::name)
            ),
        ));
    }
    match super::eval::eval(&t.e, &NoMatch, &[]) {
        Ok(Value::Str(text)) => Ok(text),
        Ok(_) => Ok("".into()),
        Err(e) => Err(at(
            sep.span(),
            format!(
                "the separator of {name}, `{sep}`, has no value: {}",
                e.message()
            ),
        )),
    }
}

/// What a constant is evaluated in: no row, no match.
struct NoMatch;

impl super::eval::View for NoMatch {
    fn steps(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
        std::iter::empty()
    }
    fn cell(&self, _row: u64, _col: usize) -> Option<&Value> {
        None
    }
    fn match_number(&self) -> i64 {
        0
    }
}

fn count_rows(var: Option<Sel>) -> Result<Typed, ExprError> {
    Ok(Typed {
        e: E::Agg(Box::new(Agg {
            f: AggFn::Count,
            var,
            arg: None,
            by: None,
            filter: None,
            distinct: false,
            sep: None,
            order: Vec::new(),
        })),
        ty: Some(ColumnType::Int),
    })
}

/// An aggregate with `DISTINCT` or `FILTER (WHERE condition)`: the aggregate compiled as
/// without them, then the condition compiled at each row aggregated. The condition names the
/// aggregated variable or none; with `COUNT(*)`, the variable it names is the one counted.
fn modified_aggregate(
    node: &Expr,
    name: &str,
    args: &[Arg<'_>],
    s: &Scope<'_>,
    distinct: bool,
    filter: Option<&Expr>,
) -> Result<Typed, ExprError> {
    if distinct && matches!(args, [] | [Arg::Star(_)]) {
        return Err(at(
            node.span(),
            format!("`{node}`: DISTINCT needs an expression to tell values apart"),
        ));
    }
    let mut t = aggregate(node, name, args, s)?;
    let E::Agg(a) = &mut t.e else {
        return Err(at(node.span(), format!("`{node}` is not an aggregate")));
    };
    a.distinct = distinct;
    if let Some(cond) = filter {
        // The variable the condition's columns name must be the aggregate's (COUNT(*): it
        // becomes the aggregate's).
        let named = aggregated_variable(node, &[cond], s)?;
        match (a.var, named) {
            (_, None) => {}
            (None, Some(v)) if a.arg.is_none() => a.var = Some(v),
            (Some(w), Some(v)) if w == v => {}
            _ => {
                return Err(at(
                    cond.span(),
                    format!("the FILTER of `{node}` names other rows than its argument: name the same variable in both"),
                ))
            }
        }
        let inner = Scope {
            inside: Some(a.var),
            ..*s
        };
        let c = compile(cond, &inner)?;
        if c.ty.is_some_and(|t| t != ColumnType::Bool) {
            return Err(at(
                cond.span(),
                format!("the FILTER of `{node}` needs a condition, `{cond}` is not one"),
            ));
        }
        a.filter = Some(c.e);
    }
    Ok(t)
}

/// `t`, a `listagg` / `string_agg`, with the keys of its `WITHIN GROUP (ORDER BY …)`: each
/// compiled at the rows aggregated, naming the aggregated variable or none, as a `FILTER`.
fn ordered(
    node: &Expr,
    t: &mut Typed,
    keys: &[OrderByExpr],
    s: &Scope<'_>,
) -> Result<(), ExprError> {
    let E::Agg(a) = &mut t.e else {
        return Err(at(node.span(), format!("`{node}` is not an aggregate")));
    };
    let exprs: Vec<&Expr> = keys.iter().map(|k| &k.expr).collect();
    match (a.var, aggregated_variable(node, &exprs, s)?) {
        (_, None) => {}
        (Some(w), Some(v)) if w == v => {}
        (_, Some(_)) => {
            return Err(at(
                keys[0].expr.span(),
                format!("the ORDER BY of `{node}` names other rows than its argument: name the same variable in both"),
            ))
        }
    }
    let inner = Scope {
        inside: Some(a.var),
        ..*s
    };
    for k in keys {
        if k.with_fill.is_some() {
            return Err(at(
                k.expr.span(),
                format!("`{k}`: WITH FILL is not supported in a pattern"),
            ));
        }
        let desc = k.options.asc == Some(false);
        a.order.push(SortKey {
            e: compile(&k.expr, &inner)?.e,
            desc,
            nulls_first: k.options.nulls_first.unwrap_or(desc),
        });
    }
    Ok(())
}

/// The variable whose rows an aggregate runs over: the one its arguments' columns name
/// (`SUM(A.x * A.y)`), or every row of the match when they name none (`SUM(x)`). Naming two
/// variables, or one and unqualified columns, is an error, as in SQL.
fn aggregated_variable(
    node: &Expr,
    args: &[&Expr],
    s: &Scope<'_>,
) -> Result<Option<Sel>, ExprError> {
    use sqlparser::ast::{Visit, Visitor};
    use std::ops::ControlFlow;
    struct Names<'a, 's> {
        s: &'s Scope<'a>,
        vars: Vec<(Sel, String)>,
        bare: Option<String>,
    }
    impl Visitor for Names<'_, '_> {
        type Break = ExprError;
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<ExprError> {
            match e {
                Expr::CompoundIdentifier(ids) if ids.len() == 2 => {
                    match selector(&ids[0], self.s) {
                        Ok(v) => {
                            if !self.vars.iter().any(|(w, _)| *w == v) {
                                self.vars.push((v, ids[0].value.clone()));
                            }
                        }
                        Err(e) => return ControlFlow::Break(e),
                    }
                }
                Expr::Identifier(id) if self.bare.is_none() => self.bare = Some(id.value.clone()),
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let mut names = Names {
        s,
        vars: Vec::new(),
        bare: None,
    };
    for a in args {
        if let ControlFlow::Break(e) = a.visit(&mut names) {
            return Err(e);
        }
    }
    match (names.vars.as_slice(), names.bare) {
        ([], _) => Ok(None),
        ([(v, _)], None) => Ok(Some(*v)),
        ([(_, a)], Some(c)) => Err(at(
            node.span(),
            format!("`{node}` aggregates the rows of `{a}` but also names the column `{c}` of every row: qualify it (`{a}.{c}`)"),
        )),
        ([(_, a), (_, b), ..], _) => Err(at(
            node.span(),
            format!("`{node}` names the rows of `{a}` and of `{b}`: an aggregate runs over the rows of one variable"),
        )),
    }
}

/// The optional second argument of PREV/FIRST/LAST: a non-negative whole number (default
/// 1 for PREV, 0 for FIRST/LAST).
fn offset(node: &Expr, args: &[Arg<'_>]) -> Result<usize, ExprError> {
    let is_prev = matches!(node, Expr::Function(f)
        if f.name.to_string().eq_ignore_ascii_case("PREV")
            || f.name.to_string().eq_ignore_ascii_case("NEXT"));
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
