//! Flink's legacy group windows, as Nexmark q11 writes one: `GROUP BY k, SESSION(ts,
//! INTERVAL '10' SECOND)` (or `TUMBLE(ts, size)`, `HOP(ts, slide, size)`) with
//! `SESSION_START(ts, …)` and `SESSION_END(ts, …)` in the select list. They are the window
//! table function over the same table: the GROUP BY's window becomes `window_start,
//! window_end`, and each `…_START(…)` / `…_END(…)` item (its arguments those of the window)
//! becomes `window_start` / `window_end` under the item's name.

use anduin_types::Diagnostic;
use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, SelectItem, Spanned,
};

use super::insert::{name_of, unnested};
use super::source_text::pos;
use super::window_tvf::{interval_ms, WindowTvf};
use crate::Text;

/// A legacy group window found in a GROUP BY.
pub(super) struct Legacy {
    /// Its place in the GROUP BY.
    pub index: usize,
    /// The window, as its window table function would give it.
    pub tvf: WindowTvf,
    /// `SESSION`, `TUMBLE` or `HOP`.
    kind: String,
    /// Its arguments, as written (`B.dateTime, INTERVAL '10' SECOND`).
    args: String,
}

/// The unnamed arguments of a call, or `None` if it has others.
fn arguments(args: &FunctionArguments) -> Option<Vec<&Expr>> {
    let FunctionArguments::List(list) = args else {
        return None;
    };
    (list.args.iter())
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        })
        .collect()
}

/// The first legacy group window of `group`, if any.
pub(super) fn find(group: &[&Expr]) -> Result<Option<Legacy>, Diagnostic> {
    for (index, g) in group.iter().enumerate() {
        let Expr::Function(f) = unnested(g) else {
            continue;
        };
        let kind = f.name.to_string().to_uppercase();
        if !["TUMBLE", "HOP", "SESSION"].contains(&kind.as_str()) {
            continue;
        }
        let at = pos(g.span().start);
        let usage = match kind.as_str() {
            "HOP" => "HOP(ts, slide, size)",
            "TUMBLE" => "TUMBLE(ts, size)",
            _ => "SESSION(ts, gap)",
        };
        let args = arguments(&f.args)
            .filter(|a| a.len() == if kind == "HOP" { 3 } else { 2 })
            .ok_or_else(|| Diagnostic::error(at, format!("a group window is {usage}")))?;
        let time = name_of(unnested(args[0])).ok_or_else(|| {
            Diagnostic::error(
                pos(args[0].span().start),
                format!("the time of {usage} is a column, not `{}`", args[0]),
            )
        })?;
        let ms = |e: &Expr| interval_ms(e).map(|ms| format!("{ms}ms"));
        let (params, tumble_ms) = match kind.as_str() {
            "TUMBLE" => {
                let size = interval_ms(args[1])?;
                let params = vec![("kind", "tumbling".into()), ("size", format!("{size}ms"))];
                (params, Some(size))
            }
            "HOP" => {
                let params = vec![
                    ("kind", "sliding".into()),
                    ("slide", ms(args[1])?),
                    ("size", ms(args[2])?),
                ];
                (params, None)
            }
            _ => (
                vec![("kind", "session".into()), ("gap", ms(args[1])?)],
                None,
            ),
        };
        let written = (args.iter().map(|a| a.to_string()))
            .collect::<Vec<_>>()
            .join(", ");
        return Ok(Some(Legacy {
            index,
            tvf: WindowTvf {
                params,
                time,
                at,
                time_at: pos(args[0].span().start),
                tumble_ms,
                partition: Vec::new(),
            },
            kind,
            args: written,
        }));
    }
    Ok(None)
}

impl Legacy {
    /// `item` and its text, `written`, or `window_start` / `window_end` under the item's name
    /// if it is this window's `…_START(…)` / `…_END(…)`; a start or end of another window is
    /// an error.
    pub(super) fn item(
        &self,
        item: &SelectItem,
        written: Text,
    ) -> Result<(SelectItem, Text), Diagnostic> {
        let unchanged = || Ok((item.clone(), written.clone()));
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias)),
            _ => return unchanged(),
        };
        let Expr::Function(f) = unnested(expr) else {
            return unchanged();
        };
        let name = f.name.to_string().to_uppercase();
        let bound = match name.rsplit_once('_') {
            Some((kind, "START")) if ["TUMBLE", "HOP", "SESSION"].contains(&kind) => {
                (kind, "window_start")
            }
            Some((kind, "END")) if ["TUMBLE", "HOP", "SESSION"].contains(&kind) => {
                (kind, "window_end")
            }
            _ => return unchanged(),
        };
        let at = pos(expr.span().start);
        let args = arguments(&f.args).map(|a| {
            a.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        });
        if bound.0 != self.kind || args.as_deref() != Some(self.args.as_str()) {
            return Err(Diagnostic::error(
                at,
                format!(
                    "`{expr}` is not the window of the GROUP BY: write {}_{}({})",
                    self.kind,
                    if bound.1 == "window_start" {
                        "START"
                    } else {
                        "END"
                    },
                    self.args
                ),
            ));
        }
        let alias = alias.cloned().unwrap_or_else(|| Ident::new(bound.1));
        let text = Text::at(format!("{} AS {alias}", bound.1), at);
        let item = SelectItem::ExprWithAlias {
            expr: Expr::Identifier(Ident::new(bound.1)),
            alias,
        };
        Ok((item, text))
    }
}
