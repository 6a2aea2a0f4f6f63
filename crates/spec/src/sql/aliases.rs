//! The select list's aliases outside the select list, in a grouped SELECT:
//!
//! - in `GROUP BY`, refused as Flink refuses them (`SELECT k % 2 AS g … GROUP BY g`): a GROUP
//!   BY names the columns of the FROM; the error names the alias, where it is given, and the
//!   expression to repeat;
//! - in `HAVING`, read as the expression they name (`HAVING n > 1` for `COUNT(*) AS n`), as
//!   DataFusion and MySQL read them (Flink refuses them). A name that the GROUP BY groups by
//!   is that column, and names inside an aggregate's argument are columns of the FROM; any
//!   other column there would be an error (neither grouped nor aggregated), so reading an
//!   alias instead changes the answer of no query that standard SQL takes.

use std::ops::ControlFlow;

use anduin_types::Diagnostic;
use sqlparser::ast::{Expr, Ident, Select, SelectItem, VisitMut, VisitorMut};

use super::insert::unnested;
use super::source_text::pos;

/// The select item `alias` names, with its place in the list (from 1) and the alias.
fn aliased<'s>(s: &'s Select, alias: &str) -> Option<(usize, &'s Ident, &'s Expr)> {
    s.projection
        .iter()
        .enumerate()
        .find_map(|(i, item)| match item {
            SelectItem::ExprWithAlias { expr, alias: a } if a.value == alias => {
                Some((i + 1, a, expr))
            }
            _ => None,
        })
}

/// The error for `g`, an item of the GROUP BY of `s`, if it is a bare name that is no column
/// of the FROM (`is_column`) but the alias of a select item. The GROUP BY of a window
/// (`windowed`) takes columns only: an expression is computed in a subquery.
pub(super) fn group_by_alias(
    g: &Expr,
    s: &Select,
    is_column: &dyn Fn(&str) -> bool,
    windowed: bool,
) -> Option<Diagnostic> {
    let Expr::Identifier(name) = unnested(g) else {
        return None;
    };
    if is_column(&name.value) {
        return None;
    }
    let (n, alias, expr) = aliased(s, &name.value)?;
    let at = pos(alias.span.start);
    let column = matches!(
        unnested(expr),
        Expr::Identifier(_) | Expr::CompoundIdentifier(_)
    );
    let mut calls = false;
    let _ = sqlparser::ast::visit_expressions(expr, |x| {
        calls |= super::group_updating::is_aggregate_call(x);
        ControlFlow::<()>::Continue(())
    });
    let instead = if calls {
        format!("`{expr}` is an aggregate, computed over each group, and cannot make the groups: group by columns of the FROM (to group by an aggregate's result, compute it in a subquery and group the query over it)")
    } else if windowed && !column {
        format!("compute it as a column of a subquery, FROM (SELECT …, {expr} AS {alias} FROM …), and group by that")
    } else {
        format!("repeat the expression: GROUP BY {expr}")
    };
    Some(Diagnostic::error(
        pos(name.span.start),
        format!(
            "`{}` in GROUP BY is not a column but the alias of select item {n} (`{expr} AS {alias}`, at {}:{}): as in Flink, GROUP BY takes the columns of the FROM and expressions over them, not the select list's aliases; {instead}",
            name.value, at.line, at.col
        ),
    ))
}

/// The names a GROUP BY groups by as columns: its bare (or qualified) column names, and the
/// window's bounds of a windowed one.
pub(super) fn grouped_names(group: &[&Expr], windowed: bool) -> Vec<String> {
    let mut names: Vec<String> = group
        .iter()
        .filter_map(|g| match unnested(g) {
            Expr::Identifier(i) => Some(i.value.clone()),
            Expr::CompoundIdentifier(ids) => ids.last().map(|i| i.value.clone()),
            _ => None,
        })
        .collect();
    if windowed {
        names.extend(["window_start", "window_end"].map(String::from));
    }
    names
}

/// The HAVING of `s` with each bare name that is not grouped by (`grouped`) but the alias of
/// a select item replaced by that item's expression; names inside an aggregate call
/// (`is_aggregate`) are left to the call.
pub(super) fn having_over_aliases(
    s: &Select,
    grouped: &[String],
    is_aggregate: &dyn Fn(&Expr) -> bool,
) -> Option<Expr> {
    let mut having = s.having.clone()?;
    let is_key = |c: &str| grouped.iter().any(|g| g == c);
    let mut v = Dealias {
        s,
        is_key: &is_key,
        is_aggregate,
        in_aggregate: 0,
    };
    let _ = having.visit(&mut v);
    Some(having)
}

struct Dealias<'a> {
    s: &'a Select,
    is_key: &'a dyn Fn(&str) -> bool,
    is_aggregate: &'a dyn Fn(&Expr) -> bool,
    /// How many aggregate calls the visit is inside.
    in_aggregate: usize,
}

impl VisitorMut for Dealias<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if (self.is_aggregate)(e) {
            self.in_aggregate += 1;
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if (self.is_aggregate)(e) {
            self.in_aggregate -= 1;
            return ControlFlow::Continue(());
        }
        if self.in_aggregate > 0 {
            return ControlFlow::Continue(());
        }
        if let Expr::Identifier(name) = e {
            if !(self.is_key)(&name.value) {
                if let Some((_, _, expr)) = aliased(self.s, &name.value) {
                    *e = Expr::Nested(Box::new(expr.clone()));
                }
            }
        }
        ControlFlow::Continue(())
    }
}
