//! Window table functions (`TUMBLE`, `HOP`, `CUMULATE`, `SESSION`) and SQL intervals.

use anduin_types::{Diagnostic, Pos};
use sqlparser::ast::Spanned;
use sqlparser::ast::{
    DateTimeField, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectName,
    Value as SqlValue,
};

use super::derived::Attr;
use super::dialect::{PARTITION_BY, TABLE_ARGUMENT};
use super::insert::{name_of, unnested, unsupported};
use super::source_text::pos;
use super::tables::Tables;

/// A window table function, as the window operator's params.
pub(super) struct WindowTvf {
    pub params: Vec<(&'static str, String)>,
    pub time: String,
    pub at: Pos,
    /// Where its `DESCRIPTOR(…)` is.
    pub time_at: Pos,
    /// The size of a `TUMBLE`, in milliseconds.
    pub tumble_ms: Option<u64>,
    /// The columns of a `SESSION`'s `PARTITION BY` (Flink 1.19's `SESSION(TABLE t PARTITION
    /// BY k, …)`), each where it is written.
    pub partition: Vec<(String, Pos)>,
}

impl WindowTvf {
    /// Refuses a `DESCRIPTOR(c)` of another column than the event time of `stream`, the
    /// table it windows: the windows close as that time's watermark passes them, so over
    /// another column they would close at random. Flink refuses a column that is not a time
    /// attribute likewise. For a window join, whose windows of both sides must close alike.
    pub(super) fn check_time(&self, stream: &str, tables: &Tables) -> Result<(), Diagnostic> {
        if tables.attr(stream, &self.time) == Attr::ProcTime {
            return Err(unsupported(
                self.time_at,
                format!(
                    "DESCRIPTOR({}): a window join over a processing time (PROCTIME())",
                    self.time
                ),
            ));
        }
        match tables.event_time(stream) {
            Some(event_time) if event_time != self.time => Err(Diagnostic::error(
                self.time_at,
                format!(
                    "DESCRIPTOR({}): the windows of `{stream}` are over its event time `{event_time}`; windows over another column are not supported (a processing time is a column computed as PROCTIME(): `p_time AS PROCTIME()` in CREATE TABLE, or in a view or subquery)",
                    self.time
                ),
            )),
            _ => Ok(()),
        }
    }

    /// As [`WindowTvf::check_time`], for a window aggregation, which may also be over a
    /// processing time: a `DESCRIPTOR(c)` naming a column computed as `PROCTIME()` makes the
    /// window group rows by the wall clock at which it processes them (`time_kind =
    /// processing`), as Flink's processing-time windows. Tumbling and hopping windows only.
    pub(super) fn resolve_time(&mut self, stream: &str, tables: &Tables) -> Result<(), Diagnostic> {
        if tables.attr(stream, &self.time) != Attr::ProcTime {
            return self.check_time(stream, tables);
        }
        let kind = self
            .params
            .iter()
            .find(|(k, _)| *k == "kind")
            .map(|(_, v)| v.as_str());
        if let Some(w @ ("session" | "cumulate")) = kind {
            return Err(unsupported(
                self.time_at,
                format!(
                    "DESCRIPTOR({}): a {} window over a processing time (PROCTIME())",
                    self.time,
                    w.to_uppercase()
                ),
            ));
        }
        self.params.push(("time_kind", "processing".to_string()));
        Ok(())
    }
}

/// `TUMBLE(TABLE t, DESCRIPTOR(ts), size)`, `HOP(TABLE t, DESCRIPTOR(ts), slide, size)`,
/// `CUMULATE(TABLE t, DESCRIPTOR(ts), step, size)`, `SESSION(TABLE t, DESCRIPTOR(ts), gap)`.
pub(super) fn window_tvf(e: &Expr) -> Result<(ObjectName, WindowTvf), Diagnostic> {
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
    let mut partition = Vec::new();
    let table = match args.first() {
        Some(Expr::Function(t)) if t.name.to_string() == TABLE_ARGUMENT => match &t.args {
            FunctionArguments::List(l) if l.args.len() > 1 => {
                for clause in &l.args[1..] {
                    match clause {
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Function(p)))
                            if fname == "SESSION" && p.name.to_string() == PARTITION_BY =>
                        {
                            partition = partition_keys(p);
                        }
                        other => {
                            return Err(unsupported(
                                pos(other.span().start),
                                if fname == "SESSION" {
                                    "ORDER BY in the table argument of SESSION (a session's rows are ordered by its DESCRIPTOR's time)".to_string()
                                } else {
                                    format!("PARTITION BY or ORDER BY in the table argument of {fname} (a window's keys are its GROUP BY's; SESSION takes PARTITION BY)")
                                },
                            ));
                        }
                    }
                }
                match l.args.first() {
                    Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(
                        Expr::CompoundIdentifier(ids),
                    ))) => ObjectName::from(ids.clone()),
                    _ => {
                        return Err(Diagnostic::error(
                            at,
                            "expected `TABLE name` as the first argument",
                        ))
                    }
                }
            }
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
    let time_at = args.get(1).map_or(at, |d| pos(d.span().start));
    let time = match args.get(1) {
        Some(Expr::Function(d)) if d.name.to_string().eq_ignore_ascii_case("DESCRIPTOR") => {
            match &d.args {
                FunctionArguments::List(l) => match l.args.as_slice() {
                    [FunctionArg::Unnamed(FunctionArgExpr::Expr(c))] => name_of(unnested(c)),
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
    let mut tumble_ms = None;
    let params = match fname.as_str() {
        "TUMBLE" => {
            if args.len() > 3 {
                return Err(unsupported(at, "the offset argument of TUMBLE"));
            }
            let size = args
                .get(2)
                .ok_or_else(|| Diagnostic::error(at, "TUMBLE needs its size: an INTERVAL"))?;
            tumble_ms = Some(interval_ms(size)?);
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
        "CUMULATE" => {
            if args.len() > 4 {
                return Err(unsupported(
                    args.get(4).map_or(at, |a| pos(a.span().start)),
                    "the offset argument of CUMULATE",
                ));
            }
            let step = args
                .get(2)
                .ok_or_else(|| Diagnostic::error(at, "CUMULATE needs its step: an INTERVAL"))?;
            let size = args.get(3).ok_or_else(|| {
                Diagnostic::error(at, "CUMULATE needs its maximum size: an INTERVAL")
            })?;
            let (step_ms, size_ms) = (interval_ms(step)?, interval_ms(size)?);
            if size_ms % step_ms != 0 {
                return Err(Diagnostic::error(
                    pos(size.span().start),
                    format!("CUMULATE's maximum size ({size_ms} ms) must be a multiple of its step ({step_ms} ms)"),
                ));
            }
            vec![
                ("kind", "cumulate".to_string()),
                ("step", format!("{step_ms}ms")),
                ("size", format!("{size_ms}ms")),
            ]
        }
        _ => {
            return Err(Diagnostic::error(
                at,
                format!(
                "unknown window table function {fname}: expected TUMBLE, HOP, CUMULATE or SESSION"
            ),
            ))
        }
    };
    Ok((
        table,
        WindowTvf {
            params,
            time,
            time_at,
            at,
            tumble_ms,
            partition,
        },
    ))
}

/// The columns of a `PARTITION BY(k, …)` clause, each with its place.
fn partition_keys(clause: &sqlparser::ast::Function) -> Vec<(String, Pos)> {
    let FunctionArguments::List(l) = &clause.args else {
        return Vec::new();
    };
    l.args
        .iter()
        .filter_map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Identifier(id))) => {
                Some((id.value.clone(), pos(id.span.start)))
            }
            _ => None,
        })
        .collect()
}

/// The milliseconds of an `INTERVAL '1' SECOND` (or `INTERVAL '1.5 seconds'`), positive.
pub(super) fn interval_ms(e: &Expr) -> Result<u64, Diagnostic> {
    let ms = signed_interval_ms(e)?;
    u64::try_from(ms).ok().filter(|ms| *ms > 0).ok_or_else(|| {
        Diagnostic::error(
            pos(e.span().start),
            format!("expected a positive interval such as INTERVAL '1' SECOND, found `{e}`"),
        )
    })
}

/// The milliseconds of an interval, which may be zero or negative (`INTERVAL '-5' SECOND`).
pub(super) fn signed_interval_ms(e: &Expr) -> Result<i64, Diagnostic> {
    let at = pos(e.span().start);
    let bad = || {
        Diagnostic::error(
            at,
            format!("expected an interval such as INTERVAL '1' SECOND, found `{e}`"),
        )
    };
    let Expr::Interval(iv) = unnested(e) else {
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
        None => {
            let (sign, rest) = match value.trim().strip_prefix('-') {
                Some(rest) => (-1, rest),
                None => (1, value.trim()),
            };
            return anduin_types::parse_duration_ms(rest)
                .and_then(|ms| i64::try_from(ms).ok())
                .map(|ms| sign * ms)
                .ok_or_else(bad);
        }
        Some(DateTimeField::Millisecond | DateTimeField::Milliseconds) => 1.0,
        Some(DateTimeField::Second | DateTimeField::Seconds) => 1_000.0,
        Some(DateTimeField::Minute | DateTimeField::Minutes) => 60_000.0,
        Some(DateTimeField::Hour | DateTimeField::Hours) => 3_600_000.0,
        Some(DateTimeField::Day | DateTimeField::Days) => 86_400_000.0,
        Some(other) => return Err(Diagnostic::error(at, format!("interval unit {other} is not supported: use MILLISECOND, SECOND, MINUTE, HOUR or DAY"))),
    };
    let v: f64 = value.trim().parse().map_err(|_| bad())?;
    let ms = (v * unit_ms).round();
    if !ms.is_finite() || ms.abs() > 1e15 {
        return Err(bad());
    }
    Ok(ms as i64)
}
