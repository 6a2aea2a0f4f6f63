//! `CREATE FUNCTION name([arg] TYPE, …) RETURNS TYPE LANGUAGE wasm AS 'module.wasm'`: a
//! user-defined scalar function, the export `name` of a WebAssembly module; or
//! `… LANGUAGE javascript AS $$ body $$`, a function in JavaScript whose arguments are named.
//! `CREATE AGGREGATE name([arg] TYPE, …) RETURNS TYPE LANGUAGE javascript AS $$ module $$`
//! (RisingWave's statement; `CREATE AGGREGATE FUNCTION`, BigQuery's words, is the same): a
//! user-defined aggregate, whose body exports `create_state`, `accumulate` and the rest.
//! `CREATE FUNCTION name(col TYPE, …) RETURNS TABLE (col TYPE, …) LANGUAGE … AS …`: an
//! operator with keyed state (Flink's process table function), called in FROM
//! (`process.rs`), whose body (or module) exports `process` and the rest.
//!
//! sqlparser parses `CREATE FUNCTION` only for some dialects (PostgreSQL's, the generic
//! one), and its parser for them is private, and it has no `CREATE AGGREGATE`; anduin's
//! dialect parses both here, into sqlparser's own `CreateFunction` (an aggregate marked by
//! [`AGGREGATE`] among its options, which the statement's text cannot set), which
//! [`declare`] lowers to a [`FunctionDef`].

use anduin_types::Diagnostic;
use sqlparser::ast::{
    CreateFunction, CreateFunctionBody, DataType, Expr, FunctionReturnType, Ident, ObjectName,
    ObjectNamePart, OperateFunctionArg, Spanned, SqlOption, Statement, Value,
};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};

use super::source_text::pos;
use crate::ast::FunctionDef;
use crate::Text;

/// The option that marks a parsed `CREATE AGGREGATE`: anduin's parser sets no other option,
/// and the statement's text cannot set one.
const AGGREGATE: &str = "\u{0}anduin aggregate";

/// Parses the rest of a `CREATE FUNCTION` statement (its two keywords already read), or of a
/// `CREATE AGGREGATE [FUNCTION]` one (`aggregate`).
pub(crate) fn parse_create_function(
    p: &mut Parser,
    aggregate: bool,
) -> Result<Statement, ParserError> {
    let name = p.parse_object_name(false)?;
    if p.peek_keyword(Keyword::AS) {
        // Flink's `CREATE FUNCTION name AS 'com.example.Class'` (Nexmark q14's count_char).
        let at = p.peek_token().span.start;
        return Err(ParserError::ParserError(format!(
            "`CREATE FUNCTION {name} AS …` (a function of a Java class) is not supported: declare its arguments and result, in JavaScript or WebAssembly: CREATE FUNCTION {name}(s VARCHAR) RETURNS BIGINT LANGUAGE javascript AS $$ … $$ (or LANGUAGE wasm AS 'module.wasm'){at}"
        )));
    }
    p.expect_token(&sqlparser::tokenizer::Token::LParen)?;
    let mut args = Vec::new();
    if !p.consume_token(&sqlparser::tokenizer::Token::RParen) {
        args = p.parse_comma_separated(parse_arg)?;
        p.expect_token(&sqlparser::tokenizer::Token::RParen)?;
    }
    p.expect_keyword(Keyword::RETURNS)?;
    let returns = p.parse_data_type()?;
    let mut language = None;
    let mut body = None;
    loop {
        if p.parse_keyword(Keyword::LANGUAGE) {
            language = Some(p.parse_identifier()?);
        } else if p.parse_keyword(Keyword::AS) {
            body = Some(Expr::Value(p.parse_value()?));
        } else {
            break;
        }
    }
    Ok(Statement::CreateFunction(CreateFunction {
        or_alter: false,
        or_replace: false,
        temporary: false,
        if_not_exists: false,
        name,
        args: Some(args),
        return_type: Some(FunctionReturnType::DataType(returns)),
        function_body: body.map(|body| CreateFunctionBody::AsBeforeOptions {
            body,
            link_symbol: None,
        }),
        behavior: None,
        called_on_null: None,
        parallel: None,
        security: None,
        set_params: Vec::new(),
        using: None,
        language,
        determinism_specifier: None,
        options: aggregate.then(|| vec![SqlOption::Ident(Ident::new(AGGREGATE))]),
        remote_connection: None,
    }))
}

/// `[name] TYPE`.
fn parse_arg(p: &mut Parser) -> Result<OperateFunctionArg, ParserError> {
    let named = p.maybe_parse(|p| {
        let name = p.parse_identifier()?;
        let ty = p.parse_data_type()?;
        Ok((name, ty))
    })?;
    let (name, data_type) = match named {
        Some((n, t)) => (Some(n), t),
        None => (None, p.parse_data_type()?),
    };
    Ok(OperateFunctionArg {
        mode: None,
        name,
        data_type,
        default_expr: None,
    })
}

/// The type name a function's argument or result of type `t` is declared with, if
/// functions may take it.
fn function_type(t: &DataType) -> Option<&'static str> {
    use DataType::*;
    Some(match t {
        Int(_) | Integer(_) | BigInt(_) | SmallInt(_) | TinyInt(_) | Int64 | Int32 => "BIGINT",
        Double(_) | DoublePrecision | Float(_) | Real | Float64 | Float32 => "DOUBLE",
        Boolean | Bool => "BOOLEAN",
        Varchar(_) | String(_) | Text | Char(_) | CharacterVarying(_) => "VARCHAR",
        _ => return None,
    })
}

/// The function's name: one identifier, quoted or not, without its quotes. Quotes let a
/// name be a keyword or hold any character; they do not make it case-sensitive, since
/// function names are the same in any case (as in Flink: `"Bar"(x)`, `bar(x)` and `BAR(x)`
/// call one function). A wasm function's name is also its module's export, as written.
fn function_name(
    name: &ObjectName,
    at: anduin_types::Pos,
    statement: &str,
) -> Result<String, Diagnostic> {
    match name.0.as_slice() {
        [ObjectNamePart::Identifier(id)] if !id.value.trim().is_empty() => Ok(id.value.clone()),
        [ObjectNamePart::Identifier(_)] => Err(Diagnostic::error(
            at,
            format!("a function needs a name: `{statement} name(…)`"),
        )),
        _ => Err(Diagnostic::error(
            at,
            format!("function name `{name}`: a function's name is one identifier, without a schema or catalog: `{statement} name(…)`"),
        )),
    }
}

/// Lowers a parsed `CREATE FUNCTION`.
pub(crate) fn declare(cf: &CreateFunction) -> Result<FunctionDef, Diagnostic> {
    let at = pos(cf.name.span().start);
    let aggregate = cf
        .options
        .iter()
        .flatten()
        .any(|o| matches!(o, SqlOption::Ident(id) if id.value == AGGREGATE));
    let statement = if aggregate {
        "CREATE AGGREGATE"
    } else {
        "CREATE FUNCTION"
    };
    let name = function_name(&cf.name, at, statement)?;
    if let Some(what) = super::reserved_function(&name) {
        return Err(Diagnostic::error(
            at,
            format!("function name `{name}` is reserved: it is {what}, which the query reads as its own wherever it is called; give yours another name"),
        ));
    }
    let typed = |t: &DataType, at| {
        function_type(t).map(|n| Text::at(n, at)).ok_or_else(|| {
            Diagnostic::error(
                at,
                format!("function `{name}`: type {t} is not supported for a function yet: use BIGINT, DOUBLE, BOOLEAN or VARCHAR"),
            )
        })
    };
    let mut args = Vec::new();
    let mut arg_names = Vec::new();
    for a in cf.args.iter().flatten() {
        let a_at = a.name.as_ref().map_or(at, |n| pos(n.span.start));
        args.push(typed(&a.data_type, a_at)?);
        arg_names.push(a.name.as_ref().map(|n| Text::at(n.value.clone(), a_at)));
    }
    let mut table = Vec::new();
    let returns = match &cf.return_type {
        Some(FunctionReturnType::DataType(DataType::Table(columns))) => {
            if aggregate {
                return Err(Diagnostic::error(
                    at,
                    format!("aggregate `{name}` returns one value per group, not a table: `RETURNS TYPE` (an operator with keyed state is CREATE FUNCTION … RETURNS TABLE (…))"),
                ));
            }
            for c in columns.iter().flatten() {
                let c_at = pos(c.name.span.start);
                table.push((
                    Text::at(c.name.value.clone(), c_at),
                    typed(&c.data_type, c_at)?,
                ));
            }
            if table.is_empty() {
                return Err(Diagnostic::error(
                    at,
                    format!("function `{name}` returns a table without columns: `RETURNS TABLE (name TYPE, …)`"),
                ));
            }
            Text::at("TABLE", at)
        }
        Some(FunctionReturnType::DataType(t)) => typed(t, at)?,
        _ => {
            return Err(Diagnostic::error(
                at,
                format!("function `{name}` needs `RETURNS type`"),
            ))
        }
    };
    let Some(language) = &cf.language else {
        return Err(Diagnostic::error(
            at,
            if aggregate {
                format!("aggregate `{name}` needs `LANGUAGE javascript AS $$ … $$` or `LANGUAGE wasm AS 'module.wasm'`")
            } else {
                format!("function `{name}` needs `LANGUAGE wasm AS 'module.wasm'`")
            },
        ));
    };
    let lang_at = pos(language.span.start);
    let javascript = match language.value.to_ascii_lowercase().as_str() {
        "wasm" | "webassembly" => false,
        "javascript" | "js" => true,
        other => {
            return Err(Diagnostic::error(
                lang_at,
                format!("function `{name}`: LANGUAGE {other} is not supported: use LANGUAGE wasm AS 'module.wasm' or LANGUAGE javascript AS $$ body $$"),
            ))
        }
    };
    let what = match (javascript, aggregate) {
        (true, _) if !table.is_empty() => "its body, a module exporting `process(state, …)`",
        (true, false) => "its body, e.g. $$ return x + 1 $$",
        (true, true) => "its body, a module exporting `create_state()` and `accumulate(state, …)`",
        (false, _) => "the module's path in quotes",
    };
    let body = match &cf.function_body {
        Some(CreateFunctionBody::AsBeforeOptions { body, .. }) => match body {
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(s) => Text::at(s.clone(), pos(v.span.start)),
                Value::DollarQuotedString(s) => Text::at(s.value.clone(), pos(v.span.start)),
                other => {
                    return Err(Diagnostic::error(
                        pos(v.span.start),
                        format!("function `{name}`: expected {what} after AS, found `{other}`"),
                    ))
                }
            },
            other => {
                return Err(Diagnostic::error(
                    pos(other.span().start),
                    format!("function `{name}`: expected {what} after AS"),
                ))
            }
        },
        _ => {
            return Err(Diagnostic::error(
                at,
                format!("function `{name}` needs `AS …`: {what}"),
            ))
        }
    };
    // An operator's arguments are the columns of its input row, by name.
    if !table.is_empty() {
        if let Some(i) = arg_names.iter().position(Option::is_none) {
            return Err(Diagnostic::error(
                args.get(i).map_or(at, Text::pos),
                format!("function `{name}`: argument {} needs a name: the arguments of a function that returns a table are the columns of its input row it takes, by name (`{name}(price BIGINT, …)`)", i + 1),
            ));
        }
    }
    // An aggregate's functions take their arguments in order, whatever they are called.
    if javascript && !aggregate {
        if let Some(i) = arg_names.iter().position(Option::is_none) {
            return Err(Diagnostic::error(
                args.get(i).map_or(at, Text::pos),
                format!("function `{name}`: argument {} needs a name, which its JavaScript body uses: `{name}(x BIGINT, …)`", i + 1),
            ));
        }
    }
    Ok(FunctionDef {
        name: Text::at(name.clone(), at),
        args,
        arg_names,
        returns,
        language: Text::at(if javascript { "javascript" } else { "wasm" }, lang_at),
        body,
        aggregate,
        table,
        pos: at,
    })
}

#[cfg(test)]
mod tests {
    use crate::parse_sql;

    const TAIL: &str = "CREATE TABLE t (x BIGINT) WITH (connector = 'file', path = 'in.csv');
CREATE TABLE o WITH (connector = 'file', path = 'out.csv');
INSERT INTO o SELECT add_one(x) AS y FROM t;";

    #[test]
    fn create_function_declares_a_wasm_export() {
        let spec = parse_sql(&format!(
            "CREATE FUNCTION add_one(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'udfs/m.wasm';\n{TAIL}"
        ))
        .expect("parses");
        let f = &spec.functions[0];
        assert_eq!(f.name.as_str(), "add_one");
        assert_eq!(f.args[0].as_str(), "BIGINT");
        assert_eq!(f.returns.as_str(), "BIGINT");
        assert_eq!(f.body.as_str(), "udfs/m.wasm");
        assert_eq!((f.body.pos().line, f.body.pos().col), (1, 67));
    }

    #[test]
    fn an_unnamed_argument_and_a_dollar_quoted_path_are_accepted() {
        let spec = parse_sql(&format!(
            "CREATE FUNCTION shout(VARCHAR) RETURNS TEXT AS $$m.wasm$$ LANGUAGE wasm;\n{TAIL}"
        ))
        .expect("parses");
        assert_eq!(spec.functions[0].args[0].as_str(), "VARCHAR");
        assert_eq!(spec.functions[0].returns.as_str(), "VARCHAR");
        assert_eq!(spec.functions[0].body.as_str(), "m.wasm");
    }

    #[test]
    fn javascript_takes_its_body_after_as_and_needs_named_arguments() {
        let spec = parse_sql(&format!(
            "CREATE FUNCTION bucket(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$ return x >> 10 $$;\n{TAIL}"
        ))
        .expect("parses");
        let f = &spec.functions[0];
        assert_eq!(f.language.as_str(), "javascript");
        assert_eq!(f.body.as_str(), " return x >> 10 ");
        assert_eq!(f.arg_names[0].as_ref().map(|n| n.as_str()), Some("x"));
        let d = parse_sql(&format!(
            "CREATE FUNCTION bucket(BIGINT) RETURNS BIGINT LANGUAGE js AS $$ return 1 $$;\n{TAIL}"
        ))
        .expect_err("unnamed");
        assert_eq!(
            d.0[0].message,
            "function `bucket`: argument 1 needs a name, which its JavaScript body uses: `bucket(x BIGINT, …)`"
        );
        let d = parse_sql(&format!(
            "CREATE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE python AS 'f.py';\n{TAIL}"
        ))
        .expect_err("python");
        assert_eq!((d.0[0].pos.line, d.0[0].pos.col), (1, 53));
    }

    #[test]
    fn create_aggregate_declares_an_aggregate_whose_arguments_need_no_names() {
        for head in ["CREATE AGGREGATE", "create aggregate function"] {
            let spec = parse_sql(&format!(
                "{head} wavg(BIGINT, w BIGINT) RETURNS DOUBLE LANGUAGE javascript AS $$\nexport function create_state() {{ return 0 }}\n$$;\n{TAIL}"
            ))
            .expect("parses");
            let f = &spec.functions[0];
            assert!(f.aggregate, "{head}");
            assert_eq!(f.name.as_str(), "wavg");
            assert_eq!(f.args.len(), 2);
            assert_eq!(f.returns.as_str(), "DOUBLE");
            assert!(f.body.as_str().contains("create_state"));
        }
        let spec = parse_sql(&format!(
            "CREATE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$ return x $$;\n{TAIL}"
        ))
        .expect("parses");
        assert!(!spec.functions[0].aggregate);
        let d = parse_sql(&format!(
            "CREATE AGGREGATE s.f(x BIGINT) RETURNS BIGINT LANGUAGE javascript AS $$ $$;\n{TAIL}"
        ))
        .expect_err("qualified");
        assert!(
            d.0[0].message.ends_with("`CREATE AGGREGATE name(…)`"),
            "{}",
            d.0[0].message
        );
        let d = parse_sql(&format!(
            "CREATE AGGREGATE f(x BIGINT) RETURNS BIGINT AS $$ $$;\n{TAIL}"
        ))
        .expect_err("no language");
        assert_eq!(
            d.0[0].message,
            "aggregate `f` needs `LANGUAGE javascript AS $$ … $$` or `LANGUAGE wasm AS 'module.wasm'`"
        );
    }

    #[test]
    fn a_name_the_frontend_reads_as_its_own_is_refused_at_the_name() {
        for (name, what) in [
            ("last", "MATCH_RECOGNIZE's navigation function LAST(…)"),
            ("Tumble", "the window table function TUMBLE(…)"),
            ("match_number", "MATCH_RECOGNIZE's MATCH_NUMBER()"),
        ] {
            let d = parse_sql(&format!(
                "CREATE FUNCTION {name}(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'm.wasm';\n{TAIL}"
            ))
            .expect_err("reserved");
            let e = &d.0[0];
            assert_eq!((e.pos.line, e.pos.col), (1, 17), "{name}");
            assert_eq!(
                e.message,
                format!("function name `{name}` is reserved: it is {what}, which the query reads as its own wherever it is called; give yours another name")
            );
        }
    }

    /// Issue 21, from the hostile probe: `CREATE FUNCTION "Bar"` declared a function named
    /// `"Bar"`, quotes included, which no call could reach.
    #[test]
    fn a_quoted_name_is_the_name_without_its_quotes_and_a_qualified_one_is_refused() {
        let spec = parse_sql(&format!(
            "CREATE FUNCTION \"Bar\"(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'm.wasm';\n{TAIL}"
        ))
        .expect("parses");
        assert_eq!(spec.functions[0].name.as_str(), "Bar");
        let d = parse_sql(&format!(
            "CREATE FUNCTION \"Tumble\"(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'm.wasm';\n{TAIL}"
        ))
        .expect_err("reserved, quoted or not");
        assert!(
            d.0[0]
                .message
                .starts_with("function name `Tumble` is reserved"),
            "{}",
            d.0[0].message
        );
        let d = parse_sql(&format!(
            "CREATE FUNCTION s.f(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'm.wasm';\n{TAIL}"
        ))
        .expect_err("qualified");
        assert_eq!(
            d.0[0].message,
            "function name `s.f`: a function's name is one identifier, without a schema or catalog: `CREATE FUNCTION name(…)`"
        );
    }

    #[test]
    fn a_function_declared_twice_or_of_a_timestamp_is_refused() {
        let d = parse_sql(&format!(
            "CREATE FUNCTION f(BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'm.wasm';\nCREATE FUNCTION f(BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'm.wasm';\n{TAIL}"
        ))
        .expect_err("twice");
        assert_eq!(
            d.0[0].message,
            "function `f` is created twice (first at 1:17)"
        );
        let d = parse_sql(&format!(
            "CREATE FUNCTION g(t TIMESTAMP) RETURNS BIGINT LANGUAGE wasm AS 'm.wasm';\n{TAIL}"
        ))
        .expect_err("timestamp");
        assert!(d.0[0]
            .message
            .contains("type TIMESTAMP is not supported for a function yet"));
    }
}
