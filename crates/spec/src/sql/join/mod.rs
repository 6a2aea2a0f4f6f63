//! `FROM a [INNER | LEFT | RIGHT | FULL] JOIN b ON …`, lowered to a join operator. Three forms,
//! as in Flink:
//!
//! - an interval join: `ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '5' SECOND AND b.ts +
//!   INTERVAL '5' SECOND` (or the same bounds as `>=`, `<=`, `>`, `<`, `=` comparisons), to
//!   `join`, inner or left;
//! - a window join of two `TUMBLE`s of one size: `FROM (SELECT * FROM TABLE(TUMBLE(TABLE a,
//!   DESCRIPTOR(ts), INTERVAL '1' SECOND))) l JOIN (…) r ON l.k = r.k AND l.window_start =
//!   r.window_start AND l.window_end = r.window_end`, to `join`, inner or left;
//! - a regular join: equal keys and no time bound (`ON a.k = b.k [AND …]`), to
//!   `regular_join`, of any kind. An inner join's conditions on one side alone filter that
//!   side before the join, so that it keeps fewer rows.
//!
//! A table joined with itself is read once: the right side reads it through a map
//! (`self_join_copy`).
//!
//! `WHERE` becomes a filter after the join and the select list a map; their column references
//! (`a.ts`, `b.ts`, `value`) are rewritten to the names of the join's output columns. A
//! `GROUP BY` (or aggregates) over the join becomes an updating `aggregate` over the joined
//! (and filtered) rows instead of the map: `grouped.rs`.

mod grouped;
mod lookup;
mod names;
mod on;

use anduin_types::Diagnostic;
use sqlparser::ast::Spanned;
use sqlparser::ast::{
    Expr, GroupByExpr, JoinConstraint, JoinOperator, ObjectName, Select, SelectItem, SetExpr,
    TableAlias, TableFactor, TableWithJoins,
};

use super::insert::{lower_subquery, operator, plain_select, quoted, unsupported, Lowered, Script};
use super::source_text::pos;
use super::tables::Tables;
use super::window_tvf::window_tvf;
use crate::ast::{OperatorDef, OutputDef, Param, Spec, Value};
use crate::Text;
use names::{Joined, Side};

/// Lowers a SELECT over a join; returns the stream it produces and the index of its map.
pub(super) fn lower(
    s: &Select,
    from: &TableWithJoins,
    prefix: &str,
    script: &Script<'_, '_>,
    tables: &mut Tables,
    spec: &mut Spec,
) -> Result<Lowered, Diagnostic> {
    let [join] = from.joins.as_slice() else {
        let extra = &from.joins[2.min(from.joins.len() - 1)];
        return Err(unsupported(
            pos(extra.relation.span().start),
            "a join of more than two tables",
        ));
    };
    let join_at = pos(join.relation.span().start);
    let (how, constraint) = match &join.join_operator {
        JoinOperator::Join(c) | JoinOperator::Inner(c) => (How::Inner, c),
        JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (How::Left, c),
        JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (How::Right, c),
        JoinOperator::FullOuter(c) => (How::Full, c),
        other => {
            let words = format!("{other:?}");
            let kind = words.split('(').next().unwrap_or("this");
            return Err(unsupported(join_at, format!("a {kind} join")));
        }
    };
    // `FROM a, b WHERE …` (an inner join without ON): the WHERE is the condition.
    let on = match (constraint, &s.selection) {
        (JoinConstraint::On(on), _) => on,
        (JoinConstraint::None, Some(w)) if how == How::Inner => w,
        _ => {
            return Err(Diagnostic::error(
                join_at,
                "a join needs ON with equal keys (ON a.k = b.k), and for a join bounded in time a time condition: ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '5' SECOND AND b.ts + INTERVAL '5' SECOND",
            ))
        }
    };
    let listed = matches!(constraint, JoinConstraint::None);
    let lookup = lookup::version(&join.relation)?;
    if let Some((_, table)) = lookup {
        lookup::check_table(how, table, tables, join_at)?;
    }
    let left = side(&from.relation, prefix, script, tables, spec)?;
    let mut right = side(&join.relation, prefix, script, tables, spec)?;
    if left.alias == right.alias {
        return Err(Diagnostic::error(
            join_at,
            format!(
                "both joined tables are called `{}`: give one an alias (`… AS r`)",
                left.alias
            ),
        ));
    }
    let windowed = match (&left.window, &right.window) {
        (None, None) => false,
        (Some((a, _, _)), Some((b, _, at))) if a != b => {
            return Err(Diagnostic::error(
                *at,
                format!("a window join takes TUMBLE windows of one size, found {a} ms and {b} ms"),
            ))
        }
        (Some(_), Some(_)) => true,
        (Some((_, _, at)), None) | (None, Some((_, _, at))) => {
            return Err(unsupported(
                *at,
                "a join of a windowed table with a plain one (window both sides with TUMBLE, or neither for an interval join)",
            ))
        }
    };
    if let Some((time, _)) = lookup {
        lookup::check_time(time, &left)?;
    }
    if left.stream == right.stream {
        if lookup.is_some() {
            return Err(unsupported(join_at, "a lookup join of a table with itself"));
        }
        right.copy = Some(self_join_copy(&right, prefix, join_at, spec));
    }
    let mut joined = Joined {
        sides: [left, right],
        windowed,
        by_alias: lookup.is_none(),
    };
    joined.name_outputs();
    let on_at = pos(on.span().start);
    // An inner join's WHERE is part of its condition: its time bounds and keys are the
    // join's (as in Nexmark's q7), the rest filters the joined rows.
    let mut conjuncts = Vec::new();
    on::flatten_and(on, &mut conjuncts);
    if how == How::Inner && !listed && lookup.is_none() {
        if let Some(w) = &s.selection {
            on::flatten_and(w, &mut conjuncts);
        }
    }
    let condition = joined.condition(&conjuncts, on_at)?;
    let name = format!("{prefix}_join");
    let (kind, params, after) = if lookup.is_some() {
        lookup::check_on(&condition, on_at)?;
        let params = vec![("on", joined.on_text(&condition.keys))];
        ("lookup_join", params, s.selection.iter().collect())
    } else if condition.regular {
        regular(&mut joined, condition, how, s, prefix, spec)?
    } else {
        bounded(&joined, condition, how, s, join_at)?
    };
    let mut params = params;
    if joined.by_alias {
        params.push(("names", joined.names_param()));
    }
    if kind == "join" {
        // The join keeps (in its state, and in its output) only the columns read after it.
        if let Some(read) = joined.read_outputs(s, &after) {
            let names: Vec<String> = read.iter().map(|c| quoted(c)).collect();
            params.push(("keep", names.join(", ")));
        }
    }
    let mut params: Vec<Param> = params
        .into_iter()
        .map(|(k, v)| Param {
            name: Text::at(k, on_at),
            value: Value::String(Text::at(v, on_at)),
        })
        .collect();
    params.push(Param {
        name: Text::at("how", join_at),
        value: Value::String(Text::at(how.param(), join_at)),
    });
    // The join and the operators after it read the join's output names.
    let first_after = spec.operators.len();
    spec.operators.push(OperatorDef {
        name: Text::at(name.clone(), join_at),
        kind: Text::at(kind, join_at),
        params,
        inputs: joined
            .sides
            .iter()
            .map(|s| Text::at(s.input(), join_at))
            .collect(),
        outputs: vec![OutputDef {
            name: Text::at(name.clone(), join_at),
            ty: None,
        }],
        control: None,
        pos: join_at,
    });
    let mut stream = name;
    if let Some(first) = after.first() {
        let at = pos(first.span().start);
        let filter = format!("{prefix}_where");
        let mut conds = Vec::new();
        for c in &after {
            conds.push((joined.rewrite(c)?.to_string(), pos(c.span().start)));
        }
        let text = conjunction(&conds, conds.len() > 1);
        spec.operators.push(operator(
            filter.clone(),
            "filter",
            at,
            &stream,
            vec![("condition", text)],
        ));
        stream = filter;
    }
    let mut columns = Vec::new();
    // The names each item of the select list gives its columns.
    let mut item_names = Vec::new();
    for item in &s.projection {
        let cols = joined.item_columns(item, tables, &columns);
        item_names.push(cols.iter().map(|(c, _)| c.clone()).collect::<Vec<_>>());
        columns.extend(cols);
    }
    let grouped = match &s.group_by {
        GroupByExpr::Expressions(exprs, mods) if mods.is_empty() => {
            let group: Vec<&Expr> = exprs.iter().collect();
            super::insert::refuse_grouping_sets(
                &group,
                s.select_token.0.span.start,
                script.source,
            )?;
            !exprs.is_empty() || s.having.is_some() || super::group_updating::has_aggregates(s)
        }
        other => {
            return Err(unsupported(
                pos(s.select_token.0.span.start),
                format!("GROUP BY {other}"),
            ))
        }
    };
    if grouped {
        let map = grouped::lower(&joined, s, &stream, prefix, spec)?;
        name_as_written(&joined, &mut spec.operators[first_after..]);
        return Ok(Lowered {
            stream: format!("{prefix}_select"),
            map: Some(map),
            columns,
        });
    }
    let at = pos(s.select_token.0.span.start);
    let mut items = Vec::new();
    for (item, name) in s.projection.iter().zip(&item_names) {
        items.push(joined.item(item, name)?);
    }
    let map = format!("{prefix}_select");
    spec.operators.push(operator(
        map.clone(),
        "map",
        at,
        &stream,
        vec![("columns", Text::at(items.join(", "), at))],
    ));
    name_as_written(&joined, &mut spec.operators[first_after..]);
    Ok(Lowered {
        stream: map,
        map: Some(spec.operators.len() - 1),
        columns,
    })
}

/// The conjunction of `conds` (rewritten conditions, each with where it is written), `(c1) AND
/// (c2)` (without brackets unless `brackets`), each condition placed where it is written (its
/// brackets too, and the ` AND ` before it), so that an error in it points into it.
fn conjunction(conds: &[(String, anduin_types::Pos)], brackets: bool) -> Text {
    let parts: Vec<Text> = conds
        .iter()
        .map(|(c, at)| match brackets {
            false => Text::at(c.as_str(), *at),
            true => {
                let n = c.chars().count();
                let mut positions = vec![*at];
                positions.extend((0..n).map(|i| at.right(i)));
                positions.push(at.right(n));
                Text::with_positions(format!("({c})"), positions, *at)
            }
        })
        .collect();
    Text::join(&parts, " AND ")
}

/// The expressions of `ops` (the join, whose `condition` reads its output, and the operators
/// after it) with the names of the join's output columns as the query writes them: their
/// messages say `b.price`, not `b_price`.
fn name_as_written(joined: &Joined, ops: &mut [OperatorDef]) {
    let names = joined.written_names();
    for (i, op) in ops.iter_mut().enumerate() {
        for p in &mut op.params {
            // The join's other params name its sides' columns, not its output's.
            if i == 0 && p.name.as_str() != "condition" {
                continue;
            }
            if let Value::String(t) = &mut p.value {
                *t = std::mem::take(t).with_written_names(names.clone());
            }
        }
    }
}

/// Which rows a join keeps without a partner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    Inner,
    Left,
    Right,
    Full,
}

impl How {
    fn param(self) -> &'static str {
        match self {
            How::Inner => "inner",
            How::Left => "left",
            How::Right => "right",
            How::Full => "full",
        }
    }
}

/// The operator type, its params (but `how`) and the conjuncts to filter its output by.
type JoinOp<'e> = (&'static str, Vec<(&'static str, String)>, Vec<&'e Expr>);

/// A join bounded in time or by windows: the `join` operator (inner or left).
fn bounded<'e>(
    joined: &Joined,
    condition: on::Condition<'e>,
    how: How,
    s: &'e Select,
    join_at: anduin_types::Pos,
) -> Result<JoinOp<'e>, Diagnostic> {
    match how {
        How::Right => {
            return Err(unsupported(
                join_at,
                "RIGHT JOIN with a time bound or windows (swap the tables and use LEFT JOIN)",
            ))
        }
        How::Full => {
            return Err(unsupported(
                join_at,
                "FULL JOIN with a time bound or windows",
            ))
        }
        How::Inner | How::Left => {}
    }
    if how == How::Left {
        if let Some(c) = condition.residual.first() {
            return Err(unsupported(
                pos(c.span().start),
                format!("the condition `{c}` in the ON of a LEFT JOIN (a join takes equal keys AND a time interval, or equal window bounds; filter in WHERE)"),
            ));
        }
    }
    let mut params = condition.params;
    params.push(("on", joined.on_text(&condition.keys)));
    let after = if how == How::Left {
        s.selection.iter().collect()
    } else {
        condition.residual
    };
    Ok(("join", params, after))
}

/// A join without a time bound: the `regular_join` operator. An inner join's conditions on
/// one side alone filter that side before the join (it then keeps fewer rows), unless the
/// select list has a `*` (whose names come from the streams the join reads); an outer
/// join's other conditions in ON are its `condition`, and its WHERE filters its output.
fn regular<'e>(
    joined: &mut Joined,
    condition: on::Condition<'e>,
    how: How,
    s: &'e Select,
    prefix: &str,
    spec: &mut Spec,
) -> Result<JoinOp<'e>, Diagnostic> {
    let mut params = Vec::new();
    let after = if how == How::Inner {
        let mut rest = Vec::new();
        let mut before: [Vec<&Expr>; 2] = [Vec::new(), Vec::new()];
        let star = s.projection.iter().any(|i| {
            matches!(
                i,
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
            )
        });
        for c in condition.residual.iter().copied() {
            match joined.sides_read(c)? {
                [true, false] if !star => before[0].push(c),
                [false, true] if !star => before[1].push(c),
                _ => rest.push(c),
            }
        }
        for (i, conds) in before.iter().enumerate() {
            let Some(first) = conds.first() else { continue };
            let at = pos(first.span().start);
            let mut texts = Vec::new();
            for c in conds {
                texts.push((joined.rewrite_for_side(c)?.to_string(), pos(c.span().start)));
            }
            let filter = format!("{prefix}_{}_where", ["left", "right"][i]);
            spec.operators.push(operator(
                filter.clone(),
                "filter",
                at,
                joined.sides[i].input(),
                vec![(
                    "condition",
                    conjunction(&texts, true).with_written_names(joined.side_written_names(i)),
                )],
            ));
            joined.sides[i].filtered = Some(filter);
        }
        // The join's output names follow the streams it reads.
        joined.name_outputs();
        rest
    } else {
        if !condition.residual.is_empty() {
            let mut texts = Vec::new();
            for c in &condition.residual {
                texts.push(format!("({})", joined.rewrite(c)?));
            }
            params.push(("condition", texts.join(" AND ")));
        }
        s.selection.iter().collect()
    };
    params.insert(0, ("on", joined.on_text(&condition.keys)));
    // The join keeps (in its state, and in its output) only the columns read after it and
    // by its condition.
    let mut read_by: Vec<&Expr> = after.clone();
    if how != How::Inner {
        read_by.extend(condition.residual.iter().copied());
    }
    if let Some(read) = joined.read_outputs(s, &read_by) {
        let names: Vec<String> = read.iter().map(|c| quoted(c)).collect();
        params.push(("keep", names.join(", ")));
    }
    Ok(("regular_join", params, after))
}

/// The right side of a self-join (`FROM bids a JOIN bids b`) reads its table's stream through
/// a map `{prefix}_{alias}` that keeps every column: the table is read once, its stream feeds
/// both sides (each row reaches both, with the one watermark), and the join's two inputs
/// are distinct streams, which its condition (`"bids"."auction" = "insert1_b"."auction"`)
/// tells apart. Reading the table twice would run its source twice: twice the input read,
/// and for a Kafka or NATS source a second consumer with offsets of its own.
fn self_join_copy(right: &Side, prefix: &str, at: anduin_types::Pos, spec: &mut Spec) -> String {
    let base = format!("{prefix}_{}", right.alias);
    let taken = |n: &str| spec.operators.iter().any(|o| o.name.as_str() == n);
    let name = std::iter::once(base.clone())
        .chain((2..).map(|k| format!("{base}{k}")))
        .find(|n| !taken(n))
        .expect("some name is free");
    spec.operators.push(operator(
        name.clone(),
        "map",
        at,
        &right.stream,
        vec![("columns", Text::at("*", at))],
    ));
    name
}

/// A joined table: `t [AS a]`, `TABLE(TUMBLE(…)) [AS a]`, `(SELECT * FROM TABLE(TUMBLE(…)))
/// a` (a window join's side), or any other subquery `(SELECT …) a`.
fn side(
    rel: &TableFactor,
    prefix: &str,
    script: &Script<'_, '_>,
    tables: &mut Tables,
    spec: &mut Spec,
) -> Result<Side, Diagnostic> {
    let at = pos(rel.span().start);
    // The name the query reads a side by: a view's own, not its stream's (`view_v_select`).
    let written = |name: &ObjectName, stream: &str, tables: &Tables| {
        tables
            .view(name)
            .map_or_else(|| stream.to_string(), |v| v.name.clone())
    };
    let new =
        |stream: String, table: String, alias: &Option<TableAlias>, window, tables: &Tables| Side {
            alias: alias
                .as_ref()
                .map_or_else(|| table.clone(), |a| a.name.value.clone()),
            table,
            columns: tables.columns(&stream),
            time_columns: tables.time_columns(&stream),
            event_time: tables.event_time(&stream),
            out: Vec::new(),
            filtered: None,
            copy: None,
            stream,
            window,
        };
    let windowed =
        |expr: &Expr, alias: &Option<TableAlias>, tables: &mut Tables, spec: &mut Spec| {
            let (table, tvf) = window_tvf(expr)?;
            let Some(size) = tvf.tumble_ms else {
                return Err(unsupported(
                tvf.at,
                "a join of HOP, CUMULATE or SESSION windows (a window join takes TUMBLE windows)",
            ));
            };
            let stream = super::views::read(&table, script, tables, spec)?;
            tvf.check_time(&stream, tables)?;
            let table = written(&table, &stream, tables);
            Ok(new(
                stream,
                table,
                alias,
                Some((size, tvf.time, tvf.at)),
                tables,
            ))
        };
    match rel {
        TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } => {
            let stream = super::views::read(name, script, tables, spec)?;
            let table = written(name, &stream, tables);
            Ok(new(stream, table, alias, None, tables))
        }
        TableFactor::TableFunction { expr, alias } => windowed(expr, alias, tables, spec),
        TableFactor::Derived {
            lateral: false,
            subquery,
            alias,
            ..
        } => {
            let inner = plain_select(subquery)?;
            let only_star = matches!(inner.projection.as_slice(), [SelectItem::Wildcard(_)]);
            let plain = inner.selection.is_none()
                && matches!(&inner.group_by, GroupByExpr::Expressions(g, _) if g.is_empty())
                && matches!(subquery.body.as_ref(), SetExpr::Select(_));
            match inner.from.as_slice() {
                [TableWithJoins {
                    relation: TableFactor::TableFunction { expr, .. },
                    joins,
                }] if only_star && plain && joins.is_empty() => windowed(expr, alias, tables, spec),
                _ => {
                    let stream =
                        lower_subquery(subquery, alias.as_ref(), prefix, script, tables, spec)?;
                    Ok(new(stream.clone(), stream, alias, None, tables))
                }
            }
        }
        other => Err(unsupported(at, format!("joining `{other}`"))),
    }
}
