//! DEFINE conditions and MEASURES compiled to small expression trees over a match in progress.
//!
//! Column references name a row through the match: `V.x` is the last row mapped to `V`, `x`
//! the last row of the match (in a DEFINE, the row being classified, which is mapped to the
//! variable being defined); `FIRST(V.x, n)` / `LAST(V.x, n)` count `n` rows from the first /
//! last row mapped to `V`; `PREV(ref, n)` goes `n` rows back in the partition from the row
//! `ref` names. Aggregates (`COUNT`, `SUM`, `AVG`, `MIN`, `MAX`, `max_by`, …) of an expression
//! run over the rows mapped to a variable (all rows, unqualified) so far, the expression
//! evaluated at each ([`Base::Here`]). `CLASSIFIER()` and `MATCH_NUMBER()` as in SQL; `FINAL`
//! before a call in a measure computes it over the whole match. What the interpreter does
//! not evaluate itself goes to DataFusion ([`super::df`]).

use anduin_expr::{parse_then_with_depth, ExprError};
use anduin_types::ColumnType;
use sqlparser::ast::{
    BinaryOperator, CastKind, Expr, Ident, Spanned, UnaryOperator, Value as SqlValue,
};
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Span;
use sqlparser::tokenizer::Token;

use std::sync::Arc;

use super::calls;
use super::df::{compile_df, needs_df, Df};
use super::modifiers::modifiers;
use super::value::{BinOp, Value};

/// The variables a reference ranges over: one, or the union of a `SUBSET` (a bit per
/// variable; its members are among the first 64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sel {
    One(usize),
    Union(u64),
}

impl Sel {
    /// Whether variable `v` is one of them.
    pub(crate) fn has(self, v: usize) -> bool {
        match self {
            Sel::One(w) => w == v,
            Sel::Union(m) => v < 64 && (m >> v) & 1 == 1,
        }
    }

    /// The variables, by number.
    pub(crate) fn members(self) -> Vec<usize> {
        match self {
            Sel::One(v) => vec![v],
            Sel::Union(m) => (0..64).filter(|v| (m >> v) & 1 == 1).collect(),
        }
    }
}

/// Which row of the match a reference starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Base {
    /// The `n`-th row from the last mapped to `var` (any variable: `None`).
    Last { var: Option<Sel>, n: usize },
    /// The `n`-th row from the first mapped to `var`.
    First { var: Option<Sel>, n: usize },
    /// Inside an aggregate's argument: the row being aggregated.
    Here,
}

/// A row named by an expression: a row of the match, then `back` rows back in the partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RowRef {
    pub base: Base,
    pub back: usize,
}

/// An aggregate over the rows mapped to a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AggFn {
    Count,
    Sum,
    Avg,
    Min,
    Max,
    /// The argument at the row where `by` is largest (the first such row).
    MaxBy,
    /// The argument at the row where `by` is smallest (the first such row).
    MinBy,
    BoolAnd,
    BoolOr,
    /// The first non-null value (Trino's `arbitrary`).
    AnyValue,
    /// The rows whose argument is true (Trino's `count_if`).
    CountIf,
    /// A standard deviation or variance of numbers.
    Spread(Spread),
    /// The strings joined with [`Agg::sep`], in the order of their rows in the match, or of
    /// [`Agg::order`]'s keys (`string_agg`, Trino's and Oracle's `listagg`, `WITHIN GROUP
    /// (ORDER BY …)`).
    StringAgg,
    /// The number of distinct values, computed exactly (Trino's `approx_distinct`: a match
    /// holds few rows).
    ApproxDistinct,
    /// The values (NULLs too) as a list, in the order of their rows in the match, or of
    /// [`Agg::order`]'s keys; NULL for no row. Only a measure's whole expression
    /// ([`E::is_list`]): the list goes to an Arrow list column and nothing computes on it.
    ArrayAgg,
}

/// Which measure of spread: `STDDEV` / `STDDEV_SAMP` and `VARIANCE` / `VAR_SAMP` divide by
/// n − 1 (NULL for fewer than two values), the `_POP` forms by n (NULL for none), as Trino's
/// and DataFusion's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spread {
    StddevSample,
    StddevPopulation,
    VarianceSample,
    VariancePopulation,
}

/// An aggregate call: `f(arg)` over the rows mapped to `var` (all rows of the match: `None`)
/// so far; `arg` is evaluated at each of them ([`Base::Here`]). `arg: None` is `COUNT(*)`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Agg {
    pub f: AggFn,
    pub var: Option<Sel>,
    pub arg: Option<E>,
    /// The second argument of `max_by` / `min_by`.
    pub by: Option<E>,
    /// `FILTER (WHERE condition)`: only the rows where it is true are aggregated.
    pub filter: Option<E>,
    /// `DISTINCT`: each value once.
    pub distinct: bool,
    /// The separator of `string_agg` (a literal, or a constant expression computed when the
    /// pattern is compiled).
    pub sep: Option<Arc<str>>,
    /// `WITHIN GROUP (ORDER BY …)` of `string_agg` / `listagg`: the keys its values are
    /// joined in the order of (rows equal in every key keep their order in the match).
    pub order: Vec<SortKey>,
}

/// A key of `WITHIN GROUP (ORDER BY key [ASC | DESC] [NULLS FIRST | NULLS LAST])`, evaluated
/// at each row aggregated.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SortKey {
    pub e: E,
    pub desc: bool,
    /// Without `NULLS`: last ascending, first descending, as the pattern's `ORDER BY`
    /// tie-breakers ([`super::order::parse_tie`]).
    pub nulls_first: bool,
}

impl Agg {
    /// The expressions evaluated at each row aggregated: the argument, `max_by`'s key, the
    /// `FILTER` and the `WITHIN GROUP` keys.
    pub(crate) fn parts(&self) -> impl Iterator<Item = &E> {
        self.arg
            .iter()
            .chain(&self.by)
            .chain(&self.filter)
            .chain(self.order.iter().map(|k| &k.e))
    }

    /// [`Agg::parts`], to change.
    pub(crate) fn parts_mut(&mut self) -> impl Iterator<Item = &mut E> {
        self.arg
            .iter_mut()
            .chain(self.by.iter_mut())
            .chain(self.filter.iter_mut())
            .chain(self.order.iter_mut().map(|k| &mut k.e))
    }
}

/// A compiled expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum E {
    Lit(Value),
    Col(RowRef, usize),
    Classifier(RowRef),
    MatchNumber,
    Agg(Box<Agg>),
    /// `FINAL`: the value over the whole match (in ALL ROWS PER MATCH, not only the rows up to
    /// the one output).
    Final(Box<E>),
    /// A part DataFusion evaluates, over the values of its slots (see [`super::df`]).
    Df(Arc<Df>, Vec<E>),
    /// `NEXT(ref, n)` in a measure: the column `col` (CLASSIFIER(): `None`) of the row `n`
    /// after the one `ref` names, if that row is in the match (the whole of it), else NULL.
    Next {
        r: RowRef,
        col: Option<usize>,
        n: usize,
    },
    Bin(BinOp, Box<E>, Box<E>),
    And(Box<E>, Box<E>),
    Or(Box<E>, Box<E>),
    Not(Box<E>),
    Neg(Box<E>),
    IsNull(Box<E>, bool),
    Cast(Box<E>, ColumnType),
}

impl E {
    /// Whether evaluating can fail on some row: arithmetic (`+ - * / %`), a negation, a
    /// CAST, a SUM. Comparisons, logic, columns and counts cannot.
    pub(crate) fn can_fail(&self) -> bool {
        match self {
            E::Lit(_) | E::Col(..) | E::Classifier(_) | E::MatchNumber | E::Next { .. } => false,
            E::Agg(a) => a.f == AggFn::Sum || a.parts().any(E::can_fail),
            E::Final(x) => x.can_fail(),
            E::Df(..) => true,
            E::Bin(op, l, r) => {
                matches!(
                    op,
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod
                ) || l.can_fail()
                    || r.can_fail()
            }
            E::And(l, r) | E::Or(l, r) => l.can_fail() || r.can_fail(),
            E::Not(x) | E::IsNull(x, _) => x.can_fail(),
            E::Neg(_) | E::Cast(..) => true,
        }
    }
}

impl E {
    /// Renumbers the input columns `e` reads: column `c` becomes `slot[c]` (rows keep only
    /// the columns something reads, see `Setup::cells_of`).
    pub(crate) fn renumber_columns(&mut self, slot: &[usize]) {
        let to = |c: &mut usize| {
            if let Some(s) = slot.get(*c) {
                *c = *s;
            }
        };
        match self {
            E::Col(_, c) | E::Next { col: Some(c), .. } => to(c),
            E::Lit(_) | E::Classifier(_) | E::MatchNumber | E::Next { col: None, .. } => {}
            E::Agg(a) => {
                for x in a.parts_mut() {
                    x.renumber_columns(slot);
                }
            }
            E::Df(_, args) => {
                for x in args {
                    x.renumber_columns(slot);
                }
            }
            E::Bin(_, a, b) | E::And(a, b) | E::Or(a, b) => {
                a.renumber_columns(slot);
                b.renumber_columns(slot);
            }
            E::Final(a) | E::Not(a) | E::Neg(a) | E::IsNull(a, _) | E::Cast(a, _) => {
                a.renumber_columns(slot)
            }
        }
    }

    /// Whether `e` computes a list: an `array_agg` (RUNNING or FINAL), which is only ever a
    /// measure's whole expression.
    pub(crate) fn is_list(&self) -> bool {
        match self {
            E::Agg(a) => a.f == AggFn::ArrayAgg,
            E::Final(x) => x.is_list(),
            _ => false,
        }
    }

    /// Calls `f` on `e` and every expression inside it (aggregates' arguments and the slots
    /// of DataFusion's parts included).
    pub(crate) fn walk(&self, f: &mut impl FnMut(&E)) {
        f(self);
        match self {
            E::Lit(_) | E::Col(..) | E::Classifier(_) | E::MatchNumber | E::Next { .. } => {}
            E::Agg(a) => {
                for x in a.parts() {
                    x.walk(f);
                }
            }
            E::Df(_, args) => {
                for x in args {
                    x.walk(f);
                }
            }
            E::Bin(_, a, b) | E::And(a, b) | E::Or(a, b) => {
                a.walk(f);
                b.walk(f);
            }
            E::Final(a) | E::Not(a) | E::Neg(a) | E::IsNull(a, _) | E::Cast(a, _) => a.walk(f),
        }
    }
}

/// An expression with its type (`None` for a bare NULL).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Typed {
    pub e: E,
    pub ty: Option<ColumnType>,
}

/// Where a DEFINE condition or a measure is in the text it was compiled from, as written: what
/// a row it fails on names.
pub(crate) fn site_of(e: &Expr) -> anduin_expr::ExprSite {
    let start = e.span().start;
    anduin_expr::ExprSite {
        text: e.to_string(),
        line: start.line,
        col: start.column,
    }
}

/// What names mean: the input's columns and the pattern's variables; and where an
/// expression is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub columns: &'a [(String, ColumnType)],
    pub vars: &'a [String],
    /// Inside an aggregate's argument: the variables whose rows it runs over (`Some(None)`:
    /// every row of the match).
    pub inside: Option<Option<Sel>>,
    /// The `SUBSET` union variables: name and members.
    pub subsets: &'a [(String, u64)],
    /// Where `FINAL` stood before a call: the (line, column) of the call's name.
    pub finals: &'a [(u64, u64)],
    /// A measure (FINAL allowed), not a condition.
    pub measure: bool,
    /// Where the `array_agg` calls that are a measure's whole expression stand (the
    /// (line, column) of the call's name): the only place a list may be computed.
    pub lists: &'a [(u64, u64)],
    /// A bound on the depth of the text's tree.
    pub depth: usize,
}

impl<'a> Scope<'a> {
    /// The scope of the input's `columns` and the pattern's `vars`.
    pub(crate) fn new(columns: &'a [(String, ColumnType)], vars: &'a [String]) -> Self {
        Scope {
            columns,
            vars,
            inside: None,
            subsets: &[],
            finals: &[],
            measure: false,
            lists: &[],
            depth: 1,
        }
    }
}

/// `V AS condition, …` (DEFINE): each variable's number with its condition and where the
/// condition is.
pub(crate) fn compile_defines(
    text: &str,
    scope: &Scope<'_>,
) -> Result<Vec<(usize, Typed, anduin_expr::ExprSite)>, ExprError> {
    let parse = |p: &mut Parser<'_>| {
        let mut items: Vec<(Ident, Expr)> = Vec::new();
        loop {
            let var = p.parse_identifier()?;
            p.expect_keyword_is(Keyword::AS)?;
            items.push((var, p.parse_expr()?));
            if !p.consume_token(&Token::Comma) {
                break;
            }
        }
        Ok(items)
    };
    // Compiled with the stack the conditions' depth needs: `compile` walks them recursively.
    let (text, finals) = modifiers(text);
    parse_then_with_depth(&text, parse, |items, depth| {
        let scope = Scope {
            finals: &finals,
            measure: false,
            depth,
            ..*scope
        };
        defines(items, &scope)
    })
}

fn defines(
    items: Vec<(Ident, Expr)>,
    scope: &Scope<'_>,
) -> Result<Vec<(usize, Typed, anduin_expr::ExprSite)>, ExprError> {
    let mut out: Vec<(usize, Typed, anduin_expr::ExprSite)> = Vec::new();
    for (var, cond) in items {
        let Some(v) = scope.vars.iter().position(|n| *n == var_name(&var)) else {
            return Err(at(
                var.span,
                format!(
                    "`{}` is not a variable of the pattern, which has {}",
                    var.value,
                    scope.vars.join(", ")
                ),
            ));
        };
        if out.iter().any(|(w, _, _)| *w == v) {
            return Err(at(var.span, format!("`{}` is defined twice", var.value)));
        }
        let typed = compile(&cond, scope)?;
        if !matches!(typed.ty, Some(ColumnType::Bool) | None) {
            return Err(at(
                cond.span(),
                format!(
                    "the condition of `{}` is {}, not a boolean",
                    var.value,
                    type_name(typed.ty)
                ),
            ));
        }
        out.push((v, typed, site_of(&cond)));
    }
    Ok(out)
}

/// `expression AS name, …` (MEASURES): each measure's name, expression and where it is.
pub(crate) fn compile_measures(
    text: &str,
    scope: &Scope<'_>,
) -> Result<Vec<(String, Typed, anduin_expr::ExprSite)>, ExprError> {
    let parse = |p: &mut Parser<'_>| {
        let mut items: Vec<(Expr, Ident)> = Vec::new();
        loop {
            let e = p.parse_expr()?;
            p.expect_keyword_is(Keyword::AS)?;
            items.push((e, p.parse_identifier()?));
            if !p.consume_token(&Token::Comma) {
                break;
            }
        }
        Ok(items)
    };
    let (text, finals) = modifiers(text);
    parse_then_with_depth(&text, parse, |items, depth| {
        let lists: Vec<(u64, u64)> = items.iter().filter_map(|(e, _)| list_call(e)).collect();
        let scope = Scope {
            finals: &finals,
            measure: true,
            lists: &lists,
            depth,
            ..*scope
        };
        measures(items, &scope)
    })
}

/// Where the name of `e`'s call stands, if `e` (in parentheses or not) is an `array_agg(…)`
/// call.
fn list_call(e: &Expr) -> Option<(u64, u64)> {
    match e {
        Expr::Nested(inner) => list_call(inner),
        Expr::Function(f) => match f.name.0.as_slice() {
            [sqlparser::ast::ObjectNamePart::Identifier(id)]
                if id.value.eq_ignore_ascii_case("ARRAY_AGG") =>
            {
                Some((id.span.start.line, id.span.start.column))
            }
            _ => None,
        },
        _ => None,
    }
}

fn measures(
    items: Vec<(Expr, Ident)>,
    scope: &Scope<'_>,
) -> Result<Vec<(String, Typed, anduin_expr::ExprSite)>, ExprError> {
    let mut out: Vec<(String, Typed, anduin_expr::ExprSite)> = Vec::new();
    for (e, name) in items {
        if out.iter().any(|(n, _, _)| *n == name.value) {
            return Err(at(
                name.span,
                format!("measure `{}` is named twice", name.value),
            ));
        }
        out.push((name.value.clone(), compile(&e, scope)?, site_of(&e)));
    }
    Ok(out)
}

pub(super) fn at(span: Span, message: impl Into<String>) -> ExprError {
    let s = span.start;
    ExprError::at(s.line, s.column, message)
}

fn type_name(t: Option<ColumnType>) -> &'static str {
    t.map_or("NULL", |t| t.name())
}

pub(super) fn compile(e: &Expr, s: &Scope<'_>) -> Result<Typed, ExprError> {
    if needs_df(e) {
        return compile_df(e, s);
    }
    let typed = |e: E, ty: ColumnType| Ok(Typed { e, ty: Some(ty) });
    match e {
        Expr::Nested(inner) => compile(inner, s),
        Expr::Value(v) => literal(&v.value)
            .ok_or_else(|| at(e.span(), format!("the literal `{e}` is not supported here"))),
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
            let (var, col, ty) = column(e, s)?;
            let base = match s.inside {
                Some(_) => Base::Here,
                None => Base::Last { var, n: 0 },
            };
            typed(E::Col(RowRef { base, back: 0 }, col), ty)
        }
        Expr::BinaryOp { left, op, right } => {
            let (l, r) = (compile(left, s)?, compile(right, s)?);
            binary(e, op, l, r)
        }
        Expr::UnaryOp { op, expr } => {
            let inner = compile(expr, s)?;
            match op {
                UnaryOperator::Not => {
                    want(expr, &inner, |t| t == ColumnType::Bool, "a boolean")?;
                    typed(E::Not(Box::new(inner.e)), ColumnType::Bool)
                }
                UnaryOperator::Minus => {
                    want(expr, &inner, numeric, "a number")?;
                    Ok(Typed {
                        e: E::Neg(Box::new(inner.e)),
                        ty: inner.ty,
                    })
                }
                UnaryOperator::Plus => Ok(inner),
                other => Err(at(
                    e.span(),
                    format!("the operator `{other}` is not supported here"),
                )),
            }
        }
        Expr::IsNull(inner) | Expr::IsNotNull(inner) => {
            let c = compile(inner, s)?;
            typed(
                E::IsNull(Box::new(c.e), matches!(e, Expr::IsNotNull(_))),
                ColumnType::Bool,
            )
        }
        Expr::Between {
            expr,
            negated,
            low,
            high,
        } => {
            let x = compile(expr, s)?;
            let lo = binary(e, &BinaryOperator::GtEq, x.clone(), compile(low, s)?)?;
            let hi = binary(e, &BinaryOperator::LtEq, x, compile(high, s)?)?;
            let both = E::And(Box::new(lo.e), Box::new(hi.e));
            typed(
                if *negated {
                    E::Not(Box::new(both))
                } else {
                    both
                },
                ColumnType::Bool,
            )
        }
        Expr::Cast {
            kind: CastKind::Cast | CastKind::DoubleColon,
            expr,
            data_type,
            ..
        } => {
            let inner = compile(expr, s)?;
            let name = data_type.to_string().to_lowercase();
            let to = ColumnType::parse(&name).ok_or_else(|| {
                at(e.span(), format!("cannot CAST to `{data_type}`: the types are bigint, double, boolean, varchar and timestamp"))
            })?;
            typed(E::Cast(Box::new(inner.e), to), to)
        }
        Expr::Function(f) => calls::function(e, f, s),
        other => Err(at(
            other.span(),
            format!("`{other}` is not supported in a pattern's DEFINE or MEASURES yet"),
        )),
    }
}

pub(super) fn numeric(t: ColumnType) -> bool {
    matches!(t, ColumnType::Int | ColumnType::Double)
}

fn want(
    node: &Expr,
    t: &Typed,
    ok: impl Fn(ColumnType) -> bool,
    what: &str,
) -> Result<(), ExprError> {
    match t.ty {
        None => Ok(()),
        Some(ty) if ok(ty) => Ok(()),
        Some(ty) => Err(at(
            node.span(),
            format!("expected {what}, found {}", ty.name()),
        )),
    }
}

pub(super) fn literal(v: &SqlValue) -> Option<Typed> {
    let t = |e: Value, ty: ColumnType| {
        Some(Typed {
            e: E::Lit(e),
            ty: Some(ty),
        })
    };
    match v {
        SqlValue::Number(n, _) => match n.parse::<i64>() {
            Ok(i) => t(Value::Int(i), ColumnType::Int),
            Err(_) => t(Value::Float(n.parse().ok()?), ColumnType::Double),
        },
        SqlValue::SingleQuotedString(s) => t(Value::Str(s.as_str().into()), ColumnType::String),
        SqlValue::Boolean(b) => t(Value::Bool(*b), ColumnType::Bool),
        SqlValue::Null => Some(Typed {
            e: E::Lit(Value::Null),
            ty: None,
        }),
        _ => None,
    }
}

/// `x` or `V.x`: the variable (if qualified), the column and its type.
pub(super) fn column(
    e: &Expr,
    s: &Scope<'_>,
) -> Result<(Option<Sel>, usize, ColumnType), ExprError> {
    let (var, name) = match e {
        Expr::Identifier(id) => (None, id),
        Expr::CompoundIdentifier(ids) if ids.len() == 2 => (Some(&ids[0]), &ids[1]),
        other => {
            return Err(at(
                other.span(),
                format!("expected a column (`x`) or a variable's column (`A.x`), found `{other}`"),
            ))
        }
    };
    let qualifier = var;
    let var = var.map(|v| selector(v, s)).transpose()?;
    let col = s
        .columns
        .iter()
        .position(|(n, _)| *n == name.value)
        .ok_or_else(|| {
            let names: Vec<&str> = s.columns.iter().map(|(n, _)| n.as_str()).collect();
            let written = match qualifier {
                Some(v) => format!("`{}` in `{}.{}`", name.value, v.value, name.value),
                None => format!("`{}`", name.value),
            };
            // Column names are case-sensitive, variables' names are not.
            let hint = names
                .iter()
                .find(|n| n.eq_ignore_ascii_case(&name.value))
                .map_or(String::new(), |n| {
                    format!(" (column names are case-sensitive: write `{n}`)")
                });
            at(
                name.span,
                format!(
                    "unknown column {written}: the input has {}{hint}",
                    names.join(", ")
                ),
            )
        })?;
    Ok((var, col, s.columns[col].1))
}

/// The name of the variable `v` names: unquoted, case-insensitive (upper case), quoted, as
/// written (see [`super::syntax`]).
pub(super) fn var_name(v: &Ident) -> String {
    match v.quote_style {
        None => super::syntax::unquoted(&v.value),
        Some(_) => v.value.clone(),
    }
}

pub(super) fn variable(v: &Ident, s: &Scope<'_>) -> Result<usize, ExprError> {
    let name = var_name(v);
    s.vars.iter().position(|n| *n == name).ok_or_else(|| {
        at(
            v.span,
            format!(
                "`{}` is not a variable of the pattern, which has {}",
                v.value,
                s.vars.join(", ")
            ),
        )
    })
}

/// The variable or `SUBSET` union variable `v` names.
pub(super) fn selector(v: &Ident, s: &Scope<'_>) -> Result<Sel, ExprError> {
    let name = var_name(v);
    if let Some((_, members)) = s.subsets.iter().find(|(n, _)| *n == name) {
        return Ok(Sel::Union(*members));
    }
    variable(v, s).map(Sel::One).map_err(|mut e| {
        if !s.subsets.is_empty() {
            let names: Vec<&str> = s.subsets.iter().map(|(n, _)| n.as_str()).collect();
            e.message += &format!(" and the SUBSET variables {}", names.join(", "));
        }
        e
    })
}

fn binary(node: &Expr, op: &BinaryOperator, l: Typed, r: Typed) -> Result<Typed, ExprError> {
    use ColumnType::*;
    let bool_op = |make: fn(Box<E>, Box<E>) -> E| -> Result<Typed, ExprError> {
        want(node, &l, |t| t == Bool, "a boolean")?;
        want(node, &r, |t| t == Bool, "a boolean")?;
        Ok(Typed {
            e: make(Box::new(l.e.clone()), Box::new(r.e.clone())),
            ty: Some(Bool),
        })
    };
    let op = match op {
        BinaryOperator::And => return bool_op(E::And),
        BinaryOperator::Or => return bool_op(E::Or),
        BinaryOperator::Plus => BinOp::Add,
        BinaryOperator::Minus => BinOp::Sub,
        BinaryOperator::Multiply => BinOp::Mul,
        BinaryOperator::Divide => BinOp::Div,
        BinaryOperator::Modulo => BinOp::Mod,
        BinaryOperator::Eq => BinOp::Eq,
        BinaryOperator::NotEq => BinOp::NotEq,
        BinaryOperator::Lt => BinOp::Lt,
        BinaryOperator::LtEq => BinOp::LtEq,
        BinaryOperator::Gt => BinOp::Gt,
        BinaryOperator::GtEq => BinOp::GtEq,
        other => {
            return Err(at(
                node.span(),
                format!("the operator `{other}` is not supported here"),
            ))
        }
    };
    let ty = match (op, l.ty, r.ty) {
        (_, None, t) | (_, t, None) => match op {
            BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq => {
                Some(Bool)
            }
            _ => t,
        },
        (
            BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq,
            Some(a),
            Some(b),
        ) => {
            if a == b || (numeric(a) && numeric(b)) {
                Some(Bool)
            } else {
                return Err(at(
                    node.span(),
                    format!(
                        "`{node}` compares {} with {}: CAST one side",
                        a.name(),
                        b.name()
                    ),
                ));
            }
        }
        (BinOp::Sub, Some(Timestamp), Some(Timestamp)) => Some(Int),
        (BinOp::Add | BinOp::Sub, Some(Timestamp), Some(Int)) => Some(Timestamp),
        (BinOp::Add, Some(Int), Some(Timestamp)) => Some(Timestamp),
        (_, Some(a), Some(b)) if numeric(a) && numeric(b) => {
            Some(if a == Int && b == Int { Int } else { Double })
        }
        (_, Some(a), Some(b)) => {
            return Err(at(
                node.span(),
                format!(
                    "`{node}`: cannot compute with {} and {}",
                    a.name(),
                    b.name()
                ),
            ))
        }
    };
    Ok(Typed {
        e: E::Bin(op, Box::new(l.e), Box::new(r.e)),
        ty,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope_cols() -> Vec<(String, ColumnType)> {
        vec![
            ("ts".into(), ColumnType::Timestamp),
            ("value".into(), ColumnType::Int),
            ("name".into(), ColumnType::String),
        ]
    }

    #[test]
    fn the_q3_defines_compile() {
        let cols = scope_cols();
        let vars: Vec<String> = ["A", "B", "C", "D"].map(String::from).to_vec();
        let s = Scope::new(&cols, &vars);
        let d = compile_defines(
            "B AS (LAST(B.`value`, 1) IS NULL AND B.`value` < A.`value`) OR B.`value` < LAST(B.`value`, 1),
             C AS C.value > LAST(B.value) AND C.value < A.value,
             D AS D.value > PREV(value, 2)",
            &s,
        )
        .expect("compiles");
        assert_eq!(d.iter().map(|(v, _, _)| *v).collect::<Vec<_>>(), [1, 2, 3]);
        // Each condition's text and start (line, column) in the param, for a failing row.
        let sites: Vec<(&str, u64, u64)> = d
            .iter()
            .map(|(_, _, s)| (s.text.as_str(), s.line, s.col))
            .collect();
        assert_eq!(
            sites[1],
            ("C.value > LAST(B.value) AND C.value < A.value", 2, 19)
        );
        assert_eq!(sites[2], ("D.value > PREV(value, 2)", 3, 19));
        let Typed {
            e: E::Bin(BinOp::Gt, _, r),
            ..
        } = &d[2].1
        else {
            panic!("a comparison: {:?}", d[2].1)
        };
        assert_eq!(
            **r,
            E::Col(
                RowRef {
                    base: Base::Last { var: None, n: 0 },
                    back: 2
                },
                1
            )
        );
    }

    #[test]
    fn measures_have_types() {
        let cols = scope_cols();
        let vars: Vec<String> = ["A", "B"].map(String::from).to_vec();
        let s = Scope::new(&cols, &vars);
        let m = compile_measures(
            "A.ts AS a_ts, COUNT(B.*) AS n, AVG(B.value) AS avg, CLASSIFIER() AS c, LAST(B.ts) - FIRST(A.ts) AS span",
            &s,
        )
        .expect("compiles");
        let types: Vec<_> = m.iter().map(|(n, t, _)| (n.as_str(), t.ty)).collect();
        assert_eq!(
            (m[4].2.text.as_str(), m[4].2.col),
            ("LAST(B.ts) - FIRST(A.ts)", 72)
        );
        assert_eq!(
            types,
            [
                ("a_ts", Some(ColumnType::Timestamp)),
                ("n", Some(ColumnType::Int)),
                ("avg", Some(ColumnType::Double)),
                ("c", Some(ColumnType::String)),
                ("span", Some(ColumnType::Int)),
            ]
        );
    }

    #[test]
    fn errors_name_the_problem_and_its_place() {
        let cols = scope_cols();
        let vars: Vec<String> = ["A", "B"].map(String::from).to_vec();
        let s = Scope::new(&cols, &vars);
        let e = compile_defines("B AS B.value < X.value", &s).expect_err("unknown var");
        assert_eq!((e.line, e.col), (1, 16));
        assert!(e.message.contains("not a variable"), "{}", e.message);
        let e = compile_defines("B AS B.price < 3", &s).expect_err("unknown column");
        assert!(
            e.message.contains("unknown column `price`"),
            "{}",
            e.message
        );
        let e = compile_defines("B AS B.value < 'x'", &s).expect_err("type mismatch");
        assert!(
            e.message.contains("compares int with string"),
            "{}",
            e.message
        );
        let e = compile_defines("B AS B.value + 1", &s).expect_err("not boolean");
        assert!(e.message.contains("not a boolean"), "{}", e.message);
        let e = compile_defines("B AS NEXT(value) > 1", &s).expect_err("NEXT");
        assert!(
            e.message.contains("not supported in a stream"),
            "{}",
            e.message
        );
        let e = compile_defines("Z AS true", &s).expect_err("undefined var");
        assert!(e.message.contains("not a variable"), "{}", e.message);
    }

    #[test]
    fn unquoted_variables_in_defines_and_measures_are_case_insensitive() {
        let columns: Vec<(String, ColumnType)> = vec![("value".into(), ColumnType::Int)];
        let vars: Vec<String> = ["A", "b"].map(String::from).to_vec();
        let scope = Scope::new(&columns, &vars);
        let d = compile_defines("a AS a.value > 0, \"b\" AS value > A.value", &scope)
            .expect("compiles");
        assert_eq!(d.iter().map(|(v, _, _)| *v).collect::<Vec<_>>(), [0, 1]);
        let e = compile_defines("B AS value > 0", &scope).expect_err("`B` is not `b`");
        assert!(e.to_string().contains("`B` is not a variable"), "{e}");
        assert!(compile_measures("COUNT(a.*) AS n, LAST(\"b\".value) AS x", &scope).is_ok());
    }
}
