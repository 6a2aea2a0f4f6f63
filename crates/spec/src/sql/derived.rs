//! Streams made by subqueries in FROM (`(SELECT …) AS q`): their output columns, and which
//! of them are window bounds or times, so that a query over them can join them on time or
//! group them by window.
//!
//! A windowed SELECT's `window_start` and `window_end` keep being window bounds under any
//! alias (`window_end AS endtime`), through plain column references of later SELECTs, and
//! as keys of a GROUP BY over them: as in Flink, the window end is the derived stream's
//! event time.

use sqlparser::ast::{Expr, FunctionArguments, SelectItem};

use super::insert::{name_of, unnested};

/// What a column of a derived stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attr {
    /// The start of the window a row belongs to.
    WindowStart,
    /// The end of the window a row belongs to: the stream's event time.
    WindowEnd,
    /// Another timestamp (a source's time column passed through).
    Time,
    /// A processing time: a column computed as `PROCTIME()` (and passed through). A window
    /// whose `DESCRIPTOR` names it groups rows by the wall clock at which it processes them.
    ProcTime,
    /// Anything else.
    Plain,
}

impl Attr {
    /// Whether the column can be an event time (a processing time cannot).
    pub(crate) fn is_time(self) -> bool {
        matches!(self, Attr::WindowStart | Attr::WindowEnd | Attr::Time)
    }
}

/// A stream made by a subquery.
#[derive(Debug, Clone)]
pub(crate) struct Derived {
    pub stream: String,
    pub columns: Vec<(String, Attr)>,
}

impl Derived {
    /// What column `column` is (`Plain` if the stream has no such column).
    pub(crate) fn attr(&self, column: &str) -> Attr {
        self.columns
            .iter()
            .find(|(c, _)| c == column)
            .map_or(Attr::Plain, |(_, a)| *a)
    }

    /// The column that is the stream's event time: its window end, else its only time.
    pub(crate) fn event_time(&self) -> Option<&str> {
        let pick = |a: Attr| {
            self.columns
                .iter()
                .find(|(_, x)| *x == a)
                .map(|(c, _)| c.as_str())
        };
        pick(Attr::WindowEnd).or_else(|| pick(Attr::Time))
    }
}

/// The output name of a select item, and what it is, given what its input's columns are.
/// `window` is true for the SELECT of a window table function, whose `window_start` and
/// `window_end` are the window's bounds.
pub(crate) fn item_column(
    item: &SelectItem,
    input: &dyn Fn(&str) -> Attr,
    window: bool,
) -> Option<(String, Attr)> {
    let (expr, alias) = match item {
        SelectItem::UnnamedExpr(e) => (e, None),
        SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.clone())),
        _ => return None,
    };
    let attr = match column_ref(expr) {
        Some(c) if window && c == "window_start" => Attr::WindowStart,
        Some(c) if window && c == "window_end" => Attr::WindowEnd,
        Some(c) => input(&c),
        None if is_proctime(expr) => Attr::ProcTime,
        None => Attr::Plain,
    };
    let name = alias
        .or_else(|| column_ref(expr))
        .unwrap_or_else(|| expr.to_string());
    Some((name, attr))
}

/// Whether `e` is a call of `PROCTIME()`, Flink's processing-time attribute.
pub(crate) fn is_proctime(e: &Expr) -> bool {
    match unnested(e) {
        Expr::Function(f) => {
            f.name.to_string().eq_ignore_ascii_case("PROCTIME")
                && match &f.args {
                    FunctionArguments::None => true,
                    FunctionArguments::List(l) => l.args.is_empty(),
                    FunctionArguments::Subquery(_) => false,
                }
        }
        _ => false,
    }
}

/// The column `e` names, if it is a plain (possibly qualified) column reference.
fn column_ref(e: &Expr) -> Option<String> {
    name_of(unnested(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::GenericDialect;
    use sqlparser::parser::Parser;

    fn items(sql: &str) -> Vec<SelectItem> {
        let mut p = Parser::new(&GenericDialect {})
            .try_with_sql(sql)
            .expect("tokenizes");
        p.parse_projection().expect("a select list")
    }

    #[test]
    fn window_bounds_keep_their_meaning_under_an_alias() {
        let plain = |_: &str| Attr::Plain;
        let cols: Vec<_> = items("auction, count(*) AS num, window_start AS s, q.window_end AS e")
            .iter()
            .map(|i| item_column(i, &plain, true).expect("an expression"))
            .collect();
        assert_eq!(
            cols,
            [
                ("auction".to_string(), Attr::Plain),
                ("num".to_string(), Attr::Plain),
                ("s".to_string(), Attr::WindowStart),
                ("e".to_string(), Attr::WindowEnd),
            ]
        );
    }

    #[test]
    fn a_column_passed_on_keeps_what_it_was_and_an_expression_is_plain() {
        let input = |c: &str| {
            if c == "endtime" {
                Attr::WindowEnd
            } else {
                Attr::Plain
            }
        };
        let cols: Vec<_> = items("endtime AS t, endtime + 1 AS u, window_end")
            .iter()
            .map(|i| item_column(i, &input, false).expect("an expression"))
            .collect();
        assert_eq!(cols[0], ("t".to_string(), Attr::WindowEnd));
        assert_eq!(cols[1], ("u".to_string(), Attr::Plain));
        // Outside a windowed SELECT, `window_end` is just a column of the input.
        assert_eq!(cols[2], ("window_end".to_string(), Attr::Plain));
    }

    #[test]
    fn a_proctime_call_makes_a_processing_time_that_a_plain_reference_keeps() {
        let plain = |_: &str| Attr::Plain;
        let cols: Vec<_> = items("PROCTIME() AS p, proctime() AS q, PROCTIME() + 1 AS r")
            .iter()
            .map(|i| item_column(i, &plain, false).expect("an expression"))
            .collect();
        assert_eq!(cols[0], ("p".to_string(), Attr::ProcTime));
        assert_eq!(cols[1], ("q".to_string(), Attr::ProcTime));
        assert_eq!(cols[2], ("r".to_string(), Attr::Plain));
        let input = |c: &str| {
            if c == "p" {
                Attr::ProcTime
            } else {
                Attr::Plain
            }
        };
        let passed = item_column(&items("p AS t")[0], &input, false).expect("a column");
        assert_eq!(passed, ("t".to_string(), Attr::ProcTime));
        assert!(!Attr::ProcTime.is_time());
    }

    #[test]
    fn the_event_time_of_a_derived_stream_is_its_window_end() {
        let d = Derived {
            stream: "q".into(),
            columns: vec![
                ("s".into(), Attr::WindowStart),
                ("t".into(), Attr::Time),
                ("e".into(), Attr::WindowEnd),
            ],
        };
        assert_eq!(d.event_time(), Some("e"));
    }
}
