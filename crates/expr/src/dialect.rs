//! The dialect expressions are parsed in: sqlparser's generic dialect, unchanged, with the
//! parser's reading of each place of the text counted and bounded
//! ([`anduin_spec::rereading`]), so that no text makes it backtrack for hours.

use std::any::TypeId;

use anduin_spec::rereading::Rereading;
use sqlparser::ast::Expr;
use sqlparser::dialect::{Dialect, GenericDialect};
use sqlparser::parser::{Parser, ParserError};

/// [`GenericDialect`], counting the readings of one parse: make one per parser.
#[derive(Debug, Default)]
pub(crate) struct ExprDialect {
    generic: GenericDialect,
    /// How often the parser started an operand at each place.
    pub rereading: Rereading,
}

/// Forwards methods that take nothing and say whether a syntax is supported.
macro_rules! forward {
    ($($name:ident),* $(,)?) => {
        $(fn $name(&self) -> bool {
            self.generic.$name()
        })*
    };
}

impl Dialect for ExprDialect {
    /// The generic dialect's: what sqlparser checks with `dialect_of!(… is GenericDialect)` holds
    /// for this one.
    fn dialect(&self) -> TypeId {
        self.generic.dialect()
    }

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        // The generic dialect parses no prefix of its own.
        self.rereading.read(parser)
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        self.generic.is_delimited_identifier_start(ch)
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        self.generic.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        self.generic.is_identifier_part(ch)
    }

    // Every other method `GenericDialect` defines in sqlparser 0.62 (the rest are the trait's
    // defaults, the same for both). Check the list when sqlparser is upgraded: from 0.64 on,
    // sqlparser remembers the failures this dialect counts, and the generic dialect will do.
    forward! {
        supports_unicode_string_literal, supports_partition_by_after_order_by,
        supports_array_join_syntax, supports_group_by_expr, supports_group_by_with_modifier,
        supports_left_associative_joins_without_parens, supports_connect_by,
        supports_match_recognize, supports_pipe_operator, supports_start_transaction_modifier,
        supports_window_function_null_treatment_arg, supports_dictionary_syntax,
        supports_window_clause_named_window_reference, supports_parenthesized_set_variables,
        supports_select_wildcard_except, support_map_literal_syntax, allow_extract_custom,
        allow_extract_single_quotes, supports_extract_comma_syntax,
        supports_create_view_comment_syntax, supports_parens_around_table_factor,
        supports_values_as_table_factor, supports_create_index_with_clause,
        supports_explain_with_utility_options, supports_limit_comma, supports_update_order_by,
        supports_from_first_select, supports_projection_trailing_commas,
        supports_asc_desc_in_column_definition, supports_try_convert,
        supports_bitwise_shift_operators, supports_comment_on, supports_load_extension,
        supports_named_fn_args_with_assignment_operator, supports_struct_literal,
        supports_empty_projections, supports_nested_comments, supports_multiline_comment_hints,
        supports_user_host_grantee, supports_string_escape_constant,
        supports_array_typedef_with_brackets, supports_match_against, supports_set_names,
        supports_comma_separated_set_assignments, supports_filter_during_aggregation,
        supports_select_wildcard_exclude, supports_data_type_signed_suffix,
        supports_interval_options, supports_quote_delimited_string,
        supports_select_wildcard_replace, supports_select_wildcard_ilike,
        supports_select_wildcard_rename, supports_optimize_table, supports_install,
        supports_detach, supports_prewhere, supports_with_fill, supports_limit_by,
        supports_interpolate, supports_settings, supports_select_format,
        supports_comment_optimizer_hint, supports_constraint_keyword_without_name,
        supports_key_column_option, supports_comma_separated_trim, supports_cte_without_as,
        supports_select_item_multi_column_alias, supports_xml_expressions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::parser::Parser;

    /// Expressions of many kinds of syntax: each parses to the same tree (or the same error) in
    /// both dialects.
    const SYNTAX: &[&str] = &[
        "a + b * 2 - -c / 4 % 3",
        "a || 'x' LIKE 'a%' AND b NOT ILIKE 'c' OR NOT d IS NULL",
        "x IN (1, 2, 3) AND y NOT BETWEEN 1 AND 3 AND z IN (SELECT 1)",
        "CASE WHEN a > 1 THEN 'hi' WHEN a < 0 THEN NULL ELSE 'lo' END",
        "CASE a WHEN 1 THEN 2 END",
        "CAST(a AS BIGINT) + TRY_CAST(b AS DOUBLE) + a::INT",
        "EXTRACT(year FROM ts) + date_part('hour', ts)",
        "SUBSTRING(name FROM 2 FOR 3) || substr(name, 1, 2) || TRIM(BOTH 'x' FROM name)",
        "POSITION('a' IN name) + ceil(v) + FLOOR(v TO DAY)",
        "overlay(name, 'a', 1) = OVERLAY(name PLACING 'a' FROM 1 FOR 2)",
        "TIMESTAMP '2023-11-14 22:13:20' + INTERVAL '1' SECOND",
        "DATE '2020-01-01' < ts",
        "COUNT(DISTINCT x) FILTER (WHERE x > 0)",
        "SUM(x) OVER (PARTITION BY k ORDER BY ts)",
        "s.value + \"quoted col\" + `back` + #h + @at",
        "ARRAY[1, 2][1] + {'a': 1}['a']",
        "STRUCT(1 AS a).a + MAP {'k': 1}['k']",
        "e'esc\\n' || U&'\\0041' || X'41' || N'nat'",
        "a << 2 | b >> 1 & c ^ d",
        "f(a => 1, b := 2)",
        "current_timestamp() > ts AND CURRENT_DATE = d",
        "x NOT IN (1) AND x IS NOT DISTINCT FROM y AND x SIMILAR TO 'a'",
        "CAST( CAST( x",
        "NOT ( NOT ( x",
        "CASE ( CASE ( x",
        "1 +",
        "value < < 3",
    ];

    #[test]
    fn it_parses_as_the_generic_dialect_does() {
        for sql in SYNTAX {
            let parse = |d: &dyn Dialect| {
                Parser::new(d)
                    .try_with_sql(sql)
                    .and_then(|mut p| p.parse_expr())
                    .map(|e| format!("{e:?}"))
            };
            let ours = ExprDialect::default();
            assert_eq!(parse(&ours), parse(&GenericDialect {}), "{sql}");
            assert!(ours.rereading.exceeded().is_none(), "{sql}");
        }
    }
}
