//! OVER windows: a SELECT whose items aggregate over a window of rows (`agg(…) OVER
//! (PARTITION BY … ORDER BY <event time> ROWS|RANGE BETWEEN … PRECEDING AND CURRENT ROW)`),
//! lowered to an `over` operator that adds one column per aggregate to each row, then a map of
//! the select list reading those columns, as Flink plans its OVER aggregation:
//!
//! ```sql
//! INSERT INTO out
//! SELECT auction, price,
//!   AVG(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS avg3
//! FROM bid;
//! ```
//!
//! Supported, as in Flink: ordered by the input's event time, ascending; frames `ROWS
//! BETWEEN n PRECEDING AND CURRENT ROW`, `RANGE BETWEEN INTERVAL '…' PRECEDING AND CURRENT
//! ROW`, either `UNBOUNDED PRECEDING`, or none (`RANGE … UNBOUNDED PRECEDING`, SQL's default);
//! `COUNT`, `SUM`, `AVG`, `MIN`, `MAX` (with `DISTINCT` for COUNT, `FILTER (WHERE …)`); every
//! OVER of one SELECT the same window. The input may be updating (a subquery with a GROUP BY
//! without a window, a top-N, an outer join): the result is then updating too, each change of
//! the input taking back the results it alters and emitting them anew (see the `over`
//! operator; Flink refuses such a query). Everything else is refused naming it and its
//! position.

use std::ops::ControlFlow;

use anduin_types::{Diagnostic, Pos};
use sqlparser::ast::{
    visit_expressions, visit_expressions_mut, Expr, Function, GroupByExpr, Ident, Select,
    SelectItem, Spanned, TableFactor, Value as SqlValue, WindowFrameBound, WindowFrameUnits,
    WindowSpec, WindowType,
};

use super::derived::{item_column, Attr};
use super::insert::{
    lower_subquery, name_of, operator, quoted, unnested, unsupported, Lowered, Script,
};
use super::select_text::{unqualified, written};
use super::source_text::pos;
use super::tables::Tables;
use crate::ast::Spec;
use crate::Text;

/// The aggregates an OVER window computes.
const AGGREGATES: &[&str] = &["count", "sum", "avg", "min", "max"];

/// The name a function call is known by, lowercase.
fn function_name(f: &Function) -> String {
    f.name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map_or_else(|| f.name.to_string(), |i| i.value.clone())
        .to_lowercase()
}

/// The window function calls (`f(…) OVER …`) of `s`'s select list, in order.
fn over_calls(s: &Select) -> Vec<Function> {
    let mut out = Vec::new();
    for item in &s.projection {
        let e = match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
            _ => continue,
        };
        let _ = visit_expressions(e, |x| {
            if let Expr::Function(f) = x {
                if f.over.is_some() {
                    out.push(f.clone());
                }
            }
            ControlFlow::<()>::Continue(())
        });
    }
    out
}

/// Whether `s` computes an aggregate over a window (`SUM(x) OVER (…)`): lowered here.
pub(super) fn has_over_aggregate(s: &Select) -> bool {
    over_calls(s)
        .iter()
        .any(|f| AGGREGATES.contains(&function_name(f).as_str()))
}

/// The frame param of the `over` operator for `spec`'s frame, or why it is refused.
fn frame_of(w: &WindowSpec, at: Pos) -> Result<String, Diagnostic> {
    let Some(frame) = &w.window_frame else {
        // SQL's default with ORDER BY: from the first row to the current row's last peer.
        return Ok("range unbounded".into());
    };
    let units = match frame.units {
        WindowFrameUnits::Rows => "rows",
        WindowFrameUnits::Range => "range",
        WindowFrameUnits::Groups => {
            return Err(unsupported(
                at,
                "a GROUPS frame in an OVER window (ROWS and RANGE are)",
            ))
        }
    };
    match &frame.end_bound {
        None | Some(WindowFrameBound::CurrentRow) => {}
        Some(end) => {
            return Err(unsupported(
                at,
                format!("an OVER window whose frame ends at `{end}` (a frame ends at CURRENT ROW: rows after the current one have not come yet)"),
            ))
        }
    }
    match &frame.start_bound {
        WindowFrameBound::Preceding(None) => Ok(format!("{units} unbounded")),
        WindowFrameBound::CurrentRow if units == "rows" => Ok("rows 0".into()),
        WindowFrameBound::CurrentRow => Ok("range 0ms".into()),
        WindowFrameBound::Preceding(Some(n)) if units == "rows" => {
            let rows = match unnested(n) {
                Expr::Value(v) => match &v.value {
                    SqlValue::Number(s, _) => s.parse::<u64>().ok(),
                    _ => None,
                },
                _ => None,
            };
            rows.map(|r| format!("rows {r}")).ok_or_else(|| {
                Diagnostic::error(
                    pos(n.span().start),
                    format!("`{n}` in ROWS BETWEEN … PRECEDING: how many rows, a whole number"),
                )
            })
        }
        WindowFrameBound::Preceding(Some(x)) => {
            let ms = super::window_tvf::signed_interval_ms(x)?;
            if ms < 0 {
                return Err(Diagnostic::error(
                    pos(x.span().start),
                    format!("`{x}` in RANGE BETWEEN … PRECEDING: an interval of zero or more"),
                ));
            }
            Ok(format!("range {ms}ms"))
        }
        WindowFrameBound::Following(_) => Err(unsupported(
            at,
            format!("an OVER window whose frame starts at `{}` (a frame of rows before the current one, ending at CURRENT ROW)", frame.start_bound),
        )),
    }
}

/// Lowers a SELECT with aggregates over a window (see [`has_over_aggregate`]) to operators
/// named after `prefix`: its input, the WHERE's filter, an `over`, and the select list's map.
pub(super) fn lower(
    s: &Select,
    prefix: &str,
    script: &Script<'_, '_>,
    tables: &mut Tables,
    spec: &mut Spec,
) -> Result<Lowered, Diagnostic> {
    let calls = over_calls(s);
    let first = calls.first().expect("a SELECT with an OVER call");
    let at = pos(first.span().start);
    // Every window function is an aggregate over the same window.
    let mut window: Option<&WindowSpec> = None;
    for f in &calls {
        let f_at = pos(f.span().start);
        let name = function_name(f);
        if !AGGREGATES.contains(&name.as_str()) {
            let what = match name.as_str() {
                "row_number" => format!("`{}() OVER (…)` beside aggregates over a window (ROW_NUMBER() is top-N: a subquery numbering its rows `… AS rn`, whose number the query over it filters)", f.name),
                _ => format!("`{}(…) OVER (…)` (OVER windows compute COUNT, SUM, AVG, MIN and MAX)", f.name),
            };
            return Err(unsupported(f_at, what));
        }
        let w =
            match &f.over {
                Some(WindowType::WindowSpec(w)) if w.window_name.is_none() => w,
                _ => return Err(unsupported(
                    f_at,
                    "a named window in OVER (write the window in the OVER (…) of each aggregate)",
                )),
            };
        match window {
            None => window = Some(w),
            Some(first) if first.to_string() == w.to_string() => {}
            Some(first) => {
                return Err(unsupported(
                    f_at,
                    format!("aggregates over different windows in one SELECT (`OVER ({w})` beside `OVER ({first})`; Flink asks the same of an OVER aggregation)"),
                ))
            }
        }
        if !f.within_group.is_empty() {
            return Err(unsupported(f_at, "WITHIN GROUP in an OVER window"));
        }
    }
    let w = window.expect("at least one OVER call");
    if let GroupByExpr::Expressions(g, _) = &s.group_by {
        if let Some(e) = g.first() {
            return Err(unsupported(
                pos(e.span().start),
                "GROUP BY beside an OVER window in one SELECT (aggregate in a subquery, and take the OVER window of it)",
            ));
        }
    }
    if let Some(h) = &s.having {
        return Err(unsupported(
            pos(h.span().start),
            "HAVING beside an OVER window",
        ));
    }
    if s.projection.iter().any(|item| {
        let e = match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
            _ => return false,
        };
        let mut e = e.clone();
        let _ = visit_expressions_mut(&mut e, |x| {
            if matches!(x, Expr::Function(f) if f.over.is_some()) {
                *x = Expr::Identifier(Ident::new("_"));
            }
            ControlFlow::<()>::Continue(())
        });
        super::group_updating::has_aggregates(&Select {
            projection: vec![SelectItem::UnnamedExpr(e)],
            ..s.clone()
        })
    }) {
        return Err(unsupported(
            at,
            "an aggregate without OVER beside an OVER window in one SELECT",
        ));
    }

    // The input.
    let [from] = s.from.as_slice() else {
        return Err(unsupported(
            pos(s.select_token.0.span.start),
            "an OVER window over more than one table (join them in a subquery, and take the OVER window of it)",
        ));
    };
    if !from.joins.is_empty() {
        return Err(unsupported(
            pos(from.relation.span().start),
            "an OVER window over a join in the same SELECT (join in a subquery, and take the OVER window of it)",
        ));
    }
    let input = match &from.relation {
        TableFactor::Table {
            name, args: None, ..
        } => super::views::read(name, script, tables, spec)?,
        TableFactor::Derived {
            lateral: false,
            subquery,
            alias,
            ..
        } => lower_subquery(subquery, alias.as_ref(), prefix, script, tables, spec)?,
        other => {
            return Err(unsupported(
                pos(other.span().start),
                format!("an OVER window over `{other}` (a table or a subquery)"),
            ))
        }
    };
    let mut stream = input.clone();
    let written = written(script.source, s);
    if let Some(cond) = written.condition {
        let name = format!("{prefix}_where");
        spec.operators.push(operator(
            name.clone(),
            "filter",
            cond.pos(),
            &stream,
            vec![("condition", unqualified(&from.relation, cond))],
        ));
        stream = name;
    }

    // The window: keys, event time, frame.
    let columns = tables.columns(&input);
    let mut keys = Vec::new();
    for e in &w.partition_by {
        match name_of(unnested(e)) {
            Some(c) => keys.push(quoted(&c)),
            None => {
                return Err(unsupported(
                    pos(e.span().start),
                    format!("partitioning an OVER window by the expression `{e}` (select it as a column of a subquery, and name that)"),
                ))
            }
        }
    }
    let event_time = tables.event_time(&input);
    let time = match w.order_by.as_slice() {
        [] => {
            return Err(Diagnostic::error(
                at,
                "an OVER window needs ORDER BY the event time of its input: which rows come before",
            ))
        }
        [o] => {
            let o_at = pos(o.expr.span().start);
            let named = name_of(unnested(&o.expr));
            let Some(c) = named.filter(|c| {
                event_time
                    .as_deref()
                    .is_some_and(|t| t.eq_ignore_ascii_case(c))
            }) else {
                let time = event_time.as_deref().map_or_else(
                    || format!("`{input}` has no event time"),
                    |t| format!("the event time of `{input}` is `{t}`"),
                );
                return Err(unsupported(
                    o_at,
                    format!("ordering an OVER window by `{}`, which is not its input's event time ({time}; an OVER window is ordered by the event time, ascending)", o.expr),
                ));
            };
            if o.options.asc == Some(false) {
                return Err(unsupported(
                    o_at,
                    "an OVER window ordered by its event time descending (rows come in ascending time)",
                ));
            }
            event_time.unwrap_or(c)
        }
        [_, second, ..] => {
            return Err(unsupported(
                pos(second.expr.span().start),
                "an OVER window ordered by more than the event time",
            ))
        }
    };
    let frame = frame_of(w, at)?;

    // The aggregates, each a column of the `over` under a name of its own.
    let mut names: Vec<String> = Vec::new();
    let mut aggregates = Vec::new();
    for (i, f) in calls.iter().enumerate() {
        let name = (i + 1..)
            .map(|k| format!("over{k}"))
            .find(|n| !columns.iter().any(|c| c.eq_ignore_ascii_case(n)) && !names.contains(n))
            .expect("some name is free");
        let mut call = f.clone();
        call.over = None;
        let text = unqualified(
            &from.relation,
            Text::at(call.to_string(), pos(f.span().start)),
        );
        aggregates.push(format!("{} AS {}", text.as_str(), quoted(&name)));
        names.push(name);
    }
    let mut params: Vec<(&str, Text)> = vec![
        ("time", Text::at(quoted(&time), at)),
        ("frame", Text::at(frame, at)),
        ("aggregates", Text::at(aggregates.join(", "), at)),
    ];
    if !keys.is_empty() {
        params.insert(0, ("keys", Text::at(keys.join(", "), at)));
    }
    let over = format!("{prefix}_over");
    spec.operators
        .push(operator(over.clone(), "over", at, &stream, params));

    // The select list, each OVER call read from its column.
    let attr_of = |c: &str| tables.attr(&input, c);
    let mut items: Vec<Text> = Vec::new();
    let mut out_columns: Vec<(String, Attr)> = Vec::new();
    let mut next = names.iter();
    for (item, text) in s.projection.iter().zip(written.items) {
        let (e, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.clone())),
            SelectItem::Wildcard(_) if !columns.is_empty() => {
                for c in &columns {
                    items.push(Text::at(quoted(c), text.pos()));
                    out_columns.push((c.clone(), attr_of(c)));
                }
                continue;
            }
            other => {
                return Err(unsupported(
                    pos(other.span().start),
                    format!("`{other}` beside an OVER window (name the columns)"),
                ))
            }
        };
        let mut replaced = e.clone();
        let mut read = None;
        let _ = visit_expressions_mut(&mut replaced, |x| {
            if matches!(x, Expr::Function(f) if f.over.is_some()) {
                if let Some(n) = next.next() {
                    read.get_or_insert(n.clone());
                    *x = Expr::Identifier(Ident::with_quote('"', n.clone()));
                }
            }
            ControlFlow::<()>::Continue(())
        });
        match read {
            None => {
                items.push(unqualified(&from.relation, text));
                out_columns.extend(item_column(item, &attr_of, false));
            }
            Some(first_read) => {
                let name = alias.unwrap_or_else(|| {
                    if matches!(unnested(e), Expr::Function(_)) {
                        first_read
                    } else {
                        e.to_string()
                    }
                });
                let expr = unqualified(
                    &from.relation,
                    Text::at(replaced.to_string(), pos(e.span().start)),
                );
                items.push(Text::at(
                    format!("{} AS {}", expr.as_str(), quoted(&name)),
                    expr.pos(),
                ));
                out_columns.push((name, Attr::Plain));
            }
        }
    }
    let name = format!("{prefix}_select");
    spec.operators.push(operator(
        name.clone(),
        "map",
        pos(s.select_token.0.span.start),
        &over,
        vec![("columns", Text::join(&items, ", "))],
    ));
    Ok(Lowered {
        stream: name,
        map: Some(spec.operators.len() - 1),
        columns: out_columns,
    })
}
