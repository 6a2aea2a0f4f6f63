//! A `GROUP BY` (or aggregates, or `HAVING`) over a join: an updating `aggregate` over the
//! joined rows (after the filter of the WHERE), as over any other stream (`group_updating.rs`).
//! Nexmark's q4 groups the winning bid of each auction:
//!
//! ```sql
//! SELECT MAX(B.price) AS final, A.category
//! FROM auction A, bid B
//! WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
//! GROUP BY A.id, A.category
//! ```
//!
//! The join's rows may be updating (an outer join takes back a row padded with nulls when its
//! partner comes, a join over an updating input passes its changes on): the aggregate takes
//! each change out of or into its group.
//!
//! The select list, GROUP BY and HAVING are rewritten over the join's output columns (`A.id`
//! to `id`, `B.dateTime` to `B_dateTime` where the name is taken); each select item keeps
//! the name it is written with (`A.category` stays `category`, `MAX(B.price)` stays
//! `MAX(B.price)`), as over a single table.

use anduin_types::Diagnostic;
use sqlparser::ast::{Expr, GroupByExpr, Ident, Select, SelectItem, Spanned};

use super::super::aliases;
use super::super::derived::item_column;
use super::super::derived::Attr;
use super::super::group::Input;
use super::super::insert::{name_of, unnested, unsupported};
use super::super::over_aggregates::Calls;
use super::super::source_text::pos;
use super::names::Joined;
use crate::ast::Spec;
use crate::Text;

/// Lowers the GROUP BY of `s` over `stream`, the rows of `joined`: an aggregate
/// `{prefix}_group` and a map `{prefix}_select`, whose index it returns.
pub(super) fn lower(
    joined: &Joined,
    s: &Select,
    stream: &str,
    prefix: &str,
    spec: &mut Spec,
) -> Result<usize, Diagnostic> {
    let mut over = s.clone();
    over.projection = s
        .projection
        .iter()
        .map(|item| item_over(joined, item))
        .collect::<Result<_, _>>()?;
    // The select list's aliases: refused in GROUP BY, read in HAVING (`aliases.rs`).
    let is_column = |c: &str| {
        (joined.windowed && (c == "window_start" || c == "window_end"))
            || joined
                .sides
                .iter()
                .any(|side| side.columns.iter().any(|x| x == c))
    };
    let group: Vec<Expr> = match &s.group_by {
        GroupByExpr::Expressions(exprs, _) => exprs
            .iter()
            .map(
                |g| match aliases::group_by_alias(g, s, &is_column, joined.windowed) {
                    Some(d) => Err(d),
                    None => joined.rewrite(g),
                },
            )
            .collect::<Result<_, _>>()?,
        GroupByExpr::All(_) => {
            return Err(unsupported(
                pos(s.select_token.0.span.start),
                "GROUP BY ALL",
            ))
        }
    };
    let calls = Calls::new(spec);
    let written: Vec<&Expr> = match &s.group_by {
        GroupByExpr::Expressions(exprs, _) => exprs.iter().collect(),
        GroupByExpr::All(_) => Vec::new(),
    };
    let grouped = aliases::grouped_names(&written, joined.windowed);
    let having = aliases::having_over_aliases(s, &grouped, &|e| calls.is_aggregate(e));
    over.having = having.as_ref().map(|h| joined.rewrite(h)).transpose()?;
    let items: Vec<Text> = over
        .projection
        .iter()
        .map(|i| Text::at(i.to_string(), pos(i.span().start)))
        .collect();
    let group: Vec<&Expr> = group.iter().collect();
    // The join's columns were resolved above (an unknown one named there).
    let input = Input {
        stream,
        known: None,
    };
    super::super::group_updating::lower(&over, &group, items, input, prefix, spec)
        .map_err(|d| joined.as_written(d))
}

/// `item` over the join's output columns, named as it is written: a column renamed by the
/// join (or an unnamed expression, whose name is its text) gets its written name as an alias.
fn item_over(joined: &Joined, item: &SelectItem) -> Result<SelectItem, Diagnostic> {
    let expr = match item {
        SelectItem::UnnamedExpr(e) => e,
        SelectItem::ExprWithAlias { expr, alias } => {
            return Ok(SelectItem::ExprWithAlias {
                expr: joined.rewrite(expr)?,
                alias: alias.clone(),
            })
        }
        other => {
            return Err(unsupported(
                pos(other.span().start),
                format!("`{other}` in a grouped SELECT over a join"),
            ))
        }
    };
    let rewritten = joined.rewrite(expr)?;
    let plain = |_: &str| Attr::Plain;
    let Some((written, _)) = item_column(item, &plain, false) else {
        return Ok(SelectItem::UnnamedExpr(rewritten));
    };
    if name_of(unnested(&rewritten)).as_deref() == Some(written.as_str()) {
        return Ok(SelectItem::UnnamedExpr(rewritten));
    }
    let alias = Ident::with_quote_and_span('"', expr.span(), written);
    Ok(SelectItem::ExprWithAlias {
        expr: rewritten,
        alias,
    })
}
