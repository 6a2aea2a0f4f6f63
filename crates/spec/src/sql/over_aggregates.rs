//! Expressions over aggregates in a grouped SELECT and its HAVING, as Flink takes them:
//!
//! ```sql
//! SELECT k, SUM(a) / COUNT(*) AS avg_a, MAX(b) - MIN(b) AS spread
//! FROM t GROUP BY k HAVING MAX(b) - MIN(b) > 10
//! ```
//!
//! The `window` and `aggregate` operators compute one aggregate call per column; each call
//! inside an expression is computed as a column of its own (`__agg1`, …, or `__having1`, …
//! for those only the HAVING reads; a call written twice is computed once, and a call that
//! is also a select item is read from that item's column), and the map after the operator
//! computes the expression over those columns and the keys. Over an updating result (a GROUP
//! BY without a window) the map computes it for each change: `-U` carries the expression's
//! old value, `+U` its new one.

use std::ops::ControlFlow;

use anduin_types::{Diagnostic, Pos};
use sqlparser::ast::{Expr, Ident, Spanned, VisitMut, VisitorMut};

use super::group_updating::is_aggregate_call;
use super::insert::{quoted, unnested};
use super::source_text::pos;
use crate::ast::Spec;
use crate::Text;

/// The aggregate calls of one grouped SELECT and the columns of the operator that hold them.
#[derive(Default)]
pub(super) struct Calls {
    /// Each call as written (sqlparser's rendering) and its column.
    computed: Vec<(String, String)>,
    /// The aggregates the operator computes for expressions (`… AS "__agg1"`).
    pub hidden: Vec<Text>,
    /// How many hidden columns each prefix has named.
    named: Vec<(&'static str, usize)>,
    /// The script's aggregates, in lower case.
    user: Vec<String>,
    /// The columns the grouped SELECT reads, where the frontend knows them.
    known: Option<Known>,
    /// Whether the SELECT groups windows (its aggregates are DataFusion's, `STRING_AGG`
    /// among them) rather than a stream without windows (`COUNT`, `SUM`, `AVG`, `MIN`,
    /// `MAX`, `COUNT(DISTINCT …)` and the script's own, kept under retraction).
    windowed: bool,
}

/// The columns of the input of a grouped SELECT, where the frontend knows them (a declared
/// table, a subquery, a window table function over either): a column reference that is none
/// of them is an unknown column, not one neither grouped by nor aggregated.
#[derive(Debug, Clone)]
pub(super) struct Known {
    /// How an error names the input: ``stream `t` ``, ``subquery `q` ``.
    pub owner: String,
    /// Its columns.
    pub columns: Vec<String>,
}

/// How a select item of a grouped SELECT is computed.
pub(super) enum Item {
    /// By the operator, as one of its aggregates.
    Aggregate,
    /// By the map after the operator: the expression over the operator's columns, as text.
    Computed(String),
}

impl Calls {
    /// No calls yet; the script's own aggregates (`CREATE AGGREGATE`) count as aggregates.
    pub(super) fn new(spec: &Spec) -> Self {
        Self {
            user: spec
                .functions
                .iter()
                .filter(|f| f.aggregate)
                .map(|f| f.name.as_str().to_lowercase())
                .collect(),
            ..Self::default()
        }
    }

    /// The same, over an input whose columns are `known` (if the frontend knows them), of a
    /// SELECT that groups windows (`windowed`) or a stream without windows.
    pub(super) fn reading(mut self, known: Option<Known>, windowed: bool) -> Self {
        self.known = known;
        self.windowed = windowed;
        self
    }

    /// The error for `column`, read at `at` in a grouped select list or HAVING, that is
    /// neither a key nor an aggregate's column: an unknown column, naming the columns there
    /// are, if the input's columns are known and it is none of them; else a column neither
    /// grouped by nor aggregated.
    pub(super) fn ungrouped(&self, column: &str, at: Pos) -> Diagnostic {
        match &self.known {
            Some(k) if !k.columns.iter().any(|c| c.eq_ignore_ascii_case(column)) => {
                Diagnostic::error(
                    at,
                    format!(
                        "unknown column `{column}`: {} has {}",
                        k.owner,
                        k.columns.join(", ")
                    ),
                )
            }
            _ => Diagnostic::error(
                at,
                format!("column `{column}` is neither grouped by nor aggregated: add it to GROUP BY, or aggregate it"),
            ),
        }
    }

    /// Whether `e` calls an aggregate: a built-in one or one of the script's (in any case,
    /// quoted or not, as functions are named).
    pub(super) fn is_aggregate(&self, e: &Expr) -> bool {
        let user = |f: &sqlparser::ast::Function| {
            f.over.is_none()
                && matches!(f.name.0.as_slice(), [part] if part
                    .as_ident()
                    .is_some_and(|i| self.user.contains(&i.value.to_lowercase())))
        };
        is_aggregate_call(e) || matches!(e, Expr::Function(f) if user(f))
    }

    /// Whether `e` holds an aggregate call anywhere.
    fn holds_aggregate(&self, e: &Expr) -> bool {
        holds(e, |x| self.is_aggregate(x))
    }

    /// How the select item `expr` is computed: by the operator, as one of its aggregates
    /// (an aggregate call; or, holding none and reading other columns than the keys, what
    /// the operator makes of it), or by the map after it, over the operator's columns.
    pub(super) fn item_over(
        &mut self,
        expr: &Expr,
        grouped: &[(String, String)],
        key: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Item, Diagnostic> {
        let e = unnested(expr);
        self.check_nesting(e)?;
        if self.is_aggregate(e) {
            return Ok(Item::Aggregate);
        }
        if self.holds_aggregate(e) {
            return self
                .rewrite(e, "__agg", grouped, key)
                .map(|over| Item::Computed(over.to_string()));
        }
        // Over the keys alone (`k * 2`, a constant), computed by the map; with a call that
        // reads other columns (an aggregate not known here) left to the operator, which
        // names what it is; without, the first column neither grouped nor aggregated.
        match self.rewrite(e, "__agg", grouped, key) {
            Ok(over) => Ok(Item::Computed(over.to_string())),
            Err(_) if holds(e, |x| matches!(x, Expr::Function(_))) => Ok(Item::Aggregate),
            Err(d) => Err(d),
        }
    }

    /// Records that the select item `written`, an aggregate call, is computed as `column`.
    pub(super) fn item(&mut self, written: String, column: String) {
        self.computed.push((written, column));
    }

    /// The column computing `call` (as written), a new hidden one named `{prefix}{n}` if no
    /// column computes it yet.
    fn column(&mut self, call: &Expr, prefix: &'static str) -> String {
        let written = call.to_string();
        if let Some((_, c)) = self.computed.iter().find(|(w, _)| *w == written) {
            return c.clone();
        }
        let n = match self.named.iter_mut().find(|(p, _)| *p == prefix) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                self.named.push((prefix, 1));
                1
            }
        };
        let column = format!("{prefix}{n}");
        self.hidden.push(Text::at(
            format!("{written} AS {}", quoted(&column)),
            pos(call.span().start),
        ));
        self.computed.push((written, column.clone()));
        column
    }

    /// `e` rewritten over the operator's output: each aggregate call a column (new ones
    /// named `{prefix}1`, …), each expression of the GROUP BY in `grouped` (as written, its
    /// column) its column, each column reference the name `key` gives it (none: the column
    /// is neither grouped nor aggregated, an error at its place).
    pub(super) fn rewrite(
        &mut self,
        e: &Expr,
        prefix: &'static str,
        grouped: &[(String, String)],
        key: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Expr, Diagnostic> {
        self.check_nesting(unnested(e))?;
        let mut out = unnested(e).clone();
        let mut v = Rewriter {
            calls: self,
            prefix,
            grouped,
            key,
        };
        match out.visit(&mut v) {
            ControlFlow::Continue(()) => Ok(out),
            ControlFlow::Break(d) => Err(*d),
        }
    }
}

impl Calls {
    /// Refuses, at its place, what a grouped select list or HAVING cannot compute: an
    /// aggregate inside another's argument or `FILTER` (`COUNT(*) FILTER (WHERE b > MAX(a))`),
    /// a subquery, and Flink's `LISTAGG` (which DataFusion does not have: its `STRING_AGG`
    /// is, in a window).
    fn check_nesting(&self, e: &Expr) -> Result<(), Diagnostic> {
        let mut found: Option<Diagnostic> = None;
        let mut e = e.clone();
        let _ = sqlparser::ast::visit_expressions_mut(&mut e, |x| {
            if found.is_some() {
                return ControlFlow::Break(());
            }
            match x {
                Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => {
                    found = Some(Diagnostic::error(
                        pos(x.span().start),
                        "a subquery in a grouped select list or HAVING is not supported: join \
                         with it, or compute it in a subquery of the FROM",
                    ));
                }
                Expr::Function(f) if f.over.is_none() && is_listagg(f) => {
                    found = Some(Diagnostic::error(pos(f.span().start), self.listagg(f)));
                }
                _ if self.is_aggregate(x) => {
                    let outer = x.to_string();
                    let mut inner = x.clone();
                    let _ = sqlparser::ast::visit_expressions_mut(&mut inner, |y| {
                        // Every expression in it, the call itself last.
                        if self.is_aggregate(y) && y.to_string() != outer {
                            found = Some(Diagnostic::error(
                                pos(y.span().start),
                                format!(
                                    "an aggregate inside another aggregate (`{y}` in `{outer}`) is not supported: compute the inner one in a subquery first"
                                ),
                            ));
                            return ControlFlow::Break(());
                        }
                        ControlFlow::Continue(())
                    });
                }
                _ => {}
            }
            ControlFlow::Continue(())
        });
        found.map_or(Ok(()), Err)
    }
}

impl Calls {
    /// The error for `f`, a `LISTAGG(…)` call: what to write instead.
    fn listagg(&self, f: &sqlparser::ast::Function) -> String {
        if self.windowed {
            format!(
                "{}(…) is not supported yet: write STRING_AGG(x, ',') (DataFusion's; its separator is not optional)",
                f.name
            )
        } else {
            format!(
                "{}(…) is not supported yet in a GROUP BY without a window: the aggregates there are COUNT, SUM, AVG, MIN, MAX, COUNT(DISTINCT …) and the script's own (CREATE AGGREGATE); STRING_AGG(x, ',') is supported in a window's GROUP BY",
                f.name
            )
        }
    }
}

/// Whether `f` is `LISTAGG(…)` (in any case).
fn is_listagg(f: &sqlparser::ast::Function) -> bool {
    matches!(f.name.0.as_slice(), [part] if part
        .as_ident()
        .is_some_and(|i| i.value.eq_ignore_ascii_case("listagg")))
}

/// Whether `e` or an expression in it is one that `what` picks.
fn holds(e: &Expr, what: impl Fn(&Expr) -> bool) -> bool {
    let mut e = e.clone();
    let mut found = false;
    let _ = sqlparser::ast::visit_expressions_mut(&mut e, |x| {
        found |= what(x);
        ControlFlow::<()>::Continue(())
    });
    found
}

struct Rewriter<'a> {
    calls: &'a mut Calls,
    prefix: &'static str,
    grouped: &'a [(String, String)],
    key: &'a dyn Fn(&str) -> Option<String>,
}

impl Rewriter<'_> {
    fn reference(&self, ident: &Ident) -> ControlFlow<Box<Diagnostic>, Expr> {
        match (self.key)(&ident.value) {
            Some(c) if c == ident.value => ControlFlow::Continue(Expr::Identifier(ident.clone())),
            Some(c) => ControlFlow::Continue(Expr::Identifier(Ident::with_quote('"', c))),
            None => ControlFlow::Break(Box::new(
                self.calls.ungrouped(&ident.value, pos(ident.span.start)),
            )),
        }
    }
}

impl VisitorMut for Rewriter<'_> {
    type Break = Box<Diagnostic>;

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<Self::Break> {
        if !self.grouped.is_empty() {
            let written = e.to_string();
            if let Some((_, c)) = self.grouped.iter().find(|(w, _)| *w == written) {
                *e = Expr::Identifier(Ident::with_quote('"', c.clone()));
                return ControlFlow::Continue(());
            }
        }
        if self.calls.is_aggregate(e) {
            let c = self.calls.column(e, self.prefix);
            *e = Expr::Identifier(Ident::with_quote('"', c));
            return ControlFlow::Continue(());
        }
        let replaced = match e {
            Expr::Identifier(i) => self.reference(i)?,
            Expr::CompoundIdentifier(ids) => match ids.last() {
                Some(last) => self.reference(last)?,
                None => return ControlFlow::Continue(()),
            },
            _ => return ControlFlow::Continue(()),
        };
        *e = replaced;
        ControlFlow::Continue(())
    }
}
