//! `INSERT INTO sink SELECT …`: one pipeline per statement. `WHERE` becomes a filter; a
//! window table function (`TUMBLE`, `HOP`, `SESSION`) with its `GROUP BY` becomes a window;
//! `MATCH_RECOGNIZE` a pattern; the select list becomes a map; the sink table's connector a
//! writer.

use anduin_types::{Diagnostic, Pos};
use sqlparser::ast::Spanned;
use sqlparser::ast::{
    Expr, GroupByExpr, Ident, Insert, Join, JoinConstraint, JoinOperator, Query, Select,
    SelectItem, SetExpr, TableAlias, TableFactor, TableObject, TableWithJoins,
};
use sqlparser::tokenizer::Location;

use super::derived::{item_column, Attr, Derived};
use super::group::Grouping;
use super::match_recognize::{self, RawMatch};
use super::over_aggregates::Known;
use super::select_text::{unqualified, written};
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
    let script = Script { source, matches };
    let prefix = format!("insert{n}");
    let first = spec.operators.len();
    let mut lowered = lower_select(select, &prefix, &script, tables, spec)?;
    let sink = tables.declared(target);
    let names: Vec<&str> = lowered.columns.iter().map(|(c, _)| c.as_str()).collect();
    if !sink.is_empty() && sink.len() == names.len() && sink.iter().zip(&names).any(|(a, b)| a != b)
    {
        // INSERT is positional: the selected columns take the table's names.
        let renamed: Vec<String> = names
            .iter()
            .zip(&sink)
            .map(|(from, to)| format!("{} AS {}", quoted(from), quoted(to)))
            .collect();
        let name = format!("{prefix}_insert");
        let t_at = pos(target.span().start);
        spec.operators.push(operator(
            name.clone(),
            "map",
            t_at,
            &lowered.stream,
            vec![("columns", Text::at(renamed.join(", "), t_at))],
        ));
        lowered.stream = name;
        lowered.map = Some(spec.operators.len() - 1);
    }
    // The sink table's fault-tolerance options go to this INSERT's operators, not its writer.
    let qos = tables.take_options(target, super::qos::OPTIONS);
    super::qos::apply(
        &qos,
        pos(target.span().start),
        spec.operators.get_mut(first..).unwrap_or_default(),
    )?;
    if let Some(ty) = tables.write(target, &lowered.stream, spec)? {
        // A sink with declared columns: the select list must produce exactly them.
        if let Some(map) = lowered.map.and_then(|i| spec.operators.get_mut(i)) {
            if let Some(out) = map.outputs.first_mut() {
                out.ty = Some(Text::at(ty, pos(target.span().start)));
            }
        }
    }
    Ok(())
}

/// How an error about the columns of `relation`, the FROM of a SELECT, names it.
fn owner(relation: &TableFactor) -> String {
    match relation {
        TableFactor::Table {
            name, args: None, ..
        } => format!("stream `{name}`"),
        TableFactor::Derived { alias: Some(a), .. } => format!("subquery `{}`", a.name.value),
        TableFactor::Derived { .. } => "the subquery".to_string(),
        TableFactor::TableFunction {
            expr: Expr::Function(f),
            ..
        } => format!("`{}(…)`", f.name),
        other => format!("`{other}`"),
    }
}

/// Refuses `GROUP BY ROLLUP(…)`, `CUBE(…)` and `GROUPING SETS (…)` of the SELECT at
/// `select`, at their keyword: the word before the first of their expressions (which
/// sqlparser's spans start at), or with none the first such word after the SELECT.
pub(super) fn refuse_grouping_sets(
    group: &[&Expr],
    select: Location,
    source: &Source<'_>,
) -> Result<(), Diagnostic> {
    for g in group {
        let (what, word) = match unnested(g) {
            Expr::Rollup(_) => ("ROLLUP(…)", "ROLLUP"),
            Expr::Cube(_) => ("CUBE(…)", "CUBE"),
            Expr::GroupingSets(_) => ("GROUPING SETS (…)", "GROUPING"),
            _ => continue,
        };
        let start = g.span().start;
        let key = |l: Location| (l.line, l.column);
        let words = || {
            source
                .tokens()
                .iter()
                .filter(|t| super::source_text::is_word(&t.tok, word))
                .map(|t| t.tok.span.start)
        };
        let at = if start.line > 0 {
            words().rfind(|l| key(*l) < key(start))
        } else {
            words().find(|l| key(*l) > key(select))
        };
        return Err(Diagnostic::error(
            pos(at.unwrap_or(select)),
            format!("GROUP BY {what} is not supported yet: group by the columns of one grouping (GROUP BY a, b), with an INSERT for each grouping"),
        ));
    }
    Ok(())
}

pub(super) fn plain_select(q: &Query) -> Result<&Select, Diagnostic> {
    let at = pos(q.span().start);
    if q.with.is_some() {
        return Err(unsupported(at, "WITH (common table expressions)"));
    }
    if let Some(o) = &q.order_by {
        // At its first key (sqlparser keeps no place for the keyword), not at the SELECT.
        let start = o.span().start;
        return Err(Diagnostic::error(
            if start.line > 0 { pos(start) } else { at },
            format!(
                "`{o}` after the SELECT is not supported: a stream's rows go out as they are computed, and it has no end to sort them at; leave it out (and sort the output afterwards: `sort` or a batch tool){}",
                if has_match_recognize(q) {
                    " — MATCH_RECOGNIZE orders the rows it matches with the ORDER BY inside its parentheses"
                } else {
                    ""
                }
            ),
        ));
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

/// Whether the SELECT of `q` reads from a MATCH_RECOGNIZE.
fn has_match_recognize(q: &Query) -> bool {
    let SetExpr::Select(s) = q.body.as_ref() else {
        return false;
    };
    s.from
        .iter()
        .any(|t| matches!(t.relation, TableFactor::MatchRecognize { .. }))
}

/// `e` without the parentheses around it: `(x)` as `x`.
pub(super) fn unnested(mut e: &Expr) -> &Expr {
    while let Expr::Nested(inner) = e {
        e = inner;
    }
    e
}

/// `s` as a double-quoted SQL identifier.
pub(super) fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
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
        control: None,
        pos: at,
    }
}

/// What the SELECTs of one script are lowered with.
pub(super) struct Script<'a, 's> {
    pub source: &'a Source<'s>,
    pub matches: &'a [RawMatch],
}

/// A lowered SELECT: the stream it produces, the index of its map, and its columns.
pub(super) struct Lowered {
    pub stream: String,
    pub map: Option<usize>,
    pub columns: Vec<(String, Attr)>,
}

/// Lowers `(SELECT …) [AS alias]` to operators named after `prefix` and the alias (or
/// `subquery1`, …); records its stream's columns and returns the stream's name.
pub(super) fn lower_subquery(
    q: &Query,
    alias: Option<&TableAlias>,
    prefix: &str,
    script: &Script<'_, '_>,
    tables: &mut Tables,
    spec: &mut Spec,
) -> Result<String, Diagnostic> {
    let name = subquery_name(alias, prefix, spec)?;
    let lowered = lower_select(plain_select(q)?, &name, script, tables, spec)?;
    tables.derive(Derived {
        stream: lowered.stream.clone(),
        columns: lowered.columns,
    });
    Ok(lowered.stream)
}

/// The prefix of the operators of a subquery called `alias` (or `subquery1`, …, the first
/// free) in the query whose operators are named after `prefix`.
pub(super) fn subquery_name(
    alias: Option<&TableAlias>,
    prefix: &str,
    spec: &Spec,
) -> Result<String, Diagnostic> {
    let taken = |name: &str| {
        spec.operators
            .iter()
            .any(|o| o.name.as_str().starts_with(&format!("{name}_")))
    };
    match alias {
        Some(alias) => {
            if !alias.columns.is_empty() {
                return Err(unsupported(
                    pos(alias.name.span.start),
                    "column names after a subquery's alias (name the columns with AS inside it)",
                ));
            }
            let name = format!("{prefix}_{}", alias.name.value);
            if taken(&name) {
                return Err(Diagnostic::error(
                    pos(alias.name.span.start),
                    format!(
                        "two subqueries are called `{}`: rename one",
                        alias.name.value
                    ),
                ));
            }
            Ok(name)
        }
        None => Ok((1..)
            .map(|k| format!("{prefix}_subquery{k}"))
            .find(|n| !taken(n))
            .expect("some name is free")),
    }
}

/// Lowers a SELECT to operators named after `prefix`.
pub(super) fn lower_select(
    s: &Select,
    prefix: &str,
    script: &Script<'_, '_>,
    tables: &mut Tables,
    spec: &mut Spec,
) -> Result<Lowered, Diagnostic> {
    let at = pos(s.select_token.0.span.start);
    if s.distinct.is_some() {
        return Err(unsupported(at, "SELECT DISTINCT"));
    }
    if super::over::has_over_aggregate(s) {
        return super::over::lower(s, prefix, script, tables, spec);
    }
    super::group_updating::refuse_over(s)?;
    if let Some(q) = &s.qualify {
        return Err(unsupported(pos(q.span().start), "QUALIFY"));
    }
    let listed;
    let from = match s.from.as_slice() {
        [from] => from,
        // `FROM a, b WHERE …`: an inner join whose condition is the WHERE.
        [a, b] if a.joins.is_empty() && b.joins.is_empty() && s.selection.is_some() => {
            listed = TableWithJoins {
                relation: a.relation.clone(),
                joins: vec![Join {
                    relation: b.relation.clone(),
                    global: false,
                    join_operator: JoinOperator::Inner(JoinConstraint::None),
                }],
            };
            &listed
        }
        _ => {
            return Err(Diagnostic::error(
                at,
                "a SELECT from more than two tables, from two without WHERE, or from none, is not supported yet: join two tables with `a JOIN b ON …` or `FROM a, b WHERE …` (a regular, interval or window join)",
            ))
        }
    };
    if !from.joins.is_empty() {
        let relations =
            std::iter::once(&from.relation).chain(from.joins.iter().map(|j| &j.relation));
        if let Some(p) = relations
            .filter_map(|r| match_recognize::position(r, script.matches))
            .next()
        {
            return Err(unsupported(p, "a join with MATCH_RECOGNIZE"));
        }
        return super::join::lower(s, from, prefix, script, tables, spec);
    }
    // A top-N consumes the WHERE over it (its bound on the row number, and a filter).
    let mut filtered = false;
    // The columns of a MATCH_RECOGNIZE, in the standard's order.
    let mut matched = None;
    let (input, mut window) = match &from.relation {
        TableFactor::Derived {
            lateral: false,
            subquery,
            ..
        } if super::top_n::is_ranked(subquery) => {
            filtered = true;
            (
                super::top_n::lower(s, &from.relation, prefix, script, tables, spec)?,
                None,
            )
        }
        TableFactor::Table {
            name, args: None, ..
        } => (super::views::read(name, script, tables, spec)?, None),
        TableFactor::Table {
            name,
            args: Some(args),
            alias,
            ..
        } => (
            super::process::lower(
                name,
                &args.args,
                alias.as_ref(),
                prefix,
                script,
                tables,
                spec,
            )?,
            None,
        ),
        TableFactor::TableFunction {
            expr: Expr::Function(f),
            alias,
        } if super::process::is_call(&Expr::Function(f.clone()), spec) => {
            let args = match &f.args {
                sqlparser::ast::FunctionArguments::List(l) => l.args.as_slice(),
                _ => &[],
            };
            (
                super::process::lower(&f.name, args, alias.as_ref(), prefix, script, tables, spec)?,
                None,
            )
        }
        TableFactor::TableFunction { expr, .. } => {
            let (table, mut tvf) = super::window_tvf::window_tvf(expr)?;
            let stream = super::views::read(&table, script, tables, spec)?;
            tvf.resolve_time(&stream, tables)?;
            (stream, Some(tvf))
        }
        TableFactor::Derived {
            lateral: false,
            subquery,
            alias,
            ..
        } => (
            lower_subquery(subquery, alias.as_ref(), prefix, script, tables, spec)?,
            None,
        ),
        rel @ TableFactor::MatchRecognize { .. } => {
            let (stream, output) =
                match_recognize::lower(rel, prefix, script.matches, tables, script.source, spec)?;
            matched = Some(output);
            (stream, None)
        }
        other => {
            return Err(unsupported(
                pos(other.span().start),
                format!("FROM `{other}`"),
            ))
        }
    };
    let mut stream = input.clone();
    let written = written(script.source, s);
    if let Some(cond) = written.condition.filter(|_| !filtered) {
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
    let mut items: Vec<Text> = (s.projection.iter().zip(written.items))
        .map(|(item, text)| match (item, &matched) {
            // `*` over a match whose operator orders its columns otherwise: spelled out.
            (
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..),
                Some(
                    m @ match_recognize::Output {
                        reordered: true, ..
                    },
                ),
            ) => {
                let names: Vec<String> = m.columns.iter().map(|c| quoted(c)).collect();
                Text::at(names.join(", "), text.pos())
            }
            _ => unqualified(&from.relation, text),
        })
        .collect();
    let bounds = ["window_start", "window_end"].map(|b| Expr::Identifier(Ident::new(b)));
    let mut group: Vec<&Expr> = match &s.group_by {
        GroupByExpr::Expressions(exprs, mods) if mods.is_empty() => exprs.iter().collect(),
        other => return Err(unsupported(at, format!("GROUP BY {other}"))),
    };
    refuse_grouping_sets(&group, s.select_token.0.span.start, script.source)?;
    // Flink's legacy `GROUP BY k, SESSION(ts, gap)`: the window table function, its
    // `SESSION_START(…)` and `SESSION_END(…)` the window's bounds.
    let legacy = match window {
        None => super::legacy_window::find(&group)?,
        Some(_) => None,
    };
    let rewritten;
    let dealiased;
    let mut s = match legacy {
        Some(mut legacy) => {
            legacy.tvf.resolve_time(&input, tables)?;
            let (projection, texts): (Vec<SelectItem>, Vec<Text>) =
                (s.projection.iter().zip(items))
                    .map(|(item, text)| legacy.item(item, text))
                    .collect::<Result<Vec<_>, _>>()?
                    .into_iter()
                    .unzip();
            items = texts;
            group.splice(legacy.index..=legacy.index, bounds.iter());
            window = Some(legacy.tvf);
            rewritten = Select {
                projection,
                ..s.clone()
            };
            &rewritten
        }
        None => s,
    };
    // The select list's aliases: refused in GROUP BY (where the input's columns are known
    // here), read in HAVING (`aliases.rs`).
    let mut input_columns = tables.columns(&input);
    if !input_columns.is_empty() {
        if window.is_some() {
            input_columns.extend(["window_start", "window_end"].map(String::from));
        }
        let is_column = |c: &str| input_columns.iter().any(|x| x == c);
        if let Some(d) = group
            .iter()
            .find_map(|g| super::aliases::group_by_alias(g, s, &is_column, window.is_some()))
        {
            return Err(d);
        }
    }
    // What a grouped select list or HAVING may read: a name that is none of them is unknown.
    let known = (!input_columns.is_empty() && matched.is_none()).then(|| Known {
        owner: owner(&from.relation),
        columns: input_columns.clone(),
    });
    let calls = super::over_aggregates::Calls::new(spec);
    let grouped = super::aliases::grouped_names(&group, window.is_some());
    if let Some(h) = super::aliases::having_over_aliases(s, &grouped, &|e| calls.is_aggregate(e)) {
        dealiased = Select {
            having: Some(h),
            ..s.clone()
        };
        s = &dealiased;
    }
    let attr_of = |c: &str| tables.attr(&input, c);
    // `*` stands for the input's columns where it is (`SELECT *, PROCTIME() AS p_time`).
    let columns: Vec<(String, Attr)> = s
        .projection
        .iter()
        .flat_map(|i| match (i, &matched) {
            (SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..), Some(m)) => {
                m.columns.iter().map(|c| (c.clone(), attr_of(c))).collect()
            }
            (SelectItem::Wildcard(_), None) => tables
                .columns(&input)
                .into_iter()
                .map(|c| {
                    let a = attr_of(&c);
                    (c, a)
                })
                .collect(),
            (other, _) => item_column(other, &attr_of, window.is_some())
                .into_iter()
                .collect::<Vec<_>>(),
        })
        .collect();
    let grouping = match window {
        Some(tvf) => Grouping::Tvf(tvf),
        None if group.is_empty()
            && (s.having.is_some() || super::group_updating::has_aggregates(s)) =>
        {
            // Aggregates of every row: one group, updated as rows come.
            let input = super::group::Input {
                stream: &stream,
                known,
            };
            let map = super::group_updating::lower(s, &group, items, input, prefix, spec)?;
            return Ok(Lowered {
                stream: format!("{prefix}_select"),
                map: Some(map),
                columns,
            });
        }
        None if group.is_empty() => {
            let name = format!("{prefix}_select");
            spec.operators.push(operator(
                name.clone(),
                "map",
                at,
                &stream,
                vec![("columns", Text::join(&items, ", "))],
            ));
            return Ok(Lowered {
                stream: name,
                map: Some(spec.operators.len() - 1),
                columns,
            });
        }
        None => Grouping::Bounds(tables.derived(&input).cloned()),
    };
    let input = super::group::Input {
        stream: &stream,
        known,
    };
    let map = super::group::lower(s, &group, items, grouping, input, prefix, spec)?;
    Ok(Lowered {
        stream: format!("{prefix}_select"),
        map: Some(map),
        columns,
    })
}
