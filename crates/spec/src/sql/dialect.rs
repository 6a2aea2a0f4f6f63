//! anduin's SQL dialect: sqlparser's generic dialect, plus Flink's `TABLE name` as an argument
//! of a window table function (`TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '1' SECOND)`)
//! or of a user operator (`first_row(input => TABLE events PARTITION BY sensor)`),
//! and `CREATE FUNCTION … LANGUAGE … AS '…'` and `CREATE AGGREGATE …` (parsed by
//! `functions.rs`), counting how often the parser reads each place of the text
//! ([`crate::rereading`]).

use sqlparser::ast::{
    ColumnOption, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList,
    FunctionArguments, GeneratedAs, GeneratedExpressionMode, Ident, ObjectName, Statement,
};
use sqlparser::dialect::{Dialect, GenericDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use crate::rereading::Rereading;

/// The name under which `TABLE name` appears in the syntax tree: a call `TABLE(name)`.
pub(crate) const TABLE_ARGUMENT: &str = "TABLE";

/// The name of a table argument's `PARTITION BY k, …` in the syntax tree (a call of the keys
/// inside the `TABLE(…)` call).
pub(crate) const PARTITION_BY: &str = "PARTITION BY";

/// The name of a table argument's `ORDER BY …` in the syntax tree (a call without arguments,
/// placed at `ORDER`, which the frontend refuses).
pub(crate) const ORDER_BY: &str = "ORDER BY";

/// sqlparser's generic dialect with Flink's table arguments. It counts the readings of one
/// parse: make one per parser, and check [`Rereading::exceeded`] after parsing.
#[derive(Debug, Default)]
pub(crate) struct AnduinDialect {
    generic: GenericDialect,
    /// How often the parser started an operand at each place.
    pub rereading: Rereading,
}

impl Dialect for AnduinDialect {
    fn is_identifier_start(&self, ch: char) -> bool {
        self.generic.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        self.generic.is_identifier_part(ch)
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        ch == '"' || ch == '`'
    }

    fn supports_filter_during_aggregation(&self) -> bool {
        true
    }

    fn supports_match_recognize(&self) -> bool {
        true
    }

    fn supports_group_by_expr(&self) -> bool {
        true
    }

    /// `JOIN side FOR SYSTEM_TIME AS OF s.ts`: a lookup join (`temporal.rs`).
    fn supports_table_versioning(&self) -> bool {
        true
    }

    fn parse_statement(&self, parser: &mut Parser) -> Option<Result<Statement, ParserError>> {
        if let Some(set) = super::settings::parse_quoted_set(parser) {
            return Some(set);
        }
        if parser.parse_keywords(&[Keyword::CREATE, Keyword::FUNCTION]) {
            return Some(super::functions::parse_create_function(parser, false));
        }
        if parser.parse_keywords(&[Keyword::CREATE, Keyword::AGGREGATE]) {
            // RisingWave's `CREATE AGGREGATE`, or BigQuery's `CREATE AGGREGATE FUNCTION`.
            let _ = parser.parse_keyword(Keyword::FUNCTION);
            return Some(super::functions::parse_create_function(parser, true));
        }
        None
    }

    /// Flink's computed column `p_time AS PROCTIME()`: sqlparser reads the `AS` as the
    /// column's type (`DataType::Custom`), then asks here for its options; the expression
    /// after it becomes a generated column's (`tables.rs` takes it).
    fn parse_column_option(
        &self,
        parser: &mut Parser,
    ) -> Result<Option<Result<Option<ColumnOption>, ParserError>>, ParserError> {
        parser.prev_token();
        let after_as =
            matches!(&parser.peek_token_ref().token, Token::Word(w) if w.keyword == Keyword::AS);
        parser.next_token();
        let ends = matches!(
            parser.peek_token_ref().token,
            Token::Comma | Token::RParen | Token::EOF
        );
        if !after_as || ends {
            return Ok(None);
        }
        Ok(Some(parser.parse_expr().map(|expr| {
            Some(ColumnOption::Generated {
                generated_as: GeneratedAs::Always,
                sequence_options: None,
                generation_expr: Some(expr),
                generation_expr_mode: Some(GeneratedExpressionMode::Virtual),
                generated_keyword: false,
            })
        })))
    }

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        if let Some(stopped) = self.rereading.read(parser) {
            return Some(stopped);
        }
        if !parser.parse_keyword(Keyword::TABLE) {
            return None;
        }
        Some(parse_table_argument(parser))
    }
}

/// The rest of `TABLE name [PARTITION BY k | PARTITION BY (k, …)] [ORDER BY …]` (Flink's
/// table argument of a table function), as a call `TABLE(name[, PARTITION BY(k, …)][,
/// ORDER BY(…)])`: the two clauses are calls named [`PARTITION_BY`] and [`ORDER_BY`], placed
/// at their first word, for the frontend to take or refuse.
fn parse_table_argument(parser: &mut Parser) -> Result<Expr, ParserError> {
    let name = parser.parse_object_name(false)?;
    let call = |name: Ident, args: Vec<Expr>| {
        Expr::Function(Function {
            name: ObjectName::from(vec![name]),
            uses_odbc_syntax: false,
            parameters: FunctionArguments::None,
            args: FunctionArguments::List(FunctionArgumentList {
                duplicate_treatment: None,
                args: args
                    .into_iter()
                    .map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e)))
                    .collect(),
                clauses: vec![],
            }),
            filter: None,
            null_treatment: None,
            over: None,
            within_group: vec![],
        })
    };
    let mut args = vec![Expr::CompoundIdentifier(
        name.0
            .iter()
            .filter_map(|p| p.as_ident().cloned())
            .collect(),
    )];
    let at = parser.peek_token().span;
    if parser.parse_keywords(&[Keyword::PARTITION, Keyword::BY]) {
        let keys = if parser.consume_token(&Token::LParen) {
            let keys = parser.parse_comma_separated(|p| p.parse_identifier())?;
            parser.expect_token(&Token::RParen)?;
            keys
        } else {
            vec![parser.parse_identifier()?]
        };
        args.push(call(
            Ident::with_span(at, PARTITION_BY),
            keys.into_iter().map(Expr::Identifier).collect(),
        ));
    }
    let at = parser.peek_token().span;
    if parser.parse_keywords(&[Keyword::ORDER, Keyword::BY]) {
        let _ = parser.parse_comma_separated(Parser::parse_order_by_expr)?;
        args.push(call(Ident::with_span(at, ORDER_BY), Vec::new()));
    }
    Ok(call(Ident::new(TABLE_ARGUMENT), args))
}
