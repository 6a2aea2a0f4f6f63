//! A user operator with keyed state called in FROM, as Flink's process table functions are:
//! `FROM first_row(input => TABLE events PARTITION BY sensor)` (or `FROM TABLE(first_row(…))`),
//! where `first_row` is a `CREATE FUNCTION … RETURNS TABLE (…)` of the script. It becomes a
//! `user_operator` over the table's stream, keyed by the `PARTITION BY` columns; its output
//! (the key's columns, then the function's) is a derived table the SELECT reads.
//!
//! The call takes one argument, the table (named, e.g. `input =>`, or not); `PARTITION BY`
//! takes a column or a parenthesised list. What the operator needs of the table's columns is
//! checked where it is bound, at the call's name (the function's columns) and at the
//! `PARTITION BY` (its keys).

use anduin_types::{Diagnostic, Pos};
use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectName, Spanned, TableAlias,
};

use super::derived::{Attr, Derived};
use super::dialect::{ORDER_BY, PARTITION_BY, TABLE_ARGUMENT};
use super::insert::{operator, unsupported, Script};
use super::source_text::pos;
use super::tables::Tables;
use crate::ast::{FunctionDef, Spec};
use crate::Text;

/// The script's function called `name` (any case), if it returns a table.
pub(super) fn table_function<'a>(name: &str, spec: &'a Spec) -> Option<&'a FunctionDef> {
    spec.functions
        .iter()
        .find(|f| !f.table.is_empty() && f.name.as_str().eq_ignore_ascii_case(name))
}

/// Whether `FROM TABLE(expr)` calls a table function of the script rather than a window
/// table function.
pub(super) fn is_call(expr: &Expr, spec: &Spec) -> bool {
    matches!(expr, Expr::Function(f) if table_function(&f.name.to_string(), spec).is_some())
}

/// A table argument: `TABLE name [PARTITION BY k, …]`.
struct TableArg {
    table: ObjectName,
    keys: Vec<(String, Pos)>,
}

fn table_arg(e: &Expr, at: Pos, fname: &str) -> Result<TableArg, Diagnostic> {
    let expected = || {
        Diagnostic::error(
            at,
            format!("`{fname}` takes a table: `{fname}(input => TABLE t PARTITION BY k)`"),
        )
    };
    let Expr::Function(t) = e else {
        return Err(expected());
    };
    if t.name.to_string() != TABLE_ARGUMENT {
        return Err(expected());
    }
    let FunctionArguments::List(list) = &t.args else {
        return Err(expected());
    };
    let mut table = None;
    let mut keys = Vec::new();
    for a in &list.args {
        let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = a else {
            return Err(expected());
        };
        match e {
            Expr::CompoundIdentifier(ids) if table.is_none() => {
                table = Some(ObjectName::from(ids.clone()));
            }
            Expr::Function(clause) if clause.name.to_string() == PARTITION_BY => {
                if let FunctionArguments::List(l) = &clause.args {
                    for k in &l.args {
                        if let FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Identifier(id))) = k
                        {
                            keys.push((id.value.clone(), pos(id.span.start)));
                        }
                    }
                }
            }
            Expr::Function(clause) if clause.name.to_string() == ORDER_BY => {
                return Err(unsupported(
                    pos(clause.span().start),
                    format!("ORDER BY in the table argument of `{fname}` (its rows come in the order they arrive; a function that needs them in event time can hold them in its state until a timer fires)"),
                ));
            }
            _ => return Err(expected()),
        }
    }
    let table = table.ok_or_else(expected)?;
    Ok(TableArg { table, keys })
}

/// Lowers the call of table function `name` with `args` (`alias` its table's alias, if
/// any): its table's stream read, a `user_operator` over it; records the operator's columns
/// and returns its stream's name.
pub(super) fn lower(
    name: &ObjectName,
    args: &[FunctionArg],
    alias: Option<&TableAlias>,
    prefix: &str,
    script: &Script<'_, '_>,
    tables: &mut Tables,
    spec: &mut Spec,
) -> Result<String, Diagnostic> {
    let at = pos(name.span().start);
    let fname = name.to_string();
    let Some(f) = table_function(&fname, spec).cloned() else {
        let known = spec
            .functions
            .iter()
            .find(|f| f.name.as_str().eq_ignore_ascii_case(&fname));
        return Err(Diagnostic::error(
            at,
            match known {
                Some(f) if f.aggregate => format!("`{fname}` is an aggregate, which FROM cannot call: FROM calls a function that RETURNS TABLE (…)"),
                Some(_) => format!("`{fname}` is a scalar function, which FROM cannot call: FROM calls a function that RETURNS TABLE (…)"),
                None => format!("table function `{fname}` is not declared: declare it in this script with CREATE FUNCTION {fname}(column TYPE, …) RETURNS TABLE (column TYPE, …) LANGUAGE javascript AS $$ … $$ (or LANGUAGE wasm AS 'module.wasm')"),
            },
        ));
    };
    let fname = f.name.as_str().to_string();
    let table = match args {
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(e))] => e,
        [FunctionArg::Named {
            arg: FunctionArgExpr::Expr(e),
            ..
        }] => e,
        [] => {
            return Err(Diagnostic::error(
                at,
                format!("`{fname}` needs its table: `{fname}(input => TABLE t PARTITION BY k)`"),
            ))
        }
        [_, second, ..] => {
            return Err(unsupported(
                pos(second.span().start),
                format!("a second argument of `{fname}` (a user operator takes its table only; a constant can be written in its body)"),
            ))
        }
        [other] => {
            return Err(Diagnostic::error(
                pos(other.span().start),
                format!("`{fname}` takes a table: `{fname}(input => TABLE t PARTITION BY k)`"),
            ))
        }
    };
    let arg = table_arg(table, pos(table.span().start), &fname)?;
    let input = super::views::read(&arg.table, script, tables, spec)?;
    let base = format!(
        "{prefix}_{}",
        alias.map_or(fname.as_str(), |a| a.name.value.as_str())
    );
    let taken = |n: &str| spec.operators.iter().any(|o| o.name.as_str() == n);
    let op_name = std::iter::once(base.clone())
        .chain((2..).map(|k| format!("{base}{k}")))
        .find(|n| !taken(n))
        .expect("some name is free");
    let mut params = vec![("function", Text::at(fname.clone(), at))];
    if let Some((_, key_at)) = arg.keys.first() {
        let keys: Vec<String> = arg
            .keys
            .iter()
            .map(|(k, _)| super::insert::quoted(k))
            .collect();
        params.push(("keys", Text::at(keys.join(", "), *key_at)));
    }
    spec.operators.push(operator(
        op_name.clone(),
        "user_operator",
        at,
        &input,
        params,
    ));
    let mut columns: Vec<(String, Attr)> = arg
        .keys
        .iter()
        .map(|(k, _)| (k.clone(), Attr::Plain))
        .collect();
    columns.extend(
        f.table
            .iter()
            .map(|(c, _)| (c.as_str().to_string(), Attr::Plain)),
    );
    tables.derive(Derived {
        stream: op_name.clone(),
        columns,
    });
    Ok(op_name)
}

#[cfg(test)]
mod tests {
    use crate::parse_sql;

    const FIRST: &str = "CREATE FUNCTION first_row(ts BIGINT, v BIGINT) RETURNS TABLE (ts BIGINT, v BIGINT) LANGUAGE javascript AS $$ export function process(s) { return s } $$;\n";
    const TABLES: &str = "CREATE TABLE t (ts TIMESTAMP, k BIGINT, j BIGINT, v BIGINT) WITH (connector = 'file', path = 'in.csv', event_time = 'ts');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv');
";

    fn lowered(from: &str) -> crate::Spec {
        parse_sql(&format!(
            "{FIRST}{TABLES}INSERT INTO o SELECT * FROM {from};"
        ))
        .unwrap_or_else(|d| panic!("{from}: {d:?}"))
    }

    fn refused(script: &str) -> (u32, u32, String) {
        let d = parse_sql(script).expect_err("refused");
        let e = &d.0[0];
        (e.pos.line, e.pos.col, e.message.clone())
    }

    #[test]
    fn a_function_that_returns_a_table_declares_its_columns() {
        let spec = lowered("first_row(input => TABLE t PARTITION BY k)");
        let f = &spec.functions[0];
        let table: Vec<(&str, &str)> = f
            .table
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        assert_eq!(table, [("ts", "BIGINT"), ("v", "BIGINT")]);
        assert_eq!(f.returns.as_str(), "TABLE");
    }

    #[test]
    fn a_call_in_from_becomes_a_user_operator_keyed_by_its_partition() {
        for (from, keys) in [
            ("first_row(input => TABLE t PARTITION BY k)", Some("\"k\"")),
            (
                "first_row(TABLE t PARTITION BY (k, j)) AS f",
                Some("\"k\", \"j\""),
            ),
            (
                "TABLE(first_row(input => TABLE t PARTITION BY k))",
                Some("\"k\""),
            ),
            ("first_row(TABLE t)", None),
        ] {
            let spec = lowered(from);
            let op = spec
                .operators
                .iter()
                .find(|o| o.kind.as_str() == "user_operator")
                .unwrap_or_else(|| panic!("{from}: no user operator"));
            assert_eq!(op.inputs[0].as_str(), "t", "{from}");
            assert_eq!(
                op.param("function")
                    .map(|p| p.value.as_text().to_string())
                    .as_deref(),
                Some("first_row")
            );
            assert_eq!(
                op.param("keys")
                    .map(|p| p.value.as_text().to_string())
                    .as_deref(),
                keys,
                "{from}"
            );
            // `*` reads the key's columns, then the function's.
            let map = spec
                .operators
                .iter()
                .find(|o| o.kind.as_str() == "map")
                .expect("a map");
            let columns = map
                .param("columns")
                .map(|p| p.value.as_text().to_string())
                .unwrap_or_default();
            assert_eq!(columns, "*", "{from}");
        }
        let spec = lowered("first_row(input => TABLE t PARTITION BY k)");
        let op = spec
            .operators
            .iter()
            .find(|o| o.kind.as_str() == "user_operator")
            .expect("one");
        let at = op.param("keys").expect("keys").value.pos();
        assert_eq!(
            (at.line, at.col),
            (4, 69),
            "the keys are placed at the first key"
        );
    }

    #[test]
    fn what_a_call_cannot_hold_is_refused_at_its_place() {
        let call = |from: &str| {
            refused(&format!(
                "{FIRST}{TABLES}INSERT INTO o SELECT * FROM {from};"
            ))
        };
        assert_eq!(
            call("first_row(input => TABLE t PARTITION BY k ORDER BY ts)"),
            (4, 71, "ORDER BY in the table argument of `first_row` (its rows come in the order they arrive; a function that needs them in event time can hold them in its state until a timer fires) is not supported yet".into())
        );
        let (line, col, m) = call("first_row(TABLE t PARTITION BY k, 3)");
        assert_eq!((line, col), (4, 63));
        assert!(m.starts_with("a second argument of `first_row`"), "{m}");
        let (_, _, m) = call("nothing(TABLE t)");
        assert!(
            m.starts_with("table function `nothing` is not declared"),
            "{m}"
        );
        let (_, _, m) = call("first_row(42)");
        assert_eq!(
            m,
            "`first_row` takes a table: `first_row(input => TABLE t PARTITION BY k)`"
        );
        let (_, _, m) = refused(&format!(
            "CREATE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$ return x $$;\n{TABLES}INSERT INTO o SELECT * FROM f(TABLE t);"
        ));
        assert!(
            m.starts_with("`f` is a scalar function, which FROM cannot call"),
            "{m}"
        );
        let (_, _, m) =
            call("TABLE(TUMBLE(TABLE t PARTITION BY k, DESCRIPTOR(ts), INTERVAL '1' SECOND))");
        assert!(
            m.starts_with("PARTITION BY or ORDER BY in the table argument of TUMBLE"),
            "{m}"
        );
    }

    #[test]
    fn a_table_function_names_its_arguments_and_an_aggregate_returns_no_table() {
        let (line, col, m) = refused(&format!(
            "CREATE FUNCTION f(BIGINT) RETURNS TABLE (v BIGINT) LANGUAGE wasm AS 'm.wasm';\n{TABLES}INSERT INTO o SELECT * FROM f(TABLE t);"
        ));
        assert_eq!((line, col), (1, 17));
        assert!(m.starts_with("function `f`: argument 1 needs a name: the arguments of a function that returns a table are the columns of its input row"), "{m}");
        let (_, _, m) = refused(&format!(
            "CREATE AGGREGATE f(x BIGINT) RETURNS TABLE (v BIGINT) LANGUAGE javascript AS $$ $$;\n{TABLES}INSERT INTO o SELECT * FROM t;"
        ));
        assert!(
            m.starts_with("aggregate `f` returns one value per group, not a table"),
            "{m}"
        );
        let (_, _, m) = refused(&format!(
            "CREATE FUNCTION f(x BIGINT) RETURNS TABLE (v TIMESTAMP) LANGUAGE javascript AS $$ $$;\n{TABLES}INSERT INTO o SELECT * FROM t;"
        ));
        assert!(
            m.contains("type TIMESTAMP is not supported for a function yet"),
            "{m}"
        );
    }

    /// A view may call a table function declared before it (its query is checked when it
    /// is declared).
    #[test]
    fn a_view_calls_a_table_function_declared_before_it() {
        let spec = parse_sql(&format!(
            "{FIRST}{TABLES}CREATE VIEW v AS SELECT * FROM first_row(input => TABLE t PARTITION BY k);\nINSERT INTO o SELECT k, v FROM v;"
        ))
        .unwrap_or_else(|d| panic!("{d:?}"));
        assert!(spec
            .operators
            .iter()
            .any(|o| o.kind.as_str() == "user_operator"));
    }
}
