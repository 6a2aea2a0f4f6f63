//! `FROM t MATCH_RECOGNIZE (…) [AS m]`, lowered to the `pattern` operator, whose params are
//! the clauses as text:
//!
//! | clause | param |
//! |---|---|
//! | `PARTITION BY sensor, site` | `partition_by = "sensor, site"` |
//! | `ORDER BY ts, seq DESC NULLS LAST` (the event time, ascending, then tie-breakers) | `order_by = "ts, seq DESC NULLS LAST"` |
//! | `MEASURES A.ts AS a_ts, …` | `measures = "A.ts AS a_ts, …"` |
//! | `ONE ROW PER MATCH` / `ALL ROWS PER MATCH [SHOW EMPTY MATCHES \| OMIT EMPTY MATCHES \| WITH UNMATCHED ROWS]` | `rows_per_match = "one"` / `"all"`, `"all show empty"`, `"all omit empty"`, `"all with unmatched"` |
//! | `AFTER MATCH SKIP PAST LAST ROW`, `… TO NEXT ROW`, `… TO FIRST B`, `… TO LAST B`, `… TO B` | `after_match = "skip past last row"`, … |
//! | `PATTERN (A B+ C D+?)` | `pattern = "A B+ C D+?"` |
//! | `WITHIN INTERVAL '10' SECOND` (Flink's, after the pattern) | `within = "10s"` |
//! | `SUBSET U = (A, B), …` | `subset = "U = (A, B), …"` |
//! | `DEFINE B AS B.v < PREV(B.v), …` | `define = "B AS B.v < PREV(B.v), …"` |
//!
//! Expressions go to the operator as written, each character with its position in the
//! script, so that the operator's errors point into the `.sql` file. sqlparser parses the
//! clauses, except for what [`prepare`] takes out first. The output of the operator is, for
//! one row per match, the `PARTITION BY` columns and the measures; for all rows per match,
//! the input's columns and the measures. The SELECT over it is lowered as over a table, its
//! `*` standing for the columns in the standard's order ([`output`]): for all rows per match,
//! the `PARTITION BY` and `ORDER BY` columns, the measures, then the input's other columns.
//! Its input is a table's name, or a subquery or join in parentheses ([`input`]).

mod clauses;
mod input;
mod output;
mod pattern;
mod prepare;

pub use prepare::PATTERN_AGGREGATES;

pub(crate) use input::parse as parse_inputs;
pub(crate) use output::Output;
pub(crate) use prepare::{prepare, Prepared, RawMatch};

use anduin_types::{Diagnostic, Pos};
use sqlparser::ast::{
    EmptyMatchesMode, Expr, RowsPerMatch, Spanned, SymbolDefinition, TableFactor,
};

use super::insert::{name_of, operator, unsupported};
use super::source_text::{pos, Source};
use super::tables::Tables;
use crate::ast::Spec;
use crate::Text;
use clauses::{after_match, define, measures_of, order, within, Measured};

/// The pre-pass record of a parsed `MATCH_RECOGNIZE` (found by its first DEFINE).
fn raw_of<'r>(symbols: &[SymbolDefinition], raws: &'r [RawMatch]) -> Option<&'r RawMatch> {
    let first = symbols.first()?.symbol.span.start;
    raws.iter().find(|r| r.contains(first))
}

/// Where the `MATCH_RECOGNIZE` keyword of `rel` is, if `rel` is one.
pub(super) fn position(rel: &TableFactor, raws: &[RawMatch]) -> Option<Pos> {
    let TableFactor::MatchRecognize { symbols, .. } = rel else {
        return None;
    };
    Some(raw_of(symbols, raws).map_or_else(|| pos(rel.span().start), |r| pos(r.at)))
}

/// A name for a column to add to an input with `columns`: `k`, or `k2`, `k3`, … when the
/// input has a column of that name in any case.
fn fresh_name(columns: &[String]) -> String {
    std::iter::once("k".to_string())
        .chain((2..).map(|i| format!("k{i}")))
        .find(|n| !columns.iter().any(|c| c.eq_ignore_ascii_case(n)))
        .expect("some name is free")
}

fn internal(at: Pos, what: &str) -> Diagnostic {
    Diagnostic::error(
        at,
        format!("internal error in the SQL frontend: {what} of MATCH_RECOGNIZE not found"),
    )
}

/// Lowers `rel`, a `MATCH_RECOGNIZE`, to a pattern operator named `{prefix}_pattern`;
/// returns the name of its output stream and its columns in the standard's order.
pub(super) fn lower(
    rel: &TableFactor,
    prefix: &str,
    raws: &[RawMatch],
    tables: &mut Tables,
    source: &Source<'_>,
    spec: &mut Spec,
) -> Result<(String, Output), Diagnostic> {
    let TableFactor::MatchRecognize {
        table,
        partition_by,
        order_by,
        measures,
        rows_per_match,
        after_match_skip,
        pattern: _,
        symbols,
        alias,
    } = rel
    else {
        return Err(internal(pos(rel.span().start), "the clauses"));
    };
    // `AS m (a, b)` would rename the output columns; silently keeping their names would
    // answer under the wrong names.
    if let Some(alias) = alias.as_ref().filter(|a| !a.columns.is_empty()) {
        return Err(unsupported(
            pos(alias.name.span.start),
            "column names after a MATCH_RECOGNIZE's alias (name the measures with AS, and the other columns in the select list)",
        ));
    }
    let raw = raw_of(symbols, raws).ok_or_else(|| internal(pos(rel.span().start), "PATTERN"))?;
    let at = pos(raw.at);
    let script = super::insert::Script {
        source,
        matches: raws,
    };
    let stream = match (table.as_ref(), &raw.input) {
        (rel @ TableFactor::Table { alias, .. }, Some(input))
            if input::is_placeholder(rel, input) =>
        {
            input::lower(input, alias.as_ref(), prefix, &script, tables, spec)?
        }
        (
            TableFactor::Table {
                name, args: None, ..
            },
            None,
        ) => super::views::read(name, &script, tables, spec)?,
        (other, _) => {
            let p = other.span().start;
            return Err(unsupported(
                if p.line == 0 { at } else { pos(p) },
                input::OVER_TABLE_FUNCTION,
            ));
        }
    };
    let columns = tables.columns(&stream);
    // How errors name the input.
    let named = match &raw.input {
        Some(input) => input::described(input).to_string(),
        None => format!("table `{stream}`"),
    };
    let col = |e: &Expr, clause: &str| -> Result<Text, Diagnostic> {
        let p = pos(e.span().start);
        let Some(c) = name_of(e) else {
            return Err(unsupported(
                p,
                format!("the expression `{e}` in {clause} (name a column)"),
            ));
        };
        if !columns.contains(&c) {
            // Column names are case-sensitive (a quoted name keeps its case in the table).
            let hint = columns
                .iter()
                .find(|n| n.eq_ignore_ascii_case(&c))
                .map_or(String::new(), |n| {
                    format!("; column names are case-sensitive: write `{n}`")
                });
            return Err(Diagnostic::error(
                p,
                format!(
                    "{clause}: {named} has no column `{c}` (columns: {}){hint}",
                    columns.join(", ")
                ),
            ));
        }
        Ok(Text::at(c, p))
    };
    let mut params = Vec::new();
    let keys = partition_by
        .iter()
        .map(|e| col(e, "PARTITION BY"))
        .collect::<Result<Vec<_>, _>>()?;
    if !keys.is_empty() {
        params.push(("partition_by", Text::join(&keys, ", ")));
    }
    let (time, ties) = order(order_by, raw, at)?;
    let time = col(time, "ORDER BY")?;
    if let Some(et) = tables.event_time(&stream) {
        if time.as_str() != et {
            return Err(Diagnostic::error(
                time.pos(),
                format!(
                    "MATCH_RECOGNIZE orders rows by event time: ORDER BY {et} (the event_time of {named}), not `{}`",
                    time.as_str()
                ),
            ));
        }
    }
    let mut ordered = vec![time.as_str().to_string()];
    let mut order_items = vec![time];
    for (e, desc, nulls_first) in ties {
        if name_of(e).is_none() {
            // The rewrite names the new column after none the input has, and goes in pieces
            // short enough that a message quotes each whole (see `abbreviate`).
            let k = fresh_name(&columns);
            return Err(Diagnostic::error(
                pos(e.span().start),
                format!(
                    "MATCH_RECOGNIZE's ORDER BY takes columns, not the expression `{e}`: the event time, then tie-breaker columns, each with ASC or DESC and NULLS FIRST or LAST; compute it as a column of the input, `FROM (SELECT *, {e} AS {k} FROM {})`, and order by it: `ORDER BY {}, {k}`",
                    if raw.input.is_none() { stream.as_str() } else { "(…)" },
                    ordered[0]
                ),
            ));
        }
        let tie = col(e, "ORDER BY")?;
        ordered.push(tie.as_str().to_string());
        let mut item = vec![tie];
        let end = pos(e.span().end);
        if desc {
            item.push(Text::at("DESC", end));
        }
        match nulls_first {
            Some(true) => item.push(Text::at("NULLS FIRST", end)),
            Some(false) => item.push(Text::at("NULLS LAST", end)),
            None => {}
        }
        order_items.push(Text::join(&item, " "));
    }
    params.push(("order_by", Text::join(&order_items, ", ")));
    let pattern = source
        .text(raw.pattern)
        .ok_or_else(|| internal(at, "the text of PATTERN"))?;
    params.push(("pattern", pattern));
    if let Some((span, _)) = &raw.subset {
        let text = source
            .text(*span)
            .ok_or_else(|| internal(at, "the text of SUBSET"))?;
        params.push(("subset", text));
    }
    params.push(("define", define(symbols, raw, source)?));
    let all_rows = match rows_per_match {
        None => None,
        Some(RowsPerMatch::OneRow) => Some(false),
        Some(RowsPerMatch::AllRows(_)) => Some(true),
    };
    let mode = match rows_per_match {
        Some(RowsPerMatch::AllRows(Some(EmptyMatchesMode::Show))) => "all show empty",
        Some(RowsPerMatch::AllRows(Some(EmptyMatchesMode::Omit))) => "all omit empty",
        Some(RowsPerMatch::AllRows(Some(EmptyMatchesMode::WithUnmatched))) => "all with unmatched",
        Some(RowsPerMatch::AllRows(None)) => "all",
        _ => "one",
    };
    let measured = measures_of(measures, raw, source)?;
    if !measured.is_empty() {
        let texts: Vec<Text> = measured.iter().map(|m| m.text.clone()).collect();
        params.push(("measures", Text::join(&texts, ", ")));
    }
    if let Some(all) = all_rows {
        let p = raw.keyword(if all { "ALL" } else { "ONE" });
        let p = p.and_then(|i| raw.tok(i)).map_or(at, |t| pos(t.span.start));
        params.push(("rows_per_match", Text::at(mode, p)));
    }
    if let Some(skip) = after_match(after_match_skip.as_ref(), raw, at)? {
        params.push(("after_match", skip));
    }
    if let Some(within) = within(raw)? {
        params.push(("within", within));
    }
    // The operator's output columns: a measure may not take the name of another.
    let keys: Vec<String> = keys.iter().map(|k| k.as_str().to_string()).collect();
    let mut out: Vec<String> = if all_rows == Some(true) {
        columns.clone()
    } else {
        keys.clone()
    };
    let mut measure_names = Vec::with_capacity(measured.len());
    for Measured { name: n, at: p, .. } in measured {
        if out.contains(&n) {
            return Err(Diagnostic::error(
                p,
                format!(
                    "MATCH_RECOGNIZE would output two columns named `{n}` ({}): rename the measure",
                    if all_rows == Some(true) {
                        "all rows per match outputs the input's columns and the measures"
                    } else {
                        "one row per match outputs the PARTITION BY columns and the measures"
                    }
                ),
            ));
        }
        out.push(n.clone());
        measure_names.push(n);
    }
    let name = format!("{prefix}_pattern");
    spec.operators
        .push(operator(name.clone(), "pattern", at, &stream, params));
    let output = output::output(
        all_rows == Some(true),
        &columns,
        &keys,
        &ordered,
        &measure_names,
    );
    Ok((name, output))
}
