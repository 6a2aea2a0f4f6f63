//! Navigation over an expression, as SQL:2016 and Trino and Oracle have it: `PREV(price * 2)`,
//! `LAST(A.price + A.tax, 1)`, `FIRST(lower(CLASSIFIER()), 1)`, `NEXT(value - 1)`,
//! `PREV(LAST(A.price + 1), 2)`: the argument is evaluated at the row the navigation names.
//!
//! The argument is compiled as any expression, its references naming the row the navigation
//! starts from (`A.price`: the last row mapped to `A`; `price`: the current row); then every
//! reference is moved to the row navigated to, which is the same for all of them. So the
//! result is an ordinary expression of column references and the evaluator, the pruner's
//! analysis of what a condition reads, and DataFusion's parts need nothing of their own.
//!
//! What is refused, naming the call and where it is: an argument that reads no row (`LAST(1)`),
//! or more than one (`LAST(A.x + B.x)`, `PREV(price + PREV(price))`: it is evaluated at one
//! row); an aggregate, `NEXT` or `FINAL` inside the argument; and `FIRST`/`LAST` around a
//! navigation (`LAST(PREV(x))`: nest them the other way, `PREV(LAST(x))`, as the standard
//! does).

use anduin_expr::ExprError;
use sqlparser::ast::{Expr, Spanned};

use super::expr::{at, compile, Base, RowRef, Scope, Typed, E};

/// Which navigation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Nav {
    /// `PREV(x, n)`: `n` rows back in the partition.
    Prev,
    /// `NEXT(x, n)` (measures): `n` rows on, within the match.
    Next,
    /// `FIRST(V.x, n)`: the `n`-th row from the first mapped to `V`.
    First,
    /// `LAST(V.x, n)`: the `n`-th row from the last mapped to `V`.
    Last,
}

impl Nav {
    fn name(self) -> &'static str {
        match self {
            Nav::Prev => "PREV",
            Nav::Next => "NEXT",
            Nav::First => "FIRST",
            Nav::Last => "LAST",
        }
    }
}

/// `nav(arg, n)` at `node`: `arg` evaluated at the row the navigation names.
pub(super) fn navigate(
    node: &Expr,
    nav: Nav,
    arg: &Expr,
    n: usize,
    s: &Scope<'_>,
) -> Result<Typed, ExprError> {
    let Typed { mut e, ty } = compile(arg, s)?;
    let row = the_row(node, nav, arg, &e)?;
    match nav {
        Nav::Prev => refs_mut(&mut e, &mut |r| r.back += n),
        Nav::Next => e = into_next(e, n),
        Nav::First | Nav::Last => {
            let var = match row.base {
                Base::Last { var, n: 0 } if row.back == 0 => var,
                _ => {
                    return Err(at(
                        node.span(),
                        format!(
                            "`{node}`: {} around a navigation is not supported: nest them the other way (`PREV(LAST(A.x), 1)`, as the standard does)",
                            nav.name()
                        ),
                    ))
                }
            };
            let base = if nav == Nav::First {
                Base::First { var, n }
            } else {
                Base::Last { var, n }
            };
            refs_mut(&mut e, &mut |r| r.base = base);
        }
    }
    Ok(Typed { e, ty })
}

/// The one row every reference of the compiled argument `e` names.
fn the_row(node: &Expr, nav: Nav, arg: &Expr, e: &E) -> Result<RowRef, ExprError> {
    let name = nav.name();
    let mut rows: Vec<RowRef> = Vec::new();
    let mut inner: Option<&'static str> = None;
    e.walk(&mut |x| match x {
        E::Col(r, _) | E::Classifier(r) if !rows.contains(r) => rows.push(*r),
        E::Agg(_) => inner = inner.or(Some("an aggregate")),
        E::Next { .. } => inner = inner.or(Some("NEXT")),
        E::Final(_) => inner = inner.or(Some("FINAL")),
        _ => {}
    });
    if let Some(what) = inner {
        return Err(at(
            arg.span(),
            format!("{what} inside the argument of {name} in `{node}` is not supported: the argument is evaluated at one row"),
        ));
    }
    match rows.as_slice() {
        [row] => Ok(*row),
        [] => Err(at(
            arg.span(),
            format!("the argument of {name} in `{node}` reads no row: name a column (`A.x`, `x`) or CLASSIFIER() in it"),
        )),
        _ => Err(at(
            arg.span(),
            format!("the argument of {name} in `{node}` reads more than one row: it is evaluated at one row, so its columns name one variable (`{name}(A.price + A.tax)`) or none (`{name}(price + tax)`)"),
        )),
    }
}

/// Calls `f` on every row reference in `e`.
fn refs_mut(e: &mut E, f: &mut impl FnMut(&mut RowRef)) {
    match e {
        E::Col(r, _) | E::Classifier(r) | E::Next { r, .. } => f(r),
        E::Lit(_) | E::MatchNumber => {}
        E::Agg(a) => {
            for x in a.parts_mut() {
                refs_mut(x, f);
            }
        }
        E::Df(_, args) => {
            for x in args {
                refs_mut(x, f);
            }
        }
        E::Bin(_, a, b) | E::And(a, b) | E::Or(a, b) => {
            refs_mut(a, f);
            refs_mut(b, f);
        }
        E::Final(a) | E::Not(a) | E::Neg(a) | E::IsNull(a, _) | E::Cast(a, _) => refs_mut(a, f),
    }
}

/// `e` with each of its columns and CLASSIFIER()s read `n` rows on, within the match.
fn into_next(e: E, n: usize) -> E {
    let b = |x: Box<E>| Box::new(into_next(*x, n));
    match e {
        E::Col(r, col) => E::Next {
            r,
            col: Some(col),
            n,
        },
        E::Classifier(r) => E::Next { r, col: None, n },
        E::Df(df, args) => E::Df(df, args.into_iter().map(|x| into_next(x, n)).collect()),
        E::Bin(op, l, r) => E::Bin(op, b(l), b(r)),
        E::And(l, r) => E::And(b(l), b(r)),
        E::Or(l, r) => E::Or(b(l), b(r)),
        E::Not(x) => E::Not(b(x)),
        E::Neg(x) => E::Neg(b(x)),
        E::IsNull(x, neg) => E::IsNull(b(x), neg),
        E::Cast(x, t) => E::Cast(b(x), t),
        // Refused by `the_row`, or without a row.
        other @ (E::Lit(_) | E::MatchNumber | E::Agg(_) | E::Final(_) | E::Next { .. }) => other,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::eval::{eval, View};
    use super::super::expr::compile_measures;
    use super::super::value::Value;
    use super::*;
    use anduin_types::ColumnType;

    /// A partition of rows (`x` int, `s` string) whose rows from `start` on are a match,
    /// mapped to the variables `vars` (0: A, 1: B) in turn.
    struct Partition {
        rows: Vec<[Value; 2]>,
        start: usize,
        vars: Vec<usize>,
    }

    impl View for Partition {
        fn steps(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
            let start = self.start as u64;
            self.vars
                .iter()
                .enumerate()
                .rev()
                .map(move |(i, v)| (start + i as u64, *v))
        }
        fn cell(&self, row: u64, col: usize) -> Option<&Value> {
            self.rows.get(row as usize)?.get(col)
        }
        fn match_number(&self) -> i64 {
            1
        }
    }

    fn scope_parts() -> (Vec<(String, ColumnType)>, Vec<String>) {
        (
            vec![
                ("x".into(), ColumnType::Int),
                ("s".into(), ColumnType::String),
            ],
            vec!["A".into(), "B".into()],
        )
    }

    fn measure(text: &str) -> Result<Value, String> {
        let (columns, vars) = scope_parts();
        let scope = Scope::new(&columns, &vars);
        let m = compile_measures(&format!("{text} AS m"), &scope).map_err(|e| e.to_string())?;
        // Row 0 is before the match; rows 1 to 4 are A B B A.
        let row = |x: i64, s: &str| [Value::Int(x), Value::Str(s.into())];
        let p = Partition {
            rows: vec![
                row(1, "p"),
                row(10, "q"),
                row(20, "r"),
                row(30, "s"),
                row(40, "t"),
            ],
            start: 1,
            vars: vec![0, 1, 1, 0],
        };
        eval(&m[0].1.e, &p, &[Arc::from("A"), Arc::from("B")]).map_err(|e| e.message().to_string())
    }

    #[test]
    fn a_navigation_evaluates_its_argument_at_the_row_it_names() {
        let int = |i: i64| Ok(Value::Int(i));
        let str = |s: &str| Ok(Value::Str(s.into()));
        // B's last row is x = 30, the one before it 20; the match's second row is 20.
        assert_eq!(measure("LAST(B.x * 2 + 1)"), int(61));
        assert_eq!(measure("LAST(B.x + 1, 1)"), int(21));
        assert_eq!(measure("FIRST(x - 1, 1)"), int(19));
        assert_eq!(measure("FIRST(A.x + A.x, 1)"), int(80));
        // The row before the match's last (40) is 30; four before it is before the match.
        assert_eq!(measure("PREV(x * 10)"), int(300));
        assert_eq!(measure("PREV(x * 10, 4)"), int(10));
        assert_eq!(measure("PREV(x * 10, 5)"), Ok(Value::Null));
        assert_eq!(measure("PREV(LAST(B.x + 1), 2)"), int(11));
        // DataFusion's functions inside, and around.
        assert_eq!(measure("LAST(abs(A.x - 100))"), int(60));
        assert_eq!(measure("abs(LAST(B.x - 100, 1))"), int(80));
        assert_eq!(measure("FIRST(lower(CLASSIFIER()), 1)"), str("b"));
        assert_eq!(measure("PREV(CLASSIFIER() || s)"), str("Bs"));
        assert_eq!(
            measure("LAST(CASE WHEN B.x > 25 THEN 'big' ELSE B.s END, 1)"),
            str("r")
        );
        assert_eq!(
            measure("LAST(CAST(A.x AS DOUBLE) / 3, 1)"),
            Ok(Value::Float(10.0 / 3.0))
        );
        // Beyond the rows mapped: NULL, as for a column.
        assert_eq!(measure("LAST(B.x + 1, 2)"), Ok(Value::Null));
        // The old forms are unchanged.
        assert_eq!(measure("LAST(B.x, 1) + FIRST(x) + PREV(x, 2)"), int(50));
    }

    #[test]
    fn an_argument_that_is_not_evaluated_at_one_row_is_refused_naming_the_call() {
        let refused = |text: &str, wanted: &str| {
            let message = measure(text).expect_err(text);
            assert!(message.contains(wanted), "{text}: {message}");
        };
        refused("LAST(1)", "the argument of LAST in `LAST(1)` reads no row");
        refused("LAST(A.x + B.x)", "reads more than one row");
        refused("FIRST(A.x + x)", "reads more than one row");
        refused(
            "PREV(x + PREV(x))",
            "the argument of PREV in `PREV(x + PREV(x))`",
        );
        refused("LAST(PREV(x))", "LAST around a navigation is not supported");
        refused("FIRST(LAST(A.x, 1) + 1)", "FIRST around a navigation");
        refused(
            "PREV(COUNT(A.*))",
            "an aggregate inside the argument of PREV",
        );
        refused("PREV(MATCH_NUMBER())", "reads no row");
        // Where: the argument, in the measure's text.
        let (columns, vars) = scope_parts();
        let e = compile_measures(
            "x AS a,\n  LAST(A.x + B.x) AS b",
            &Scope::new(&columns, &vars),
        )
        .expect_err("two rows");
        assert_eq!((e.line, e.col), (2, 8));
    }
}
