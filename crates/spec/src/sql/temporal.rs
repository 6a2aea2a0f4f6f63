//! `FOR SYSTEM_TIME AS OF`: Flink's temporal and lookup joins (`JOIN side FOR SYSTEM_TIME AS
//! OF b.p_time AS s ON …`, Nexmark q13's join with a bounded side table), which anduin does not
//! have. sqlparser parses the clause only for dialects with table versions, and otherwise
//! stops at it with an error about `FOR UPDATE`; it is refused here, before parsing, at its
//! `FOR`, saying what it is.

use anduin_types::{Diagnostic, Diagnostics};
use sqlparser::tokenizer::{Token, TokenWithSpan};

use super::source_text::{is_word, pos};

/// Refuses the first `FOR SYSTEM_TIME AS OF` of a script's `tokens`.
pub(super) fn refuse_for_system_time(tokens: &[TokenWithSpan]) -> Result<(), Diagnostics> {
    let words: Vec<&TokenWithSpan> = (tokens.iter())
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .collect();
    let clause = ["FOR", "SYSTEM_TIME", "AS", "OF"];
    let found = words
        .windows(clause.len())
        .find(|w| w.iter().zip(clause).all(|(t, word)| is_word(t, word)));
    match found {
        Some(w) => Err(Diagnostics::from(Diagnostic::error(
            pos(w[0].span.start),
            "FOR SYSTEM_TIME AS OF (a temporal or lookup join, as Flink's) is not supported: a join of a stream with a bounded table is a regular join on equal columns (`JOIN side AS s ON b.key = s.key`), which keeps both sides",
        ))),
        None => Ok(()),
    }
}
