//! `GROUP BY` without a window (and aggregates without `GROUP BY`), lowered to an `aggregate`
//! operator and a map: the result is an updating stream, each change of a group's result a
//! row (`+I`, `-U`, `+U`, `-D`; see `anduin_types::change`).
//!
//! ```sql
//! INSERT INTO totals
//! SELECT sensor, COUNT(*) AS n, MAX(value) AS top
//! FROM readings
//! GROUP BY sensor
//! HAVING COUNT(*) > 1;
//! ```
//!
//! `HAVING` becomes the aggregate's `having` condition over its result columns: an aggregate
//! call in it that the select list also computes is read from that column, any other is
//! computed as a hidden column (`__having1`, …) that the map then leaves out.

use std::ops::ControlFlow;

use anduin_types::Diagnostic;
use sqlparser::ast::{visit_expressions_mut, Expr, Select, SelectItem, Spanned};

use super::group::Input;
use super::insert::{name_of, operator, quoted, unnested, unsupported};
use super::over_aggregates::{Calls, Item};
use super::source_text::pos;
use crate::ast::Spec;
use crate::Text;

/// The aggregate functions the `aggregate` operator knows (others are refused by it, naming
/// them), and Flink's `listagg`, which DataFusion does not know (refused by the frontend:
/// [`Calls`](super::over_aggregates::Calls)).
const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "stddev",
    "variance",
    "var",
    "stddev_pop",
    "var_pop",
    "bool_and",
    "bool_or",
    "first_value",
    "last_value",
    "array_agg",
    "string_agg",
    "listagg",
    "median",
    "approx_distinct",
];

/// Whether `e` calls an aggregate function (not as a window function: `OVER (…)`).
pub(super) fn is_aggregate_call(e: &Expr) -> bool {
    match e {
        Expr::Function(f) if f.over.is_none() => f
            .name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .is_some_and(|i| AGGREGATES.contains(&i.value.to_lowercase().as_str())),
        _ => false,
    }
}

/// An error for the first window function (`f(…) OVER (…)`) in the select list of `s`: OVER
/// windows come with a later part of issue 17, and `ROW_NUMBER() OVER (…)` is lowered only in
/// the shape of a top-N (`top_n.rs`), which takes it out of the select list first.
pub(super) fn refuse_over(s: &Select) -> Result<(), Diagnostic> {
    for item in &s.projection {
        let mut e = match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e.clone(),
            _ => continue,
        };
        let mut found = None;
        let _ = visit_expressions_mut(&mut e, |x| {
            if let Expr::Function(f) = x {
                if f.over.is_some() && found.is_none() {
                    found = Some((f.name.to_string(), pos(f.span().start)));
                }
            }
            ControlFlow::<()>::Continue(())
        });
        if let Some((name, at)) = found {
            let what = match name.to_lowercase().as_str() {
                "row_number" => format!("`{name}() OVER (…)` outside top-N (a subquery numbering its rows `… AS rn`, whose number the query over it filters: `WHERE rn <= N`)"),
                "rank" | "dense_rank" => {
                    format!("`{name}() OVER (…)` (top-N numbers rows with ROW_NUMBER())")
                }
                _ => format!("`{name}(…) OVER (…)` (an OVER window)"),
            };
            return Err(unsupported(at, what));
        }
    }
    Ok(())
}

/// An error for an aggregate call in GROUP BY expression `g` (`GROUP BY COUNT(*)`): a group's
/// key is known before its rows are counted.
fn refuse_aggregate_key(g: &Expr) -> Result<(), Diagnostic> {
    let mut e = g.clone();
    let mut found = None;
    let _ = visit_expressions_mut(&mut e, |x| {
        if is_aggregate_call(x) && found.is_none() {
            found = Some((x.to_string(), pos(x.span().start)));
        }
        ControlFlow::<()>::Continue(())
    });
    match found {
        Some((call, at)) => Err(Diagnostic::error(
            at,
            format!("`{call}` is an aggregate, and GROUP BY takes what each row has (columns, expressions of them): a group's rows are aggregated after they are grouped. Group by columns, and aggregate in the select list (or filter groups by an aggregate with HAVING)"),
        )),
        None => Ok(()),
    }
}

/// Whether any select item of `s` holds an aggregate call.
pub(super) fn has_aggregates(s: &Select) -> bool {
    let mut found = false;
    for item in &s.projection {
        let mut e = match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e.clone(),
            _ => continue,
        };
        let _ = visit_expressions_mut(&mut e, |x| {
            if is_aggregate_call(x) {
                found = true;
            }
            ControlFlow::<()>::Continue(())
        });
    }
    found
}

/// Lowers the GROUP BY (`group`) of `s` (its select items written as `items`) over
/// `input`, with no window: an aggregate `{prefix}_group` and a map `{prefix}_select`,
/// whose index it returns. Expressions of the GROUP BY (`DATE_FORMAT(ts, 'yyyy-MM-dd')`) are
/// computed first, by a map `{prefix}_group_keys` that adds them as columns `__group1`, …;
/// a select item that is one of them (as written) reads its column.
pub(super) fn lower(
    s: &Select,
    group: &[&Expr],
    items: Vec<Text>,
    input: Input<'_>,
    prefix: &str,
    spec: &mut Spec,
) -> Result<usize, Diagnostic> {
    let Input { stream, known } = input;
    let at = pos(s.select_token.0.span.start);
    let mut keys = Vec::new();
    // Each expression of the GROUP BY (as written) and the column that holds it.
    let mut grouped: Vec<(String, String)> = Vec::new();
    for g in group {
        refuse_aggregate_key(g)?;
        match name_of(unnested(g)) {
            Some(k) => keys.push(k),
            None if super::group::legacy_window(g).is_some() => {
                return Err(super::group::grouping_expression(g))
            }
            None => {
                let column = format!("__group{}", grouped.len() + 1);
                grouped.push((unnested(g).to_string(), column.clone()));
                keys.push(column);
            }
        }
    }
    let stream = if grouped.is_empty() {
        stream.to_string()
    } else {
        // The expressions of the GROUP BY, computed beside the input's columns.
        let mut cols = vec![Text::at("*", at)];
        for (written, column) in &grouped {
            cols.push(Text::at(format!("{written} AS {}", quoted(column)), at));
        }
        let keyed = format!("{prefix}_group_keys");
        spec.operators.push(operator(
            keyed.clone(),
            "map",
            at,
            stream,
            vec![("columns", Text::join(&cols, ", "))],
        ));
        keyed
    };
    let stream = stream.as_str();
    let mut aggregates: Vec<Text> = Vec::new();
    // Each aggregate call of the select list and HAVING, and its column.
    let mut calls = Calls::new(spec).reading(known, false);
    // The names of the aggregates' columns (which HAVING may read).
    let mut outputs: Vec<String> = Vec::new();
    let mut columns = Vec::new();
    let key = |c: &str| keys.iter().any(|k| k == c).then(|| c.to_string());
    for item in &s.projection {
        // The select items that are aggregate calls first: an expression or HAVING that
        // calls one of them reads its column.
        let (expr, out) = match item {
            SelectItem::UnnamedExpr(e) => (e, e.to_string()),
            SelectItem::ExprWithAlias { expr, alias } => (expr, alias.value.clone()),
            _ => continue,
        };
        if calls.is_aggregate(unnested(expr)) {
            calls.item(unnested(expr).to_string(), out);
        }
    }
    for (item, item_text) in s.projection.iter().zip(items) {
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.clone())),
            other => {
                return Err(unsupported(
                    pos(other.span().start),
                    format!("`{other}` in a grouped SELECT"),
                ))
            }
        };
        let item_at = pos(item.span().start);
        let alias_given = alias.is_some();
        let written = unnested(expr).to_string();
        if let Some((_, column)) = grouped.iter().find(|(w, _)| *w == written) {
            // An expression of the GROUP BY: its column, under the item's name.
            let out = alias.unwrap_or(written);
            columns.push(Text::at(
                format!("{} AS {}", quoted(column), quoted(&out)),
                item_at,
            ));
            continue;
        }
        match name_of(unnested(expr)) {
            Some(c) if keys.contains(&c) => columns.push(item_text),
            Some(c) => return Err(calls.ungrouped(&c, item_at)),
            None => {
                let out = alias.unwrap_or_else(|| expr.to_string());
                match calls.item_over(expr, &grouped, &key)? {
                    Item::Aggregate => {
                        calls.item(written, out.clone());
                        outputs.push(out.clone());
                        // Unnamed, it is named as written (`AVG(q.x)`, not `AVG(x)`, the
                        // text the aggregate reads over its input).
                        aggregates.push(if alias_given {
                            item_text
                        } else {
                            Text::at(
                                format!("{} AS {}", item_text.as_str(), quoted(&out)),
                                item_at,
                            )
                        });
                        columns.push(Text::at(quoted(&out), item_at));
                    }
                    // An expression over aggregates and keys: computed by the map, for each
                    // change of its group's result.
                    Item::Computed(over) => {
                        columns.push(Text::at(format!("{over} AS {}", quoted(&out)), item_at));
                    }
                }
            }
        }
    }
    let mut params: Vec<(&str, Text)> = Vec::new();
    if !keys.is_empty() {
        params.push(("keys", Text::at(keys.join(", "), at)));
    }
    let mut having = None;
    if let Some(h) = &s.having {
        let h_at = pos(h.span().start);
        // HAVING reads the keys, the aggregates' columns by their names, and its own calls.
        let readable =
            |c: &str| key(c).or_else(|| outputs.iter().any(|o| o == c).then(|| c.to_string()));
        let cond = calls.rewrite(h, "__having", &grouped, &readable)?;
        having = Some(Text::at(cond.to_string(), h_at));
    }
    aggregates.append(&mut calls.hidden);
    if let Some(h) = having {
        params.push(("having", h));
    }
    if aggregates.is_empty() {
        // Each group once: the aggregate needs an aggregate, which the map then drops.
        aggregates.push(Text::at("COUNT(*) AS \"__rows\"", at));
    }
    params.insert(0, ("aggregates", Text::join(&aggregates, ", ")));
    let group_op = format!("{prefix}_group");
    spec.operators
        .push(operator(group_op.clone(), "aggregate", at, stream, params));
    spec.operators.push(operator(
        format!("{prefix}_select"),
        "map",
        at,
        &group_op,
        vec![("columns", Text::join(&columns, ", "))],
    ));
    Ok(spec.operators.len() - 1)
}
