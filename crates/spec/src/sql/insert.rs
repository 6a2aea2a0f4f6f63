//! `INSERT INTO sink SELECT …`: one pipeline per statement. `WHERE` becomes a filter; a
//! window table function (`TUMBLE`, `HOP`, `SESSION`) with its `GROUP BY` becomes a window;
//! the select list becomes a map; the sink table's connector a writer.

use anduin_types::{Diagnostic, Pos};
use sqlparser::ast::Spanned;
use sqlparser::ast::{
    DateTimeField, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, Insert,
    ObjectName, Query, Select, SelectItem, SetExpr, TableFactor, TableObject, Value as SqlValue,
};

use super::dialect::TABLE_ARGUMENT;
use super::source_text::{pos, Source};
use super::tables::Tables;
use crate::ast::{OperatorDef, OutputDef, Param, Spec, Value};
use crate::Text;

/// A window table function, as the window operator's params.
struct WindowTvf {
    params: Vec<(&'static str, String)>,
    time: String,
    at: Pos,
}

fn unsupported(at: Pos, what: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(at, format!("{what} is not supported yet"))
}

/// Lowers the `n`-th INSERT of the script into `spec`.
pub(crate) fn lower(
    ins: &Insert,
    n: usize,
    tables: &mut Tables,
    source: &Source<'_>,
    spec: &mut Spec,
) -> Result<(), Diagnostic> {
    let at = pos(ins.span().start);
    let TableObject::TableName(target) = &ins.table else {
        return Err(unsupported(at, "INSERT INTO a table function"));
    };
    if !ins.columns.is_empty() {
        return Err(unsupported(
            at,
            "INSERT INTO t (columns …): select the columns in the table's order, and",
        ));
    }
    let query = ins
        .source
        .as_deref()
        .ok_or_else(|| unsupported(at, "INSERT without SELECT"))?;
    let select = plain_select(query)?;
    let (stream, last_map) = lower_select(select, n, tables, source, spec)?;
    if let Some(ty) = tables.write(target, &stream, spec)? {
        // A sink with declared columns: the select list must produce exactly them.
        if let Some(map) = last_map.and_then(|i| spec.operators.get_mut(i)) {
            if let Some(out) = map.outputs.first_mut() {
                out.ty = Some(Text::at(ty, pos(target.span().start)));
            }
        }
    }
    Ok(())
}

fn plain_select(q: &Query) -> Result<&Select, Diagnostic> {
    let at = pos(q.span().start);
    if q.with.is_some() {
        return Err(unsupported(at, "WITH (common table expressions)"));
    }
    if q.order_by.is_some() {
        return Err(unsupported(at, "ORDER BY on a stream"));
    }
    if q.limit_clause.is_some() || q.fetch.is_some() {
        return Err(unsupported(at, "LIMIT on a stream"));
    }
    match q.body.as_ref() {
        SetExpr::Select(s) => Ok(s),
        other => Err(unsupported(
            pos(other.span().start),
            "a query other than SELECT … FROM … (UNION, VALUES, …)",
        )),
    }
}

fn name_of(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(i) => Some(i.value.clone()),
        Expr::CompoundIdentifier(ids) => ids.last().map(|i| i.value.clone()),
        _ => None,
    }
}

fn text(source: &Source<'_>, node: &impl Spanned, fallback: impl std::fmt::Display) -> Text {
    let span = node.span();
    source
        .text(span)
        .unwrap_or_else(|| Text::at(fallback.to_string(), pos(span.start)))
}

fn operator(
    name: String,
    kind: &str,
    at: Pos,
    input: &str,
    params: Vec<(&str, Text)>,
) -> OperatorDef {
    OperatorDef {
        name: Text::at(name.clone(), at),
        kind: Text::at(kind, at),
        params: params
            .into_iter()
            .map(|(k, v)| Param {
                name: Text::at(k, at),
                value: Value::String(v),
            })
            .collect(),
        inputs: vec![Text::at(input, at)],
        outputs: vec![OutputDef {
            name: Text::at(name, at),
            ty: None,
        }],
        pos: at,
    }
}

/// Lowers a SELECT; returns the stream it produces and the index of its map, if any.
fn lower_select(
    s: &Select,
    n: usize,
    tables: &mut Tables,
    source: &Source<'_>,
    spec: &mut Spec,
) -> Result<(String, Option<usize>), Diagnostic> {
    let at = pos(s.select_token.0.span.start);
    if s.distinct.is_some() {
        return Err(unsupported(at, "SELECT DISTINCT"));
    }
    if let Some(h) = &s.having {
        return Err(unsupported(pos(h.span().start), "HAVING"));
    }
    if let Some(q) = &s.qualify {
        return Err(unsupported(pos(q.span().start), "QUALIFY"));
    }
    let [from] = s.from.as_slice() else {
        return Err(unsupported(at, "a SELECT from several tables (or none)"));
    };
    if let Some(j) = from.joins.first() {
        return Err(unsupported(pos(j.relation.span().start), "JOIN"));
    }
    let (mut stream, window) = match &from.relation {
        TableFactor::Table {
            name, args: None, ..
        } => (tables.read(name)?, None),
        TableFactor::TableFunction { expr, .. } => {
            let (table, tvf) = window_tvf(expr)?;
            (tables.read(&table)?, Some(tvf))
        }
        other => {
            return Err(unsupported(
                pos(other.span().start),
                format!("FROM `{other}`"),
            ))
        }
    };
    let prefix = format!("insert{n}");
    if let Some(cond) = &s.selection {
        let name = format!("{prefix}_where");
        spec.operators.push(operator(
            name.clone(),
            "filter",
            pos(cond.span().start),
            &stream,
            vec![("condition", text(source, cond, cond))],
        ));
        stream = name;
    }
    let group: Vec<&Expr> = match &s.group_by {
        GroupByExpr::Expressions(exprs, mods) if mods.is_empty() => exprs.iter().collect(),
        other => return Err(unsupported(at, format!("GROUP BY {other}"))),
    };
    let Some(tvf) = window else {
        if let Some(g) = group.first() {
            return Err(Diagnostic::error(
                pos(g.span().start),
                "a GROUP BY on a stream needs a window: FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND)) … GROUP BY window_start, window_end, …",
            ));
        }
        let items: Vec<Text> = s.projection.iter().map(|i| text(source, i, i)).collect();
        let name = format!("{prefix}_select");
        spec.operators.push(operator(
            name.clone(),
            "map",
            at,
            &stream,
            vec![("columns", Text::join(&items, ", "))],
        ));
        return Ok((name, Some(spec.operators.len() - 1)));
    };
    // A window: GROUP BY window_start, window_end and the keys.
    let mut keys = Vec::new();
    let (mut has_start, mut has_end) = (false, false);
    for g in &group {
        match name_of(g).as_deref() {
            Some("window_start") => has_start = true,
            Some("window_end") => has_end = true,
            Some(k) => keys.push(k.to_string()),
            None => {
                return Err(unsupported(
                    pos(g.span().start),
                    format!("grouping by the expression `{g}` (group by columns)"),
                ))
            }
        }
    }
    if !(has_start && has_end) {
        return Err(Diagnostic::error(
            tvf.at,
            "a window table function needs GROUP BY window_start, window_end (and the key columns)",
        ));
    }
    let mut aggregates = Vec::new();
    let mut columns = Vec::new();
    for item in &s.projection {
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.clone())),
            other => {
                return Err(unsupported(
                    pos(other.span().start),
                    format!("`{other}` in a windowed SELECT"),
                ))
            }
        };
        let item_at = pos(item.span().start);
        match name_of(expr) {
            Some(c) if c == "window_start" || c == "window_end" || keys.contains(&c) => columns.push(text(source, item, item)),
            Some(c) => {
                return Err(Diagnostic::error(
                    item_at,
                    format!("column `{c}` is neither grouped by nor aggregated: add it to GROUP BY, or aggregate it"),
                ))
            }
            None => {
                let out = alias.unwrap_or_else(|| expr.to_string());
                aggregates.push(text(source, item, item));
                columns.push(Text::at(format!("\"{}\"", out.replace('"', "\"\"")), item_at));
            }
        }
    }
    if aggregates.is_empty() {
        return Err(Diagnostic::error(
            at,
            "a windowed SELECT needs at least one aggregate, such as COUNT(*)",
        ));
    }
    let window = format!("{prefix}_window");
    let mut params: Vec<(&str, Text)> = tvf
        .params
        .iter()
        .map(|(k, v)| (*k, Text::at(v.clone(), tvf.at)))
        .collect();
    params.push(("time", Text::at(tvf.time.clone(), tvf.at)));
    if !keys.is_empty() {
        params.push(("keys", Text::at(keys.join(", "), tvf.at)));
    }
    params.push(("aggregates", Text::join(&aggregates, ", ")));
    spec.operators
        .push(operator(window.clone(), "window", tvf.at, &stream, params));
    let name = format!("{prefix}_select");
    spec.operators.push(operator(
        name.clone(),
        "map",
        at,
        &window,
        vec![("columns", Text::join(&columns, ", "))],
    ));
    Ok((name, Some(spec.operators.len() - 1)))
}

/// `TUMBLE(TABLE t, DESCRIPTOR(ts), size)`, `HOP(TABLE t, DESCRIPTOR(ts), slide, size)`,
/// `SESSION(TABLE t, DESCRIPTOR(ts), gap)`.
fn window_tvf(e: &Expr) -> Result<(ObjectName, WindowTvf), Diagnostic> {
    let at = pos(e.span().start);
    let Expr::Function(f) = e else {
        return Err(unsupported(at, format!("FROM TABLE({e})")));
    };
    let fname = f.name.to_string().to_uppercase();
    let FunctionArguments::List(list) = &f.args else {
        return Err(Diagnostic::error(
            at,
            format!("{fname} needs arguments: {fname}(TABLE t, DESCRIPTOR(ts), …)"),
        ));
    };
    let args: Vec<&Expr> = list
        .args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e),
            other => Err(unsupported(
                at,
                format!("the argument `{other}` (named arguments)"),
            )),
        })
        .collect::<Result<_, _>>()?;
    let table = match args.first() {
        Some(Expr::Function(t)) if t.name.to_string() == TABLE_ARGUMENT => match &t.args {
            FunctionArguments::List(l) => match l.args.first() {
                Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::CompoundIdentifier(
                    ids,
                )))) => ObjectName::from(ids.clone()),
                _ => {
                    return Err(Diagnostic::error(
                        at,
                        "expected `TABLE name` as the first argument",
                    ))
                }
            },
            _ => {
                return Err(Diagnostic::error(
                    at,
                    "expected `TABLE name` as the first argument",
                ))
            }
        },
        _ => {
            return Err(Diagnostic::error(
                at,
                format!("expected `TABLE name` as the first argument of {fname}"),
            ))
        }
    };
    let time = match args.get(1) {
        Some(Expr::Function(d)) if d.name.to_string().eq_ignore_ascii_case("DESCRIPTOR") => {
            match &d.args {
                FunctionArguments::List(l) => match l.args.as_slice() {
                    [FunctionArg::Unnamed(FunctionArgExpr::Expr(c))] => name_of(c),
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
    .ok_or_else(|| {
        Diagnostic::error(
            at,
            format!("expected DESCRIPTOR(time_column) as the second argument of {fname}"),
        )
    })?;
    let duration = |i: usize, what: &str| -> Result<String, Diagnostic> {
        let e = args.get(i).ok_or_else(|| {
            Diagnostic::error(at, format!("{fname} needs its {what}: an INTERVAL"))
        })?;
        interval_ms(e).map(|ms| format!("{ms}ms"))
    };
    let params = match fname.as_str() {
        "TUMBLE" => {
            if args.len() > 3 {
                return Err(unsupported(at, "the offset argument of TUMBLE"));
            }
            vec![
                ("kind", "tumbling".to_string()),
                ("size", duration(2, "size")?),
            ]
        }
        "HOP" => {
            if args.len() > 4 {
                return Err(unsupported(at, "the offset argument of HOP"));
            }
            vec![
                ("kind", "sliding".to_string()),
                ("slide", duration(2, "slide")?),
                ("size", duration(3, "size")?),
            ]
        }
        "SESSION" => vec![
            ("kind", "session".to_string()),
            ("gap", duration(2, "gap")?),
        ],
        "CUMULATE" => return Err(unsupported(at, "CUMULATE")),
        _ => {
            return Err(Diagnostic::error(
                at,
                format!("unknown window table function {fname}: expected TUMBLE, HOP or SESSION"),
            ))
        }
    };
    Ok((table, WindowTvf { params, time, at }))
}

/// The milliseconds of an `INTERVAL '1' SECOND` (or `INTERVAL '1.5 seconds'`).
fn interval_ms(e: &Expr) -> Result<u64, Diagnostic> {
    let at = pos(e.span().start);
    let bad = || {
        Diagnostic::error(
            at,
            format!("expected an interval such as INTERVAL '1' SECOND, found `{e}`"),
        )
    };
    let Expr::Interval(iv) = e else {
        return Err(bad());
    };
    let value = match iv.value.as_ref() {
        Expr::Value(v) => match &v.value {
            SqlValue::SingleQuotedString(s) | SqlValue::Number(s, _) => s.clone(),
            _ => return Err(bad()),
        },
        _ => return Err(bad()),
    };
    let unit_ms: f64 = match &iv.leading_field {
        None => return anduin_types::parse_duration_ms(&value).ok_or_else(bad),
        Some(DateTimeField::Millisecond | DateTimeField::Milliseconds) => 1.0,
        Some(DateTimeField::Second | DateTimeField::Seconds) => 1_000.0,
        Some(DateTimeField::Minute | DateTimeField::Minutes) => 60_000.0,
        Some(DateTimeField::Hour | DateTimeField::Hours) => 3_600_000.0,
        Some(DateTimeField::Day | DateTimeField::Days) => 86_400_000.0,
        Some(other) => return Err(Diagnostic::error(at, format!("interval unit {other} is not supported: use MILLISECOND, SECOND, MINUTE, HOUR or DAY"))),
    };
    let v: f64 = value.trim().parse().map_err(|_| bad())?;
    let ms = v * unit_ms;
    if !(ms.is_finite() && ms > 0.0) {
        return Err(bad());
    }
    Ok(ms.round() as u64)
}
