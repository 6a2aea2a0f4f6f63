//! `GROUP BY` on a stream, lowered to a window operator and a map. Two forms, as in Flink:
//!
//! - over a window table function: `FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), …)) GROUP BY
//!   window_start, window_end, k`;
//! - over the windows of a subquery: `FROM (SELECT k, window_start AS s, window_end AS e …
//!   GROUP BY k, window_start, window_end) q GROUP BY q.s, q.e`. The rows of one window of
//!   the subquery all carry its end, which is their event time; the groups are keyed by the
//!   grouped columns and close when the watermark passes that end (a tumbling window of
//!   1 ms over it), as Flink's window aggregation over window bounds does.
//!
//! A GROUP BY without a window (over a table, or over a subquery without windows) is an
//! updating aggregate instead: see `group_updating.rs`.
//!
//! A GROUP BY without aggregates (`GROUP BY id, name, window_start, window_end`) gives each
//! group once.

use anduin_types::Diagnostic;
use sqlparser::ast::Spanned;
use sqlparser::ast::{Expr, Select, SelectItem};

use super::derived::{Attr, Derived};
use super::insert::{name_of, operator, quoted, unnested, unsupported};
use super::over_aggregates::{Calls, Item, Known};
use super::source_text::pos;
use super::window_tvf::WindowTvf;
use crate::ast::Spec;
use crate::Text;

/// What the rows are grouped by besides the GROUP BY columns.
pub(super) enum Grouping {
    /// The windows of a window table function.
    Tvf(WindowTvf),
    /// The windows a subquery's rows belong to (`None`: the input is not a subquery).
    Bounds(Option<Derived>),
}

/// The stream a grouped SELECT reads, and its columns where the frontend knows them.
pub(super) struct Input<'a> {
    /// The stream's name.
    pub stream: &'a str,
    /// Its columns, if known: a column reference that is none of them is unknown.
    pub known: Option<Known>,
}

/// The name a key column has in the window operator: its own, unless that is one of the
/// window's own columns.
fn internal(c: &str) -> String {
    if c == "window_start" || c == "window_end" {
        format!("__{c}")
    } else {
        c.to_string()
    }
}

/// Lowers the GROUP BY of `s` (its select items written as `items`) over `input`; returns
/// the index of the map that ends it, named `{prefix}_select`.
pub(super) fn lower(
    s: &Select,
    group: &[&Expr],
    items: Vec<Text>,
    grouping: Grouping,
    input: Input<'_>,
    prefix: &str,
    spec: &mut Spec,
) -> Result<usize, Diagnostic> {
    let Input { stream, known } = input;
    let at = pos(s.select_token.0.span.start);
    let tvf = matches!(grouping, Grouping::Tvf(_));
    let mut keys = Vec::new();
    let (mut has_start, mut has_end) = (false, false);
    // The first expression of the GROUP BY that is not a column (there may be more).
    let mut expression: Option<&Expr> = None;
    for g in group {
        match name_of(unnested(g)).as_deref() {
            Some("window_start") if tvf => has_start = true,
            Some("window_end") if tvf => has_end = true,
            Some(k) => keys.push(k.to_string()),
            // Refused below for a window; a GROUP BY without one computes each.
            None if legacy_window(g).is_none() => {
                expression.get_or_insert(*g);
            }
            None => return Err(grouping_expression(g)),
        }
    }
    let mut stream = stream.to_string();
    let (window_at, mut params) = match grouping {
        Grouping::Tvf(tvf) => {
            if let Some(g) = expression {
                return Err(grouping_expression(g));
            }
            if !(has_start && has_end) {
                return Err(Diagnostic::error(
                    tvf.at,
                    "a window table function needs GROUP BY window_start, window_end (and the key columns)",
                ));
            }
            check_partition(&tvf, &keys)?;
            let mut params: Vec<(&str, Text)> = tvf
                .params
                .iter()
                .map(|(k, v)| (*k, Text::at(v.clone(), tvf.at)))
                .collect();
            params.push(("time", Text::at(tvf.time.clone(), tvf.at)));
            (tvf.at, params)
        }
        Grouping::Bounds(None) => {
            // No window: the groups last as long as the stream, and their results update.
            return super::group_updating::lower(
                s,
                group,
                items,
                Input {
                    stream: &stream,
                    known,
                },
                prefix,
                spec,
            );
        }
        Grouping::Bounds(Some(d)) if !d.columns.iter().any(|(_, a)| *a == Attr::WindowEnd) => {
            // A subquery without windows: grouped as a stream without windows.
            return super::group_updating::lower(
                s,
                group,
                items,
                Input {
                    stream: &stream,
                    known,
                },
                prefix,
                spec,
            );
        }
        Grouping::Bounds(Some(d)) => {
            if let Some(g) = expression {
                return Err(grouping_expression(g));
            }
            let g_at = group.first().map_or(at, |g| pos(g.span().start));
            let Some(end) = keys.iter().find(|k| d.attr(k) == Attr::WindowEnd).cloned() else {
                let ends: Vec<&str> = d
                    .columns
                    .iter()
                    .filter(|(_, a)| *a == Attr::WindowEnd)
                    .map(|(c, _)| c.as_str())
                    .collect();
                return Err(Diagnostic::error(
                    g_at,
                    if ends.is_empty() {
                        "a GROUP BY over a subquery needs windows: the subquery must select the window_end of a window table function, and the GROUP BY that column".to_string()
                    } else {
                        format!(
                            "a GROUP BY over a subquery groups its windows: add its window end `{}` (and start) to the GROUP BY",
                            ends.join("` or `")
                        )
                    },
                ));
            };
            if d.columns.iter().any(|(c, _)| internal(c) != *c) {
                // Columns named like the window's own: renamed on the way in.
                let renamed: Vec<String> = d
                    .columns
                    .iter()
                    .map(|(c, _)| {
                        if internal(c) == *c {
                            quoted(c)
                        } else {
                            format!("{} AS {}", quoted(c), quoted(&internal(c)))
                        }
                    })
                    .collect();
                let name = format!("{prefix}_rename");
                spec.operators.push(operator(
                    name.clone(),
                    "map",
                    g_at,
                    &stream,
                    vec![("columns", Text::at(renamed.join(", "), g_at))],
                ));
                stream = name;
            }
            let params = vec![
                ("kind", Text::at("tumbling", g_at)),
                ("size", Text::at("1ms", g_at)),
                ("time", Text::at(internal(&end), g_at)),
            ];
            (g_at, params)
        }
    };
    let mut aggregates = Vec::new();
    let mut columns = Vec::new();
    // Each aggregate call of the select list and HAVING, and its column.
    let mut calls = Calls::new(spec).reading(known, true);
    // The names of the aggregates' columns (which HAVING may read).
    let mut outputs: Vec<String> = Vec::new();
    // The window's column that a column reference of an expression reads.
    let key = |c: &str| {
        if tvf && (c == "window_start" || c == "window_end") {
            Some(c.to_string())
        } else {
            keys.iter().any(|k| k == c).then(|| internal(c))
        }
    };
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
        match name_of(unnested(expr)) {
            Some(c) if tvf && (c == "window_start" || c == "window_end") => columns.push(item_text),
            Some(c) if keys.contains(&c) => {
                if internal(&c) == c {
                    columns.push(item_text);
                } else {
                    let out = alias.unwrap_or_else(|| c.clone());
                    columns.push(Text::at(
                        format!("{} AS {}", quoted(&internal(&c)), quoted(&out)),
                        item_at,
                    ));
                }
            }
            Some(c) => return Err(calls.ungrouped(&c, item_at)),
            None => {
                let out = alias.unwrap_or_else(|| expr.to_string());
                match calls.item_over(expr, &[], &key)? {
                    Item::Aggregate => {
                        calls.item(unnested(expr).to_string(), out.clone());
                        outputs.push(out.clone());
                        aggregates.push(item_text);
                        columns.push(Text::at(quoted(&out), item_at));
                    }
                    // An expression over aggregates, the window's bounds and keys: computed
                    // by the map from the window's columns.
                    Item::Computed(over) => {
                        columns.push(Text::at(format!("{over} AS {}", quoted(&out)), item_at));
                    }
                }
            }
        }
    }
    // HAVING: a filter of the windows' results, before the map leaves the hidden columns out.
    let having = match &s.having {
        Some(h) => {
            let readable =
                |c: &str| key(c).or_else(|| outputs.iter().any(|o| o == c).then(|| c.to_string()));
            let cond = calls.rewrite(h, "__having", &[], &readable)?;
            Some(Text::at(cond.to_string(), pos(h.span().start)))
        }
        None => None,
    };
    aggregates.append(&mut calls.hidden);
    if aggregates.is_empty() {
        // Each group once: the window needs an aggregate, which the map then drops.
        aggregates.push(Text::at("COUNT(*) AS \"__rows\"", at));
    }
    if !keys.is_empty() {
        let keys: Vec<String> = keys.iter().map(|k| internal(k)).collect();
        params.push(("keys", Text::at(keys.join(", "), window_at)));
    }
    params.push(("aggregates", Text::join(&aggregates, ", ")));
    let window = format!("{prefix}_window");
    spec.operators.push(operator(
        window.clone(),
        "window",
        window_at,
        &stream,
        params,
    ));
    let mut results = window;
    if let Some(cond) = having {
        let name = format!("{prefix}_having");
        spec.operators.push(operator(
            name.clone(),
            "filter",
            cond.pos(),
            &results,
            vec![("condition", cond)],
        ));
        results = name;
    }
    spec.operators.push(operator(
        format!("{prefix}_select"),
        "map",
        at,
        &results,
        vec![("columns", Text::join(&columns, ", "))],
    ));
    Ok(spec.operators.len() - 1)
}

/// A `SESSION(TABLE t PARTITION BY k, …)` of a GROUP BY by `keys`: the window keys its
/// sessions by the GROUP BY's keys, so a partition of other columns (sessions over several
/// groups, or groups within a session) is refused, at its first column.
fn check_partition(tvf: &WindowTvf, keys: &[String]) -> Result<(), Diagnostic> {
    let Some((_, at)) = tvf.partition.first() else {
        return Ok(());
    };
    let partition: Vec<&str> = tvf.partition.iter().map(|(c, _)| c.as_str()).collect();
    let same = partition.iter().all(|p| keys.iter().any(|k| k == p))
        && keys.iter().all(|k| partition.contains(&k.as_str()));
    if same {
        return Ok(());
    }
    Err(unsupported(
        *at,
        format!(
            "SESSION partitioned by ({}) and grouped by ({}) (a window aggregation's sessions are those of its groups: PARTITION BY the GROUP BY's key columns, or leave PARTITION BY out)",
            partition.join(", "),
            keys.join(", ")
        ),
    ))
}

/// `TUMBLE`, `HOP` or `SESSION` if `g` is one of Flink's legacy group windows
/// (`SESSION(ts, INTERVAL '10' SECOND)`).
pub(super) fn legacy_window(g: &Expr) -> Option<String> {
    match unnested(g) {
        Expr::Function(f) => Some(f.name.to_string().to_uppercase())
            .filter(|n| ["TUMBLE", "HOP", "SESSION"].contains(&n.as_str())),
        _ => None,
    }
}

/// The error of a GROUP BY item that is not a column: Flink's legacy group windows
/// (`GROUP BY k, SESSION(ts, INTERVAL '10' SECOND)`, Nexmark q11's) are the window table
/// functions in anduin; another expression can be computed as a column of a subquery.
pub(super) fn grouping_expression(g: &Expr) -> Diagnostic {
    let at = pos(g.span().start);
    match legacy_window(g) {
        Some(w) => Diagnostic::error(
            at,
            format!(
                "the group window `{g}` (Flink's legacy GROUP BY {w}(…), with {w}_START and {w}_END) is not supported: use the window table function, FROM TABLE({w}(TABLE t, DESCRIPTOR(ts), …)) … GROUP BY window_start, window_end, …"
            ),
        ),
        None => unsupported(
            at,
            format!(
                "grouping by the expression `{g}` (group by columns: compute it as a column of a subquery, FROM (SELECT …, {g} AS k FROM t) GROUP BY k)"
            ),
        ),
    }
}
