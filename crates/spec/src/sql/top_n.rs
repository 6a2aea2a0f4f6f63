//! Top-N and deduplication: a subquery that numbers its rows with `ROW_NUMBER() OVER
//! (PARTITION BY … ORDER BY …)`, filtered in the query over it by its number, lowered to a
//! `top_n` operator, as Flink plans it:
//!
//! ```sql
//! INSERT INTO top3
//! SELECT auction, price, rn FROM (
//!   SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rn
//!   FROM bid)
//! WHERE rn <= 3;
//! ```
//!
//! The number's filter is `rn <= N`, `rn < N` or `rn = 1` (or `N >= rn`, …); other
//! conditions of that `WHERE` filter the top-N's output. The number is a column of the output
//! only if the query over the subquery reads it (`*`, or `rn` in its select list): then a row
//! whose rank changes is updated. `rn = 1` ordered by the table's event time is a
//! deduplication: ascending, keep the first row (append-only); descending, keep the last.
//! Partitioned by both bounds of a window (`PARTITION BY window_start, window_end, …` over a
//! window aggregate's results or a windowing table function's rows), it is a window top-N
//! (Flink's Window Top-N; with `rn = 1`, its Window Deduplication): the `top_n` gets the
//! window end column as `window_end`, and of an append-only input emits each window's rows
//! once the watermark passes its end, append-only.
//! Anything else with a ranking function is refused, naming it and its position.

use std::ops::ControlFlow;

use anduin_types::{Diagnostic, Pos};
use sqlparser::ast::{
    visit_expressions, BinaryOperator, Expr, FunctionArguments, Ident, Query, Select, SelectItem,
    SelectItemQualifiedWildcardKind, Spanned, TableFactor, Value as SqlValue, WindowType,
};

use super::derived::{Attr, Derived};
use super::group_updating::is_aggregate_call;
use super::insert::{
    lower_select, name_of, operator, plain_select, quoted, subquery_name, unnested, unsupported,
    Script,
};
use super::source_text::pos;
use super::tables::Tables;
use crate::ast::Spec;
use crate::Text;

/// The ranking functions of SQL: a subquery that calls one over a window is a top-N.
const RANKING: &[&str] = &["row_number", "rank", "dense_rank"];

/// The select item of `s` that calls a ranking function over a window, if any: its index,
/// the call, and where it is.
fn ranking_item(s: &Select) -> Option<(usize, &sqlparser::ast::Function, Pos)> {
    s.projection.iter().enumerate().find_map(|(i, item)| {
        let e = match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
            _ => return None,
        };
        match unnested(e) {
            Expr::Function(f)
                if f.over.is_some()
                    && f.name
                        .0
                        .last()
                        .and_then(|p| p.as_ident())
                        .is_some_and(|n| RANKING.contains(&n.value.to_lowercase().as_str())) =>
            {
                Some((i, f, pos(f.span().start)))
            }
            _ => None,
        }
    })
}

/// Whether `q` is the subquery of a top-N: a SELECT with a ranking function over a window in
/// its select list.
pub(super) fn is_ranked(q: &Query) -> bool {
    plain_select(q).is_ok_and(|s| ranking_item(s).is_some())
}

/// What the outer `WHERE` asks of the number.
struct Bound {
    limit: u64,
}

/// `e` split at its `AND`s.
fn conjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        Expr::Nested(inner) => conjuncts(inner, out),
        other => out.push(other),
    }
}

/// Whether `e` names column `rn` (`rn` or `q.rn`).
fn is_number(e: &Expr, rn: &str) -> bool {
    name_of(unnested(e)).is_some_and(|n| n.eq_ignore_ascii_case(rn))
}

/// Whether `e` reads column `rn` anywhere.
fn reads(e: &Expr, rn: &str) -> bool {
    visit_expressions(e, |x| {
        if is_number(x, rn) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .is_break()
}

/// The limit a conjunct on the number sets (`rn <= 3`: 3), or why it is refused.
fn limit_of(c: &Expr, rn: &str) -> Result<u64, Diagnostic> {
    let at = pos(c.span().start);
    let shape = || {
        unsupported(
            at,
            format!("the condition `{c}` on the row number (top-N takes `{rn} <= N`, `{rn} < N` or `{rn} = 1`, N a whole number)"),
        )
    };
    let Expr::BinaryOp { left, op, right } = unnested(c) else {
        return Err(shape());
    };
    // As `rn op n`.
    let (op, n) = if is_number(left, rn) {
        (op.clone(), right.as_ref())
    } else if is_number(right, rn) {
        let flipped = match op {
            BinaryOperator::GtEq => BinaryOperator::LtEq,
            BinaryOperator::Gt => BinaryOperator::Lt,
            BinaryOperator::Eq => BinaryOperator::Eq,
            _ => return Err(shape()),
        };
        (flipped, left.as_ref())
    } else {
        return Err(shape());
    };
    let value = match unnested(n) {
        Expr::Value(v) => match &v.value {
            SqlValue::Number(s, _) => s.parse::<u64>().ok(),
            _ => None,
        },
        _ => None,
    };
    let Some(value) = value else {
        return Err(unsupported(
            pos(n.span().start),
            format!("comparing the row number with `{n}` (top-N takes `{rn} <= N` with N a whole number, a constant)"),
        ));
    };
    let limit = match op {
        BinaryOperator::LtEq => value,
        BinaryOperator::Lt => value.saturating_sub(1),
        BinaryOperator::Eq if value == 1 => 1,
        _ => return Err(shape()),
    };
    if limit == 0 {
        return Err(Diagnostic::error(
            at,
            format!("`{c}` keeps no row: the row number starts at 1"),
        ));
    }
    Ok(limit)
}

/// The prefix of the hidden columns a top-N's subquery computes for its `OVER (…)`.
const HIDDEN: &str = "__over_";

/// Whether `a` and `b`, expressions of the subquery `inner`, are one expression over its
/// FROM clause: written alike, or (FROM one table, where a qualifier names that table) the
/// same column with or without its qualifier (`b.ts` and `ts`).
fn same(a: &Expr, b: &Expr, inner: &Select) -> bool {
    let (a, b) = (unnested(a), unnested(b));
    if a == b {
        return true;
    }
    let single = matches!(inner.from.as_slice(), [f] if f.joins.is_empty());
    single && name_of(a).is_some() && name_of(a) == name_of(b)
}

/// The names the select list of `inner` gives its columns, but `*`'s.
fn item_names(inner: &Select) -> Vec<String> {
    inner
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
            SelectItem::UnnamedExpr(x) => name_of(unnested(x)),
            _ => None,
        })
        .collect()
}

/// Where `e`, an expression of the `OVER (…)` of the row number of the subquery `inner`, is
/// in the subquery without its number (`unnumbered`). The OVER clause sees the columns of
/// the subquery's FROM clause, not the names its select list gives (as in Flink and DuckDB:
/// in `SELECT k, s AS v, ROW_NUMBER() OVER (ORDER BY v)`, `v` is the table's `v`), so `e` is
/// a column of the subquery only where the subquery passes it on unchanged under a name it
/// alone has: a select item computing the same (`ts AS t` for `b.ts`, `n` for `COUNT(*) AS
/// n`, `l.k` for `l.k`), or a column of `*` over one table. Anything else — a column of a
/// join's side the subquery passes on under a name the join may have changed, a column it
/// does not select, an aggregate of its GROUP BY (`ORDER BY COUNT(*) DESC`), an expression
/// — is added to `unnumbered` as a hidden column (named in `hidden`) and dropped after the
/// top-N, as Flink plans an expression in an OVER clause: the subquery's planner resolves it
/// in its FROM clause as any select item (a qualifier names a side of a join; a name both
/// sides have is refused there, where it is). Returns the column's name.
fn over_column(
    e: &Expr,
    inner: &Select,
    unnumbered: &mut Select,
    hidden: &mut Vec<String>,
) -> Result<String, Diagnostic> {
    let e = unnested(e);
    let names = item_names(inner);
    let alone = |n: &str| names.iter().filter(|x| x.as_str() == n).count() == 1;
    let wildcard = inner.projection.iter().any(|i| {
        matches!(
            i,
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
        )
    });
    for item in &inner.projection {
        match item {
            SelectItem::ExprWithAlias { expr, alias }
                if same(expr, e, inner) && alone(&alias.value) =>
            {
                return Ok(alias.value.clone());
            }
            // A column selected as it is: named as in its table, unless another item (or a
            // column of `*`, which a join may rename) takes that name.
            SelectItem::UnnamedExpr(x) if !wildcard && same(x, e, inner) => {
                if let Some(n) = name_of(unnested(x)).filter(|n| alone(n)) {
                    return Ok(n);
                }
            }
            _ => {}
        }
    }
    // A column of `*` over one table, under its own name.
    let single = matches!(inner.from.as_slice(), [f] if f.joins.is_empty());
    let star = inner
        .projection
        .iter()
        .any(|i| matches!(i, SelectItem::Wildcard(_)));
    if let Some(n) = name_of(e).filter(|n| star && single && !names.contains(n)) {
        return Ok(n);
    }
    // A column of the one `q.*` (and no `*`), written `q.c`, under its own name: `A.id` for
    // `SELECT A.*, B.price … FROM auction A, bid B` (Nexmark q9).
    let qualified: Vec<String> = inner
        .projection
        .iter()
        .filter_map(|i| match i {
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(q), _) => {
                Some(q.to_string())
            }
            _ => None,
        })
        .collect();
    if let (Expr::CompoundIdentifier(parts), [q], false) = (e, qualified.as_slice(), star) {
        if let [table, column] = parts.as_slice() {
            if table.to_string() == *q && !names.contains(&column.value) {
                return Ok(column.value.clone());
            }
        }
    }
    // Computed in the subquery, once per expression: one aggregate call at most, as the
    // select list of a GROUP BY takes.
    let mut calls = 0;
    let _ = visit_expressions(e, |x| {
        if is_aggregate_call(x) {
            calls += 1;
        }
        ControlFlow::<()>::Continue(())
    });
    if calls > 0 && !is_aggregate_call(e) {
        return Err(unsupported(
            pos(e.span().start),
            format!("partitioning or ordering ROW_NUMBER() by `{e}`, an expression over aggregates (order by one aggregate call, `COUNT(*)`)"),
        ));
    }
    for item in &unnumbered.projection {
        if let SelectItem::ExprWithAlias { expr, alias } = item {
            if unnested(expr) == e && hidden.contains(&alias.value) {
                return Ok(alias.value.clone());
            }
        }
    }
    let column = format!("{HIDDEN}{}", hidden.len() + 1);
    unnumbered.projection.push(SelectItem::ExprWithAlias {
        expr: e.clone(),
        alias: Ident::new(column.clone()),
    });
    hidden.push(column.clone());
    Ok(column)
}

/// Checks that `column`, which `e` names, is a column of the subquery (`columns`).
fn check_selected(e: &Expr, column: &str, columns: &[(String, Attr)]) -> Result<(), Diagnostic> {
    if columns.iter().any(|(c, _)| c == column) {
        return Ok(());
    }
    Err(Diagnostic::error(
        pos(e.span().start),
        format!("`{e}` in the OVER (…) of ROW_NUMBER() is not a column of the subquery"),
    ))
}

/// The column of the subquery's input that its output column `column` passes on unchanged,
/// if any.
fn source_column(column: &str, inner: &Select) -> Option<String> {
    for item in &inner.projection {
        match item {
            SelectItem::ExprWithAlias { expr, alias } if alias.value == column => {
                return name_of(unnested(expr))
            }
            SelectItem::UnnamedExpr(x) if name_of(unnested(x)).as_deref() == Some(column) => {
                return Some(column.to_string())
            }
            SelectItem::Wildcard(_) => return Some(column.to_string()),
            _ => {}
        }
    }
    None
}

/// The event-time column of the input of `inner`, if it reads a declared table.
fn event_time(inner: &Select, tables: &mut Tables) -> Option<String> {
    let [from] = inner.from.as_slice() else {
        return None;
    };
    match &from.relation {
        TableFactor::Table {
            name, args: None, ..
        } if from.joins.is_empty() => {
            let stream = tables.read(name).ok()?;
            tables.event_time(&stream)
        }
        _ => None,
    }
}

/// Lowers the top-N the SELECT `outer` reads from `relation` (a ranked subquery, see
/// [`is_ranked`]): the subquery without its number, a `top_n`, and a filter of the other
/// conditions of the outer `WHERE`. Records the stream's columns and returns its name.
pub(super) fn lower(
    outer: &Select,
    relation: &TableFactor,
    prefix: &str,
    script: &Script<'_, '_>,
    tables: &mut Tables,
    spec: &mut Spec,
) -> Result<String, Diagnostic> {
    let TableFactor::Derived {
        subquery: q, alias, ..
    } = relation
    else {
        return Err(Diagnostic::error(
            pos(relation.span().start),
            "a top-N reads a subquery: a bug in anduin",
        ));
    };
    let alias = alias.as_ref();
    let inner = plain_select(q)?;
    let (k, f, at) = ranking_item(inner).expect("a ranked subquery has a ranking item");
    let fname = f.name.to_string();
    if !fname.eq_ignore_ascii_case("row_number") {
        return Err(unsupported(
            at,
            format!("`{fname}() OVER (…)` (top-N numbers rows with ROW_NUMBER(); RANK and DENSE_RANK give ties one number)"),
        ));
    }
    if matches!(&f.args, FunctionArguments::List(l) if !l.args.is_empty()) {
        return Err(Diagnostic::error(at, "ROW_NUMBER() takes no argument"));
    }
    let over = match &f.over {
        Some(WindowType::WindowSpec(w)) if w.window_name.is_none() && w.window_frame.is_none() => w,
        _ => {
            return Err(unsupported(
                at,
                "ROW_NUMBER() over a named window or a window frame (write OVER (PARTITION BY … ORDER BY …))",
            ))
        }
    };
    if over.order_by.is_empty() {
        return Err(Diagnostic::error(
            at,
            "ROW_NUMBER() OVER (…) needs an ORDER BY: which rows come first",
        ));
    }
    let rn = match &inner.projection[k] {
        SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
        _ => {
            return Err(Diagnostic::error(
                at,
                "name the row number, `ROW_NUMBER() OVER (…) AS rn`, and filter it in the query over the subquery (`WHERE rn <= N`)",
            ))
        }
    };

    // The outer WHERE: the number's bound, and the other conditions.
    let mut all = Vec::new();
    if let Some(w) = &outer.selection {
        conjuncts(w, &mut all);
    }
    let mut bound: Option<Bound> = None;
    let mut rest = Vec::new();
    for c in all {
        if reads(c, &rn) {
            let limit = limit_of(c, &rn)?;
            bound = Some(Bound {
                limit: bound.map_or(limit, |b| b.limit.min(limit)),
            });
        } else {
            rest.push(c);
        }
    }
    let Some(bound) = bound else {
        return Err(unsupported(
            at,
            format!("`ROW_NUMBER() OVER (…)` without `WHERE {rn} <= N` (or `{rn} < N`, `{rn} = 1`) in the query over its subquery (anduin runs ROW_NUMBER as top-N)"),
        ));
    };
    // Whether the query over the subquery reads the number.
    let ranked = outer.projection.iter().any(|item| match item {
        SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => true,
        SelectItem::UnnamedExpr(e)
        | SelectItem::ExprWithAlias { expr: e, .. }
        | SelectItem::ExprWithAliases { expr: e, .. } => reads(e, &rn),
    }) || outer.having.as_ref().is_some_and(|h| reads(h, &rn));

    // The subquery without its number, computing what its OVER (…) reads that it does not
    // select.
    let name = subquery_name(alias, prefix, spec)?;
    let mut unnumbered = inner.clone();
    unnumbered.projection.remove(k);
    let mut hidden = Vec::new();
    let key_columns = over
        .partition_by
        .iter()
        .map(|e| over_column(e, inner, &mut unnumbered, &mut hidden))
        .collect::<Result<Vec<_>, _>>()?;
    let order_by = over
        .order_by
        .iter()
        .map(|o| over_column(&o.expr, inner, &mut unnumbered, &mut hidden))
        .collect::<Result<Vec<_>, _>>()?;
    let lowered = lower_select(&unnumbered, &name, script, tables, spec)?;
    let mut keys = Vec::new();
    for (e, c) in over.partition_by.iter().zip(&key_columns) {
        check_selected(e, c, &lowered.columns)?;
        keys.push(quoted(c));
    }
    let mut order = Vec::new();
    let mut order_columns = Vec::new();
    for (o, c) in over.order_by.iter().zip(order_by) {
        check_selected(&o.expr, &c, &lowered.columns)?;
        let mut item = quoted(&c);
        if o.options.asc == Some(false) {
            item.push_str(" DESC");
        }
        match o.options.nulls_first {
            Some(true) => item.push_str(" NULLS FIRST"),
            Some(false) => item.push_str(" NULLS LAST"),
            None => {}
        }
        order.push(item);
        order_columns.push(c);
    }
    let over_at = pos(f.span().start);
    let mut params: Vec<(&str, Text)> = vec![
        ("order", Text::at(order.join(", "), over_at)),
        ("limit", Text::at(bound.limit.to_string(), over_at)),
    ];
    if !keys.is_empty() {
        params.insert(0, ("keys", Text::at(keys.join(", "), over_at)));
    }
    // Partitioned by a window's start and end: a window top-N (if the input is append-only;
    // the operator decides, knowing its input).
    let bound_key = |attr: Attr| {
        key_columns
            .iter()
            .find(|c| lowered.columns.iter().any(|(n, a)| n == *c && *a == attr))
    };
    if let (Some(_), Some(end)) = (bound_key(Attr::WindowStart), bound_key(Attr::WindowEnd)) {
        params.push(("window_end", Text::at(quoted(end), over_at)));
    }
    // Ordered by the event time of the table it reads, passed on: a deduplication by time.
    if let [c] = order_columns.as_slice() {
        let time = event_time(inner, tables);
        if time.is_some() && source_column(c, &unnumbered) == time {
            params.push(("time", Text::at(quoted(c), over_at)));
        }
    }
    let mut columns: Vec<(String, Attr)> = lowered
        .columns
        .into_iter()
        .filter(|(c, _)| !hidden.contains(c))
        .collect();
    if ranked {
        params.push(("rank_column", Text::at(quoted(&rn), over_at)));
        columns.push((rn, Attr::Plain));
    }
    let top = format!("{name}_top");
    spec.operators.push(operator(
        top.clone(),
        "top_n",
        over_at,
        &lowered.stream,
        params,
    ));
    let mut stream = top;
    if !hidden.is_empty() {
        // The hidden columns go once the top-N has ordered by them.
        let visible: Vec<String> = columns.iter().map(|(c, _)| quoted(c)).collect();
        let project = format!("{name}_ranked");
        spec.operators.push(operator(
            project.clone(),
            "map",
            over_at,
            &stream,
            vec![("columns", Text::at(visible.join(", "), over_at))],
        ));
        stream = project;
    }
    if let Some(first) = rest.first() {
        let where_at = pos(first.span().start);
        let texts: Vec<String> = rest.iter().map(|c| format!("({c})")).collect();
        let filter = format!("{prefix}_where");
        let condition =
            super::select_text::unqualified(relation, Text::at(texts.join(" AND "), where_at));
        spec.operators.push(operator(
            filter.clone(),
            "filter",
            where_at,
            &stream,
            vec![("condition", condition)],
        ));
        stream = filter;
    }
    tables.derive(Derived {
        stream: stream.clone(),
        columns,
    });
    Ok(stream)
}
