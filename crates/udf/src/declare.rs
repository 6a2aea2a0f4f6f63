//! A function's declared signature: `name(BIGINT, VARCHAR) -> VARCHAR`.

use std::fmt;

use crate::{SqlType, UdfError};

/// A function of a module as anduin sees it: its name (that of the module's export) and
/// its SQL signature.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Declaration {
    /// The export's name, and the name queries call it by.
    pub name: String,
    /// Its arguments' types, in order.
    pub args: Vec<SqlType>,
    /// Its result's type.
    pub result: SqlType,
}

impl Declaration {
    /// Parses one line of a module's `anduin:functions` section:
    /// `name(TYPE, …) -> TYPE` (`RETURNS TYPE` is accepted for `-> TYPE`).
    ///
    /// # Examples
    /// ```
    /// use anduin_udf::{Declaration, SqlType};
    /// let d = Declaration::parse("rev(VARCHAR) -> VARCHAR").expect("valid");
    /// assert_eq!((d.name.as_str(), d.args.as_slice(), d.result), ("rev", &[SqlType::Varchar][..], SqlType::Varchar));
    /// ```
    pub fn parse(text: &str) -> Result<Declaration, UdfError> {
        let bad = |message: &str| UdfError::Declaration {
            text: text.trim().to_string(),
            message: message.to_string(),
        };
        let (name, rest) = text
            .split_once('(')
            .ok_or_else(|| bad("expected `name(TYPE, …) -> TYPE`"))?;
        let name = name.trim();
        if name.is_empty()
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            || name.starts_with(|c: char| c.is_ascii_digit())
        {
            return Err(bad(
                "a function's name is letters, digits and `_`, not starting with a digit",
            ));
        }
        let (args, result) = rest
            .split_once(')')
            .ok_or_else(|| bad("expected `)` after the arguments"))?;
        let result = result.trim();
        let result = result
            .strip_prefix("->")
            .or_else(|| {
                result
                    .get(..7)
                    .filter(|r| r.eq_ignore_ascii_case("returns"))
                    .and_then(|_| result.get(7..))
            })
            .ok_or_else(|| bad("expected `-> TYPE` after the arguments"))?;
        let ty = |t: &str| {
            SqlType::parse(t).ok_or_else(|| {
                bad(&format!(
                    "type `{}` is not supported: use BIGINT, DOUBLE, BOOLEAN or VARCHAR",
                    t.trim()
                ))
            })
        };
        let args = if args.trim().is_empty() {
            Vec::new()
        } else {
            args.split(',').map(ty).collect::<Result<_, _>>()?
        };
        Ok(Declaration {
            name: name.to_string(),
            args,
            result: ty(result)?,
        })
    }

    /// Every declaration of a section's text: one a line; blank lines and lines starting
    /// with `#` are skipped.
    pub fn parse_all(text: &str) -> Result<Vec<Declaration>, UdfError> {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(Declaration::parse)
            .collect()
    }

    /// Whether any argument or the result is a string.
    pub(crate) fn uses_strings(&self) -> bool {
        self.result == SqlType::Varchar || self.args.contains(&SqlType::Varchar)
    }
}

impl fmt::Display for Declaration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let args: Vec<String> = self.args.iter().map(ToString::to_string).collect();
        write!(f, "{}({}) -> {}", self.name, args.join(", "), self.result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_declares_one_function_a_line() {
        let all = Declaration::parse_all(
            "# functions of this module\nadd_one(BIGINT) -> BIGINT\n\nnow_or_never() RETURNS boolean\n",
        )
        .expect("valid");
        let shown: Vec<String> = all.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["add_one(BIGINT) -> BIGINT", "now_or_never() -> BOOLEAN"]
        );
    }

    #[test]
    fn a_malformed_declaration_says_what_it_expected() {
        let e = Declaration::parse("f(BIGINT) BIGINT").expect_err("no arrow");
        assert_eq!(
            e.to_string(),
            "declaration `f(BIGINT) BIGINT`: expected `-> TYPE` after the arguments"
        );
        let e = Declaration::parse("f(TIMESTAMP) -> BIGINT").expect_err("type");
        assert!(
            e.to_string().contains("type `TIMESTAMP` is not supported"),
            "{e}"
        );
        assert!(Declaration::parse("1f() -> BIGINT").is_err());
    }
}
