//! What every user-defined operator shares, whatever its language: its declaration (the
//! input columns it takes, the columns it emits), one job of its engine (rows of a batch, or
//! the keys whose timers are due), and the job's answer turned into columns.
//!
//! An operator is a table function with a state per key, as Flink's process table functions
//! (`CREATE FUNCTION f(a BIGINT, …) RETURNS TABLE (x BIGINT, …)`): per key (the `PARTITION
//! BY` columns) a state of the user's own — JSON data in JavaScript, a fixed number of bytes
//! in WebAssembly — kept by anduin between batches and in checkpoints, as an aggregate's
//! states are; `process(state, a, …)` called per row of the key, which may change the state
//! and emit rows of the declared columns; and an optional timer per key, a function of its
//! state (`timer(state)`), after which `on_timer(state, watermark)` is called once the
//! watermark reaches it.

use std::fmt;

use arrow::array::ArrayRef;

use crate::call::Out;
use crate::columns::Builder;
use crate::{SqlType, UdfError};

/// An operator's declaration: `dedup(auction BIGINT, price BIGINT) -> TABLE(price BIGINT)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OperatorDeclaration {
    /// Its name (for WebAssembly, the prefix of its exports).
    pub name: String,
    /// The input columns `process` takes after the state, by name, in order.
    pub args: Vec<(String, SqlType)>,
    /// The columns of the rows it emits, in order.
    pub output: Vec<(String, SqlType)>,
}

impl OperatorDeclaration {
    /// Parses one line of a module's `anduin:operators` section:
    /// `name(col TYPE, …) -> TABLE(col TYPE, …)`.
    ///
    /// # Examples
    /// ```
    /// use anduin_udf::{OperatorDeclaration, SqlType};
    /// let d = OperatorDeclaration::parse("first(ts BIGINT, v DOUBLE) -> TABLE(v DOUBLE)").expect("valid");
    /// assert_eq!(d.name, "first");
    /// assert_eq!(d.args[1], ("v".to_string(), SqlType::Double));
    /// assert_eq!(d.to_string(), "first(ts BIGINT, v DOUBLE) -> TABLE(v DOUBLE)");
    /// ```
    pub fn parse(text: &str) -> Result<OperatorDeclaration, UdfError> {
        let bad = |message: &str| UdfError::Declaration {
            text: text.trim().to_string(),
            message: message.to_string(),
        };
        let shape = "expected `name(column TYPE, …) -> TABLE(column TYPE, …)`";
        let (name, rest) = text.split_once('(').ok_or_else(|| bad(shape))?;
        let name = name.trim();
        if !is_name(name) {
            return Err(bad(
                "an operator's name is letters, digits and `_`, not starting with a digit",
            ));
        }
        let (args, result) = rest.split_once(')').ok_or_else(|| bad(shape))?;
        let table = result
            .trim()
            .strip_prefix("->")
            .map(str::trim)
            .and_then(|r| {
                r.get(..5)
                    .filter(|head| head.eq_ignore_ascii_case("table"))
                    .and_then(|_| r.get(5..))
            })
            .map(str::trim)
            .and_then(|r| r.strip_prefix('('))
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(|| bad(shape))?;
        let columns = |list: &str| -> Result<Vec<(String, SqlType)>, UdfError> {
            if list.trim().is_empty() {
                return Ok(Vec::new());
            }
            list.split(',')
                .map(|c| {
                    let (n, t) = c
                        .trim()
                        .split_once(char::is_whitespace)
                        .ok_or_else(|| bad(&format!("`{}`: a column is `name TYPE`", c.trim())))?;
                    if !is_name(n) {
                        return Err(bad(&format!("`{n}` is not a column name")));
                    }
                    let ty = SqlType::parse(t).ok_or_else(|| {
                        bad(&format!(
                            "type `{}` is not supported: use BIGINT, DOUBLE, BOOLEAN or VARCHAR",
                            t.trim()
                        ))
                    })?;
                    Ok((n.to_string(), ty))
                })
                .collect()
        };
        let d = OperatorDeclaration {
            name: name.to_string(),
            args: columns(args)?,
            output: columns(table)?,
        };
        if d.output.is_empty() {
            return Err(bad("an operator returns at least one column"));
        }
        Ok(d)
    }

    /// Every declaration of a section's text: one a line; blank lines and lines starting
    /// with `#` are skipped.
    pub fn parse_all(text: &str) -> Result<Vec<OperatorDeclaration>, UdfError> {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(OperatorDeclaration::parse)
            .collect()
    }

    /// The output columns as text, for errors: `a BIGINT, b DOUBLE`.
    pub(crate) fn output_text(&self) -> String {
        self.output
            .iter()
            .map(|(n, t)| format!("{n} {t}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

impl fmt::Display for OperatorDeclaration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |c: &[(String, SqlType)]| {
            c.iter()
                .map(|(n, t)| format!("{n} {t}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        write!(
            f,
            "{}({}) -> TABLE({})",
            self.name,
            list(&self.args),
            list(&self.output)
        )
    }
}

/// One job of an operator's engine. Each carries the states it works on (one per slot) and
/// gets them back changed.
#[derive(Debug)]
pub(crate) enum OpJob {
    /// `process` on rows: step `(row, slot)` is row `row` of `args` for the state in `slot`.
    Rows {
        states: Vec<Option<Vec<u8>>>,
        args: Vec<ArrayRef>,
        steps: Vec<(usize, usize)>,
    },
    /// `on_timer(state, watermark)` on every state, in order.
    Timers {
        states: Vec<Option<Vec<u8>>>,
        watermark: i64,
    },
}

/// An engine's answer to an [`OpJob`].
#[derive(Debug, Default)]
pub(crate) struct OpAnswer {
    /// The states, changed (`None`: dropped).
    pub states: Vec<Option<Vec<u8>>>,
    /// Each state's timer.
    pub timers: Vec<Option<i64>>,
    /// The rows emitted: the slot each was emitted for, and its values (`None`: NULL).
    pub rows: Vec<(usize, Vec<Option<Out>>)>,
}

/// A job that failed: the error (naming the function), and where.
#[derive(Debug)]
pub(crate) struct OpFailure {
    pub error: Box<UdfError>,
    /// The row of a [`OpJob::Rows`] whose call failed.
    pub row: Option<usize>,
    /// The slot whose call failed.
    pub slot: Option<usize>,
}

impl OpFailure {
    /// A failure of no particular call.
    pub(crate) fn whole(error: UdfError) -> OpFailure {
        OpFailure {
            error: Box::new(error),
            row: None,
            slot: None,
        }
    }
}

impl From<UdfError> for OpFailure {
    fn from(error: UdfError) -> Self {
        OpFailure::whole(error)
    }
}

impl From<OpFailure> for anduin_expr::OperatorFailure {
    fn from(f: OpFailure) -> Self {
        let exhausted = matches!(
            *f.error,
            UdfError::OutOfFuel { .. } | UdfError::OutOfTime { .. } | UdfError::Stopped { .. }
        );
        anduin_expr::OperatorFailure {
            message: f.error.to_string(),
            row: f.row,
            slot: f.slot,
            exhausted,
        }
    }
}

/// The answer's rows as the columns of `d`'s output, with the slot of each row.
pub(crate) fn emitted(
    d: &OperatorDeclaration,
    answer: OpAnswer,
) -> Result<anduin_expr::Emitted, UdfError> {
    let mut builders: Vec<Builder> = d
        .output
        .iter()
        .map(|(_, t)| Builder::new(*t, answer.rows.len()))
        .collect();
    let mut slots = Vec::with_capacity(answer.rows.len());
    for (slot, values) in answer.rows {
        if values.len() != builders.len() {
            return Err(UdfError::Engine(format!(
                "operator `{}` emitted a row of {} values for {} columns (a bug in anduin)",
                d.name,
                values.len(),
                builders.len()
            )));
        }
        for (b, v) in builders.iter_mut().zip(values) {
            match v {
                Some(v) => b.append(v),
                None => b.append_null(),
            }
        }
        slots.push(slot);
    }
    Ok(anduin_expr::Emitted {
        states: answer.states,
        timers: answer.timers,
        slots,
        columns: builders.into_iter().map(Builder::finish).collect(),
    })
}

/// The user's operator as `anduin-relational`'s `user_operator` runs it, for an operator
/// type with `declaration()`, `has_timers()` and `run(OpJob)`. The same for both languages.
macro_rules! user_operator {
    ($t:ty) => {
        impl anduin_expr::UserOperator for $t {
            fn name(&self) -> &str {
                &self.declaration().name
            }

            fn args(&self) -> Vec<(String, arrow::datatypes::DataType)> {
                self.declaration()
                    .args
                    .iter()
                    .map(|(n, t)| (n.clone(), t.arrow()))
                    .collect()
            }

            fn output(&self) -> Vec<(String, arrow::datatypes::DataType)> {
                self.declaration()
                    .output
                    .iter()
                    .map(|(n, t)| (n.clone(), t.arrow()))
                    .collect()
            }

            fn has_timers(&self) -> bool {
                <$t>::has_timers(self)
            }

            fn process(
                &self,
                states: anduin_expr::UserStates,
                args: &[arrow::array::ArrayRef],
                steps: &[(usize, usize)],
            ) -> Result<anduin_expr::Emitted, anduin_expr::OperatorFailure> {
                let job = $crate::operator::OpJob::Rows {
                    states,
                    args: args.to_vec(),
                    steps: steps.to_vec(),
                };
                let answer = self.run(job)?;
                $crate::operator::emitted(self.declaration(), answer)
                    .map_err(|e| $crate::operator::OpFailure::whole(e).into())
            }

            fn on_timer(
                &self,
                states: anduin_expr::UserStates,
                watermark: i64,
            ) -> Result<anduin_expr::Emitted, anduin_expr::OperatorFailure> {
                let job = $crate::operator::OpJob::Timers { states, watermark };
                let answer = self.run(job)?;
                $crate::operator::emitted(self.declaration(), answer)
                    .map_err(|e| $crate::operator::OpFailure::whole(e).into())
            }
        }
    };
}

pub(crate) use user_operator;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_declares_operators_with_named_columns() {
        let all = OperatorDeclaration::parse_all(
            "# operators\nfirst(ts BIGINT, price DOUBLE) -> TABLE(price DOUBLE, late BOOLEAN)\n\nevery_n(v bigint) -> table(n BIGINT)\n",
        )
        .expect("valid");
        let shown: Vec<String> = all.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "first(ts BIGINT, price DOUBLE) -> TABLE(price DOUBLE, late BOOLEAN)",
                "every_n(v BIGINT) -> TABLE(n BIGINT)"
            ]
        );
    }

    #[test]
    fn a_malformed_operator_declaration_says_what_it_expected() {
        for (text, expected) in [
            (
                "f(x BIGINT) -> BIGINT",
                "expected `name(column TYPE, …) -> TABLE(column TYPE, …)`",
            ),
            (
                "f(BIGINT) -> TABLE(y BIGINT)",
                "`BIGINT`: a column is `name TYPE`",
            ),
            (
                "f(x TIMESTAMP) -> TABLE(y BIGINT)",
                "type `TIMESTAMP` is not supported: use BIGINT, DOUBLE, BOOLEAN or VARCHAR",
            ),
            (
                "f(x BIGINT) -> TABLE()",
                "an operator returns at least one column",
            ),
        ] {
            let e = OperatorDeclaration::parse(text).expect_err(text);
            assert_eq!(e.to_string(), format!("declaration `{text}`: {expected}"));
        }
    }
}
