//! `INSERT INTO sink SELECT …`: one pipeline per statement. `WHERE` becomes a filter; a
//! window table function (`TUMBLE`, `HOP`, `SESSION`) with its `GROUP BY` becomes a window;
//! `MATCH_RECOGNIZE` a pattern; the select list becomes a map; the sink table's connector a
//! writer.

use anduin_types::{Diagnostic, Pos};
use sqlparser::ast::Spanned;
use sqlparser::ast::{
    Expr, GroupByExpr, Insert, Query, Select, SelectItem, SetExpr, TableFactor, TableObject,
};

use super::match_recognize::{self, RawMatch};
use super::select_text::written;
use super::source_text::{pos, Source};
use super::tables::Tables;
use crate::ast::{OperatorDef, OutputDef, Param, Spec, Value};
use crate::Text;

pub(super) fn unsupported(at: Pos, what: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(at, format!("{what} is not supported yet"))
}

/// Lowers the `n`-th INSERT of the script into `spec`.
pub(crate) fn lower(
    ins: &Insert,
    n: usize,
    tables: &mut Tables,
    source: &Source<'_>,
    matches: &[RawMatch],
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
    let (stream, last_map) = lower_select(select, n, tables, source, matches, spec)?;
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

pub(super) fn plain_select(q: &Query) -> Result<&Select, Diagnostic> {
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

/// `e` without the parentheses around it: `(x)` as `x`.
pub(super) fn unnested(mut e: &Expr) -> &Expr {
    while let Expr::Nested(inner) = e {
        e = inner;
    }
    e
}

pub(super) fn name_of(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(i) => Some(i.value.clone()),
        Expr::CompoundIdentifier(ids) => ids.last().map(|i| i.value.clone()),
        _ => None,
    }
}

pub(super) fn operator(
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
    matches: &[RawMatch],
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
    let prefix = format!("insert{n}");
    if !from.joins.is_empty() {
        let relations =
            std::iter::once(&from.relation).chain(from.joins.iter().map(|j| &j.relation));
        if let Some(p) = relations
            .filter_map(|r| match_recognize::position(r, matches))
            .next()
        {
            return Err(unsupported(p, "a join with MATCH_RECOGNIZE"));
        }
        return super::join::lower(s, from, &prefix, tables, spec);
    }
    let (mut stream, window) = match &from.relation {
        TableFactor::Table {
            name, args: None, ..
        } => (tables.read(name)?, None),
        TableFactor::TableFunction { expr, .. } => {
            let (table, tvf) = super::window_tvf::window_tvf(expr)?;
            (tables.read(&table)?, Some(tvf))
        }
        rel @ TableFactor::MatchRecognize { .. } => (
            match_recognize::lower(rel, &prefix, matches, tables, source, spec)?,
            None,
        ),
        other => {
            return Err(unsupported(
                pos(other.span().start),
                format!("FROM `{other}`"),
            ))
        }
    };
    let written = written(source, s);
    if let Some(cond) = written.condition {
        let name = format!("{prefix}_where");
        spec.operators.push(operator(
            name.clone(),
            "filter",
            cond.pos(),
            &stream,
            vec![(
                "condition",
                match_recognize::unqualified(&from.relation, cond),
            )],
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
        let items: Vec<Text> = written
            .items
            .into_iter()
            .map(|i| match_recognize::unqualified(&from.relation, i))
            .collect();
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
        match name_of(unnested(g)).as_deref() {
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
    for (item, item_text) in s.projection.iter().zip(written.items) {
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
            Some(c) if c == "window_start" || c == "window_end" || keys.contains(&c) => columns.push(item_text),
            Some(c) => {
                return Err(Diagnostic::error(
                    item_at,
                    format!("column `{c}` is neither grouped by nor aggregated: add it to GROUP BY, or aggregate it"),
                ))
            }
            None => {
                let out = alias.unwrap_or_else(|| expr.to_string());
                aggregates.push(item_text);
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
