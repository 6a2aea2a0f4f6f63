//! The two joined tables, their columns, and the names of those columns in the join's
//! output: column references of the select list and WHERE are rewritten to them.

use std::ops::ControlFlow;

use anduin_types::{Diagnostic, Pos};
use sqlparser::ast::Spanned;
use sqlparser::ast::{
    visit_expressions, visit_expressions_mut, Expr, Ident, Select, SelectItem,
    SelectItemQualifiedWildcardKind,
};

use super::super::derived::{item_column, Attr};
use super::super::insert::{quoted, unsupported};
use super::super::source_text::pos;
use super::super::tables::Tables;

/// One joined table.
pub(super) struct Side {
    pub(super) stream: String,
    /// The stream the join reads instead of `stream`: a filter of it (conditions of an
    /// inner join on this side alone, applied before the join).
    pub(super) filtered: Option<String>,
    /// The stream the join reads instead of `stream` when nothing filters it: a map (`*`)
    /// of it, the right side of a self-join, so that the join's two inputs are two streams
    /// of the one source.
    pub(super) copy: Option<String>,
    pub(super) alias: String,
    /// The table or view the query reads on this side, by the name it writes (a subquery's:
    /// its stream).
    pub(super) table: String,
    pub(super) columns: Vec<String>,
    /// Columns that can be the event time (the `event_time` option, TIMESTAMP columns).
    pub(super) time_columns: Vec<String>,
    /// The column that is its event time, if known.
    pub(super) event_time: Option<String>,
    /// The output name of each column.
    pub(super) out: Vec<String>,
    /// A `TUMBLE` side: its size (ms) and time column.
    pub(super) window: Option<(u64, String, Pos)>,
}

/// A column reference resolved to a side (0 left, 1 right) and column, or a window bound.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Col {
    Of(usize, String),
    WindowStart,
    WindowEnd,
}

/// Both sides and the names of the join's output columns.
pub(super) struct Joined {
    pub(super) sides: [Side; 2],
    pub(super) windowed: bool,
    /// Whether the join operator knows its inputs by the sides' aliases (its `names`, as
    /// `join` and `regular_join` take it), or by their streams' names (`lookup_join`).
    pub(super) by_alias: bool,
}

impl Side {
    /// The stream the join reads.
    pub(super) fn input(&self) -> &str {
        self.filtered
            .as_deref()
            .or(self.copy.as_deref())
            .unwrap_or(&self.stream)
    }
}

impl Joined {
    /// The name the join operator knows side `i` by: in its `on`, and before the names of
    /// that side's columns whose names are taken.
    pub(super) fn side_name(&self, i: usize) -> &str {
        let side = &self.sides[i];
        if self.by_alias {
            &side.alias
        } else {
            side.input()
        }
    }

    /// The join operator's `names` param: the sides' aliases, which the user wrote (its
    /// messages and the output's names then say `b_price`, not the name of a stream the
    /// planner made).
    pub(super) fn names_param(&self) -> String {
        format!("{}, {}", self.sides[0].alias, self.sides[1].alias)
    }

    /// Output names as the join operator gives them: window bounds, left columns, right
    /// columns (renamed `{right alias}_{name}` where the name is taken).
    pub(super) fn name_outputs(&mut self) {
        let mut taken: Vec<String> = Vec::new();
        if self.windowed {
            taken.extend(["window_start".to_string(), "window_end".to_string()]);
        }
        let names = [self.side_name(0).to_string(), self.side_name(1).to_string()];
        for (side, prefix) in self.sides.iter_mut().zip(&names) {
            side.out.clear();
            for c in &side.columns {
                let mut n = c.clone();
                while taken.contains(&n) {
                    n = format!("{prefix}_{n}");
                }
                taken.push(n.clone());
                side.out.push(n);
            }
        }
    }

    /// The columns of the join's output, each with its name as the query writes it, qualified
    /// (`b_price` is `b.price`, `ts` is `a.ts`): the texts of the operators after the join
    /// carry them, so that their messages say the written names.
    pub(super) fn written_names(&self) -> Vec<(String, String)> {
        let mut names = Vec::new();
        for side in &self.sides {
            for (c, o) in side.columns.iter().zip(&side.out) {
                names.push((o.clone(), format!("{}.{c}", side.alias)));
            }
        }
        names
    }

    /// The columns of side `i`, each with its name qualified by the side's alias: the texts
    /// of the filter before the join over that side carry them.
    pub(super) fn side_written_names(&self, i: usize) -> Vec<(String, String)> {
        let side = &self.sides[i];
        side.columns
            .iter()
            .map(|c| (c.clone(), format!("{}.{c}", side.alias)))
            .collect()
    }

    /// `d` with each column of the join's output that the join renamed (`` `b_price` ``)
    /// named as the query writes it (`` `b.price` ``).
    pub(super) fn as_written(&self, mut d: Diagnostic) -> Diagnostic {
        for side in &self.sides {
            for (c, o) in side.columns.iter().zip(&side.out) {
                if c != o {
                    d.message = d
                        .message
                        .replace(&format!("`{o}`"), &format!("`{}.{c}`", side.alias));
                }
            }
        }
        d
    }

    pub(super) fn out_name(&self, col: &Col) -> String {
        match col {
            Col::Of(side, c) => {
                let s = &self.sides[*side];
                let i = s.columns.iter().position(|x| x == c).unwrap_or(0);
                s.out.get(i).cloned().unwrap_or_else(|| c.clone())
            }
            Col::WindowStart => "window_start".into(),
            Col::WindowEnd => "window_end".into(),
        }
    }

    pub(super) fn tables_text(&self) -> String {
        let [a, b] = &self.sides;
        let one = |s: &Side| {
            if s.alias == s.table {
                format!("`{}`", s.table)
            } else {
                format!("`{}` (table `{}`)", s.alias, s.table)
            }
        };
        format!("{} and {}", one(a), one(b))
    }

    /// `q.c` or `c`, to a side's column.
    pub(super) fn resolve(
        &self,
        qualifier: Option<&Ident>,
        col: &Ident,
    ) -> Result<Col, Diagnostic> {
        let at = pos(qualifier.unwrap_or(col).span.start);
        let side = match qualifier {
            Some(q) => Some(
                self.sides
                    .iter()
                    .position(|s| s.alias == q.value)
                    .or_else(|| {
                        self.sides
                            .iter()
                            .position(|s| s.alias.eq_ignore_ascii_case(&q.value))
                    })
                    .ok_or_else(|| {
                        Diagnostic::error(
                            at,
                            format!(
                                "unknown table `{}`: the joined tables are {}",
                                q.value,
                                self.tables_text()
                            ),
                        )
                    })?,
            ),
            None => None,
        };
        let name = col.value.as_str();
        if self.windowed && (name == "window_start" || name == "window_end") {
            return Ok(if name == "window_start" {
                Col::WindowStart
            } else {
                Col::WindowEnd
            });
        }
        let has = |i: usize| self.sides[i].columns.iter().any(|c| c == name);
        match side {
            Some(i) if has(i) => Ok(Col::Of(i, name.to_string())),
            Some(i) => Err(Diagnostic::error(
                at,
                format!(
                    "unknown column `{}.{name}`: `{}` has {}",
                    self.sides[i].alias,
                    self.sides[i].alias,
                    self.sides[i].columns.join(", ")
                ),
            )),
            None => match (has(0), has(1)) {
                (true, false) => Ok(Col::Of(0, name.to_string())),
                (false, true) => Ok(Col::Of(1, name.to_string())),
                (true, true) => Err(Diagnostic::error(
                    at,
                    format!(
                        "column `{name}` is in both joined tables: write `{}.{name}` or `{}.{name}`",
                        self.sides[0].alias, self.sides[1].alias
                    ),
                )),
                (false, false) => Err(Diagnostic::error(
                    at,
                    format!(
                        "unknown column `{name}`: the joined tables are {}",
                        self.tables_text()
                    ),
                )),
            },
        }
    }

    /// A column reference, if `e` is one.
    pub(super) fn column(&self, e: &Expr) -> Option<Result<Col, Diagnostic>> {
        match e {
            Expr::Identifier(id) => Some(self.resolve(None, id)),
            Expr::CompoundIdentifier(ids) if ids.len() == 2 => {
                Some(self.resolve(Some(&ids[0]), &ids[1]))
            }
            Expr::Nested(inner) => self.column(inner),
            _ => None,
        }
    }

    /// The sides `e` reads columns of (0 left, 1 right).
    pub(super) fn sides_read(&self, e: &Expr) -> Result<[bool; 2], Diagnostic> {
        let mut read = [false; 2];
        let mut error = None;
        let _ = sqlparser::ast::visit_expressions(e, |x| {
            if let Some(col) = match x {
                Expr::Identifier(_) | Expr::CompoundIdentifier(_) => self.column(x),
                _ => None,
            } {
                match col {
                    Ok(Col::Of(side, _)) => read[side.min(1)] = true,
                    Ok(_) => read = [true, true],
                    Err(d) => {
                        error = Some(d);
                        return ControlFlow::Break(());
                    }
                }
            }
            ControlFlow::Continue(())
        });
        match error {
            Some(d) => Err(d),
            None => Ok(read),
        }
    }

    /// The join's output columns that the rest of the query reads, by output name: those
    /// `s` reads outside its FROM and WHERE, and those the conjuncts `after` (the WHERE's and
    /// ON's that filter the joined rows) read. `None` (every column) for a wildcard in the
    /// select list, or a column reference that names no column of the join (then which
    /// columns are read is not known here).
    pub(super) fn read_outputs(&self, s: &Select, after: &[&Expr]) -> Option<Vec<String>> {
        if s.projection.iter().any(|i| {
            matches!(
                i,
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
            )
        }) {
            return None;
        }
        let mut rest = s.clone();
        rest.from.clear();
        rest.selection = None;
        let mut read: Vec<String> = Vec::new();
        let mut known = true;
        let mut visit = |x: &Expr| {
            if let Some(col) = match x {
                Expr::Identifier(_) | Expr::CompoundIdentifier(_) => self.column(x),
                _ => None,
            } {
                match col {
                    Ok(col @ Col::Of(..)) => {
                        let name = self.out_name(&col);
                        if !read.contains(&name) {
                            read.push(name);
                        }
                    }
                    Ok(_) => {}
                    Err(_) => {
                        known = false;
                        return ControlFlow::Break(());
                    }
                }
            }
            ControlFlow::Continue(())
        };
        let _ = visit_expressions(&rest, &mut visit);
        for e in after {
            let _ = visit_expressions(*e, &mut visit);
        }
        known.then_some(read)
    }

    /// `e`, which reads columns of one side only, over that side's own columns.
    pub(super) fn rewrite_for_side(&self, e: &Expr) -> Result<Expr, Diagnostic> {
        self.rename_columns(e, |col| match col {
            Col::Of(_, c) => Some(c),
            _ => None,
        })
    }

    /// `e` with every column reference replaced by the join output's column name.
    pub(super) fn rewrite(&self, e: &Expr) -> Result<Expr, Diagnostic> {
        self.rename_columns(e, |col| Some(self.out_name(&col)))
    }

    /// `e` with each column reference replaced by the quoted name `name` gives it (kept as it
    /// is for `None`); the first reference that does not resolve is the error.
    fn rename_columns(
        &self,
        e: &Expr,
        name: impl Fn(Col) -> Option<String>,
    ) -> Result<Expr, Diagnostic> {
        let mut e = e.clone();
        let mut error = None;
        let _ = visit_expressions_mut(&mut e, |x| {
            if let Some(col) = match x {
                Expr::Identifier(_) | Expr::CompoundIdentifier(_) => self.column(x),
                _ => None,
            } {
                match col.map(&name) {
                    Ok(Some(n)) => {
                        *x = Expr::Identifier(Ident::with_quote_and_span('"', x.span(), n))
                    }
                    Ok(None) => {}
                    Err(d) => {
                        error = Some(d);
                        return ControlFlow::Break(());
                    }
                }
            }
            ControlFlow::Continue(())
        });
        match error {
            Some(d) => Err(d),
            None => Ok(e),
        }
    }

    /// The columns one item of the select list gives, and what they are (a time column of a
    /// side stays a time; the window bounds of a window join stay window bounds). A column of
    /// a side selected without an alias is named as in its table (`A.dateTime` is
    /// `dateTime`), unless an earlier item of the list (in `earlier`) took that name: then it
    /// keeps its name in the join's output (`B.dateTime, A.dateTime` give `dateTime` and
    /// the right table's `…_dateTime`), so that no two columns share a name.
    pub(super) fn item_columns(
        &self,
        item: &SelectItem,
        tables: &Tables,
        earlier: &[(String, Attr)],
    ) -> Vec<(String, Attr)> {
        let attr_of = |c: &str| -> Attr {
            if self.windowed && (c == "window_start" || c == "window_end") {
                return if c == "window_start" {
                    Attr::WindowStart
                } else {
                    Attr::WindowEnd
                };
            }
            let of = |s: &Side| {
                s.columns
                    .iter()
                    .any(|x| x == c)
                    .then(|| tables.attr(&s.stream, c))
            };
            of(&self.sides[0])
                .or_else(|| of(&self.sides[1]))
                .unwrap_or(Attr::Plain)
        };
        match item {
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(q), _) => {
                // `b.*`: the side's columns under their own names, but those an earlier item
                // (or column) took, which keep their names in the join's output.
                let Some(side) = self.sides.iter().find(|s| s.alias == q.to_string()) else {
                    return Vec::new(); // an error of `item`
                };
                let mut cols: Vec<(String, Attr)> = Vec::new();
                if side.window.is_some() {
                    cols.push(("window_start".to_string(), Attr::WindowStart));
                    cols.push(("window_end".to_string(), Attr::WindowEnd));
                }
                for (c, o) in side.columns.iter().zip(&side.out) {
                    let taken = |n: &str| earlier.iter().chain(cols.iter()).any(|(x, _)| x == n);
                    let mut name = if taken(c) { o.clone() } else { c.clone() };
                    while taken(&name) {
                        name = format!("{}_{name}", side.alias);
                    }
                    cols.push((name, tables.attr(&side.stream, c)));
                }
                cols
            }
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                let mut cols = Vec::new();
                if self.windowed {
                    cols.push(("window_start".to_string(), Attr::WindowStart));
                    cols.push(("window_end".to_string(), Attr::WindowEnd));
                }
                for side in &self.sides {
                    for (c, o) in side.columns.iter().zip(&side.out) {
                        cols.push((o.clone(), tables.attr(&side.stream, c)));
                    }
                }
                cols
            }
            SelectItem::UnnamedExpr(e) => {
                let named = item_column(item, &attr_of, false);
                match (named, self.column(e)) {
                    (Some((name, attr)), Some(Ok(col)))
                        if earlier.iter().any(|(c, _)| *c == name) =>
                    {
                        vec![(self.out_name(&col), attr)]
                    }
                    (named, _) => named.into_iter().collect(),
                }
            }
            other => item_column(other, &attr_of, false).into_iter().collect(),
        }
    }

    /// One item of the select list, over the join output; `names`, the names
    /// [`Joined::item_columns`] gives its columns.
    pub(super) fn item(&self, item: &SelectItem, names: &[String]) -> Result<String, Diagnostic> {
        let at = pos(item.span().start);
        Ok(match item {
            SelectItem::UnnamedExpr(e) => {
                let text = self.rewrite(e)?.to_string();
                match (self.column(e), names.first()) {
                    // A column renamed in the join's output (`A.dateTime` as the right
                    // table's `…_dateTime`) takes its name back.
                    (Some(Ok(col)), Some(name)) if self.out_name(&col) != *name => {
                        format!("{text} AS {}", quoted(name))
                    }
                    _ => text,
                }
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                format!("{} AS {alias}", self.rewrite(expr)?)
            }
            SelectItem::Wildcard(_) if item.to_string() == "*" => "*".to_string(),
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(q), _)
                if item.to_string().ends_with(".*") =>
            {
                let q = q.to_string();
                let side = self.sides.iter().find(|s| s.alias == q).ok_or_else(|| {
                    Diagnostic::error(
                        at,
                        format!(
                            "unknown table `{q}`: the joined tables are {}",
                            self.tables_text()
                        ),
                    )
                })?;
                let mut cols: Vec<String> = Vec::new();
                if side.window.is_some() {
                    cols.extend(["window_start", "window_end"].map(quoted));
                }
                cols.extend(side.out.iter().map(|c| quoted(c)));
                // Each under the name `item_columns` gives it (its own, unless taken).
                for (col, name) in cols.iter_mut().zip(names) {
                    if *col != quoted(name) {
                        *col = format!("{col} AS {}", quoted(name));
                    }
                }
                cols.join(", ")
            }
            other => return Err(unsupported(at, format!("`{other}` in a join's SELECT"))),
        })
    }
}
