//! A lookup join: `FROM s [LEFT] JOIN side FOR SYSTEM_TIME AS OF s.ts AS d ON s.k = d.k`, as
//! Flink's lookup join on a static table, lowered to the `lookup_join` operator. The side
//! table (the right one) must be bounded (`Tables::bounded`: a file, or a generator with a
//! `count`): it is read once, before any stream row is joined. The time after `AS OF` is a
//! column of the stream or `PROCTIME()`: the side table does not change, so every time sees
//! the same rows. Refused: another table version, RIGHT and FULL joins, a side that is not a
//! declared bounded table, and an ON that is not equalities of a stream column with a side
//! column (an inner join's other conditions go in WHERE). A side read with `idle_timeout`
//! is taken: the join waits for the side's end (its input exhausted), not for its idleness.

use anduin_types::{Diagnostic, Pos};
use sqlparser::ast::{Expr, ObjectName, Spanned, TableFactor, TableVersion};

use super::names::Side;
use super::on::Condition;
use super::How;
use crate::sql::insert::unsupported;
use crate::sql::source_text::pos;
use crate::sql::tables::Tables;

/// The `AS OF` time of a join's right table `rel` and the table's name, if it is versioned.
pub(super) fn version(rel: &TableFactor) -> Result<Option<(&Expr, &ObjectName)>, Diagnostic> {
    let TableFactor::Table {
        version: Some(v),
        name,
        ..
    } = rel
    else {
        return Ok(None);
    };
    match v {
        TableVersion::ForSystemTimeAsOf(e) => Ok(Some((e, name))),
        other => Err(unsupported(
            pos(rel.span().start),
            format!("`{other}` (a lookup join takes FOR SYSTEM_TIME AS OF)"),
        )),
    }
}

/// Checks a lookup join's kind and side table before its sides are lowered.
pub(super) fn check_table(
    how: How,
    name: &ObjectName,
    tables: &Tables,
    join_at: Pos,
) -> Result<(), Diagnostic> {
    if matches!(how, How::Right | How::Full) {
        return Err(Diagnostic::error(
            join_at,
            "a RIGHT or FULL lookup join (FOR SYSTEM_TIME AS OF) is not supported: a lookup join is INNER or LEFT, the side table on the right",
        ));
    }
    let table = name.to_string();
    let at = pos(name.span().start);
    match tables.bounded(&table) {
        // An unknown table is reported when its side is lowered.
        None | Some(true) => Ok(()),
        Some(false) => Err(Diagnostic::error(
            at,
            format!("table `{table}` is not bounded: the side table of a lookup join (FOR SYSTEM_TIME AS OF) is read once, to its end, before the stream is joined, so it must end (connector 'file', or 'generator' with a count)"),
        )),
    }
}

/// Checks the `AS OF` time: a column of the stream, or `PROCTIME()`.
pub(super) fn check_time(time: &Expr, stream: &Side) -> Result<(), Diagnostic> {
    let at = pos(time.span().start);
    let ok = match time {
        Expr::CompoundIdentifier(ids) if ids.len() == 2 => {
            ids[0].value == stream.alias && stream.columns.contains(&ids[1].value)
        }
        Expr::Identifier(id) => stream.columns.contains(&id.value),
        Expr::Function(f) => f.name.to_string().eq_ignore_ascii_case("proctime"),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(Diagnostic::error(
            at,
            format!("FOR SYSTEM_TIME AS OF `{time}`: a lookup join's time is a column of the stream (`{}.ts`) or PROCTIME()", stream.alias),
        ))
    }
}

/// Checks a lookup join's ON: equal keys only.
pub(super) fn check_on(condition: &Condition<'_>, on_at: Pos) -> Result<(), Diagnostic> {
    if let Some(c) = condition.residual.first() {
        return Err(Diagnostic::error(
            pos(c.span().start),
            format!("the condition `{c}` in the ON of a lookup join is not supported: ON takes equalities of a stream column with a side table column (`s.k = d.k`); filter in WHERE"),
        ));
    }
    if !condition.regular {
        return Err(unsupported(
            on_at,
            "a time condition in the ON of a lookup join (the side table does not change: join on equal keys only)",
        ));
    }
    if condition.keys.is_empty() {
        return Err(Diagnostic::error(
            on_at,
            "a lookup join needs equal keys: ON s.k = d.k",
        ));
    }
    Ok(())
}
