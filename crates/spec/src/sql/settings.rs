//! Flink's `SET 'key' = 'value';` before the query: the settings a script may give its
//! operators. One is known, `table.exec.state.ttl` (the state time-to-live of every updating
//! operator: the regular join, the aggregate of a GROUP BY without a window, the OVER window,
//! top-N and deduplication), given to each as `param state_ttl` unless it sets its own. A
//! `SET` holds for the whole script and must come before its first `INSERT`; it wins over
//! `anduin run --state-ttl`. Another key is refused, naming it.
//!
//! ```sql
//! SET 'table.exec.state.ttl' = '1 h';
//! ```

use anduin_types::{duration_ms, Diagnostic, Pos};
use sqlparser::ast::{Expr, Ident, ObjectName, Set, Statement, Value};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::source_text::pos;
use crate::ast::{Param, Spec, Value as ParamValue};
use crate::Text;

/// The key of the state time-to-live.
const STATE_TTL_KEY: &str = "table.exec.state.ttl";

/// The operator types a state time-to-live applies to.
const UPDATING_KINDS: [&str; 4] = ["regular_join", "aggregate", "over", "top_n"];

/// Parses Flink's `SET 'key' = 'value'` (a quoted key, which sqlparser's `SET` does not
/// take); `None` when the statement is not one.
pub(crate) fn parse_quoted_set(parser: &mut Parser) -> Option<Result<Statement, ParserError>> {
    let [set, key] = parser.peek_tokens_with_location::<2>();
    let is_set =
        matches!(&set.token, sqlparser::tokenizer::Token::Word(w) if w.keyword == Keyword::SET);
    let Token::SingleQuotedString(name) = key.token else {
        return None;
    };
    if !is_set {
        return None;
    }
    let _ = parser.next_token();
    let _ = parser.next_token();
    Some((|| {
        parser.expect_token(&Token::Eq)?;
        let at = parser.peek_token().span;
        let value = parser.parse_literal_string()?;
        Ok(Statement::Set(Set::SingleAssignment {
            scope: None,
            hivevar: false,
            variable: ObjectName::from(vec![Ident::with_quote_and_span('\'', key.span, name)]),
            values: vec![Expr::Value(Value::SingleQuotedString(value).with_span(at))],
        }))
    })())
}

/// The settings of a script's `SET` statements.
#[derive(Debug, Default)]
pub(crate) struct Settings {
    /// The state time-to-live, as a `state_ttl` param's value, and where it was set.
    state_ttl: Option<(String, Pos)>,
}

impl Settings {
    /// Takes `set` (a statement before any `INSERT` if `before_inserts`).
    pub(crate) fn take(&mut self, set: &Set, before_inserts: bool) -> Result<(), Diagnostic> {
        let Set::SingleAssignment {
            variable, values, ..
        } = set
        else {
            return Err(Diagnostic::error(
                Pos::new(1, 1),
                format!(
                    "`{set}` is not supported: a script sets `SET '{STATE_TTL_KEY}' = '…'` only"
                ),
            ));
        };
        let key_at = variable
            .0
            .first()
            .and_then(|p| p.as_ident())
            .map_or(Pos::new(1, 1), |i| pos(i.span.start));
        let key = variable.to_string();
        let key = key.trim_matches('\'');
        if key != STATE_TTL_KEY {
            return Err(Diagnostic::error(
                key_at,
                format!("`SET '{key}'` is not supported: the one setting a script can make is `SET '{STATE_TTL_KEY}' = '1 h'` (the state time-to-live, also `anduin run --state-ttl`)"),
            ));
        }
        if !before_inserts {
            return Err(Diagnostic::error(
                key_at,
                format!("`SET '{STATE_TTL_KEY}'` must come before the first INSERT: it holds for the whole script"),
            ));
        }
        let (text, at) = match values.as_slice() {
            [Expr::Value(v)] => match &v.value {
                Value::SingleQuotedString(s) => (s.clone(), pos(v.span.start)),
                _ => (String::new(), pos(v.span.start)),
            },
            _ => (String::new(), key_at),
        };
        let ms = if text.trim() == "0" {
            Ok(0)
        } else {
            duration_ms(&text)
        };
        let ms = ms.map_err(|e| {
            Diagnostic::error(
                at,
                format!("`SET '{STATE_TTL_KEY}'` takes a duration such as '1 h', '30 min' or '0' (none): {e}"),
            )
        })?;
        self.state_ttl = Some((format!("{ms}ms"), at));
        Ok(())
    }

    /// Gives the settings to the operators of `spec` that take them and set none.
    pub(crate) fn apply(&self, spec: &mut Spec) {
        let Some((ttl, at)) = &self.state_ttl else {
            return;
        };
        for op in &mut spec.operators {
            if UPDATING_KINDS.contains(&op.kind.as_str()) && op.param("state_ttl").is_none() {
                op.params.push(Param {
                    name: Text::unplaced("state_ttl"),
                    value: ParamValue::String(Text::at(ttl.as_str(), *at)),
                });
            }
        }
    }
}
