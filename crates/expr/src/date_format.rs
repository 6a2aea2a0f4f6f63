//! `DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm')`: a timestamp as text, in Flink's (Java's
//! `SimpleDateFormat`) pattern letters, as Nexmark's q10, q15–q17 write it.
//!
//! DataFusion's `date_format` is an alias of `to_char`, whose format is chrono's
//! (`'%Y-%m-%d'`): given Flink's pattern it would return the pattern's letters unchanged
//! (`yyyy-MM-dd` for every row), silently. This `date_format` replaces that alias: its
//! pattern, a literal, is translated to chrono's when the expression is compiled (a letter it
//! does not know is an error there), and the call becomes `to_char(ts, '<chrono format>')`.
//! `to_char` stays as DataFusion has it. The time is of UTC, as anduin's timestamps are.

use arrow::datatypes::DataType;
use datafusion_common::{plan_err, Result, ScalarValue};
use datafusion_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// The function's type: a timestamp or date and a literal pattern, to text.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct DateFormat {
    signature: Signature,
}

impl DateFormat {
    pub(crate) fn udf() -> ScalarUDF {
        ScalarUDF::new_from_impl(DateFormat {
            signature: Signature::any(2, Volatility::Immutable),
        })
    }
}

/// chrono's format for a Java `SimpleDateFormat` pattern: letters in runs (`yyyy`, `MM`,
/// `dd`, `HH`, `hh`, `mm`, `ss`, `SSS`, `a`, `EEE`, `D`), text in single quotes (`''` for a
/// quote), every other character as itself. A letter or run it does not know is an error
/// that names it.
pub(crate) fn chrono_format(pattern: &str) -> std::result::Result<String, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            // Quoted text, `''` a quote.
            if chars.get(i + 1) == Some(&'\'') {
                out.push('\'');
                i += 2;
                continue;
            }
            let mut j = i + 1;
            loop {
                match chars.get(j) {
                    None => return Err(format!("an unclosed quote in the pattern `{pattern}`")),
                    Some('\'') if chars.get(j + 1) == Some(&'\'') => {
                        out.push('\'');
                        j += 2;
                    }
                    Some('\'') => break,
                    Some('%') => {
                        out.push_str("%%");
                        j += 1;
                    }
                    Some(&x) => {
                        out.push(x);
                        j += 1;
                    }
                }
            }
            i = j + 1;
            continue;
        }
        if !c.is_ascii_alphabetic() {
            if c == '%' {
                out.push_str("%%");
            } else {
                out.push(c);
            }
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|&&x| x == c).count();
        let spec = match (c, run) {
            ('y', 2) => "%y",
            ('y', _) => "%Y",
            ('M', 1) => "%-m",
            ('M', 2) => "%m",
            ('M', 3) => "%b",
            ('M', _) => "%B",
            ('d', 1) => "%-d",
            ('d', 2) => "%d",
            ('H', 1) => "%-H",
            ('H', 2) => "%H",
            ('h', 1) => "%-I",
            ('h', 2) => "%I",
            ('m', 1) => "%-M",
            ('m', 2) => "%M",
            ('s', 1) => "%-S",
            ('s', 2) => "%S",
            ('S', 3) => "%3f",
            ('a', 1) => "%p",
            ('E', 1..=3) => "%a",
            ('E', _) => "%A",
            ('D', 1..=3) => "%j",
            _ => {
                return Err(format!(
                    "`{}` in the pattern `{pattern}` is not supported (letters: yyyy yy MM M MMM MMMM dd d HH H hh h mm m ss s SSS a EEE EEEE D)",
                    String::from(c).repeat(run)
                ))
            }
        };
        out.push_str(spec);
        i += run;
    }
    Ok(out)
}

impl ScalarUDFImpl for DateFormat {
    fn name(&self) -> &str {
        "date_format"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [DataType::Timestamp(..) | DataType::Date32 | DataType::Date64, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8] => {
                Ok(DataType::Utf8)
            }
            other => plan_err!(
                "date_format takes a timestamp and a pattern, as Flink's DATE_FORMAT(ts, 'yyyy-MM-dd'), not {other:?}"
            ),
        }
    }

    /// Becomes `to_char(ts, '<chrono format>')`: the pattern must be a literal.
    fn simplify(&self, mut args: Vec<Expr>, _info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        let pattern = match args.get(1) {
            Some(Expr::Literal(
                ScalarValue::Utf8(Some(p))
                | ScalarValue::Utf8View(Some(p))
                | ScalarValue::LargeUtf8(Some(p)),
                _,
            )) => p.clone(),
            _ => {
                return plan_err!(
                    "date_format takes its pattern as a literal: DATE_FORMAT(ts, 'yyyy-MM-dd')"
                )
            }
        };
        let format = match chrono_format(&pattern) {
            Ok(f) => f,
            Err(e) => return plan_err!("date_format: {e}"),
        };
        args[1] = Expr::Literal(ScalarValue::Utf8(Some(format)), None);
        let to_char = datafusion_functions::datetime::to_char();
        Ok(ExprSimplifyResult::Simplified(to_char.call(args)))
    }

    /// Never called: [`DateFormat::simplify`] replaces every call when it is compiled.
    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        plan_err!("date_format is evaluated as to_char: its call was not simplified")
    }
}

#[cfg(test)]
mod tests {
    use super::chrono_format;

    #[test]
    fn java_patterns_become_chrono_formats() {
        assert_eq!(chrono_format("yyyy-MM-dd").as_deref(), Ok("%Y-%m-%d"));
        assert_eq!(chrono_format("HH:mm").as_deref(), Ok("%H:%M"));
        assert_eq!(
            chrono_format("yyyy-MM-dd'T'HH:mm:ss.SSS").as_deref(),
            Ok("%Y-%m-%dT%H:%M:%S.%3f")
        );
        assert_eq!(
            chrono_format("d/M/yy h a").as_deref(),
            Ok("%-d/%-m/%y %-I %p")
        );
        assert_eq!(chrono_format("'it''s' 100%").as_deref(), Ok("it's 100%%"));
    }

    #[test]
    fn an_unknown_letter_or_an_open_quote_is_an_error_naming_it() {
        let e = chrono_format("yyyy-ww").expect_err("week of year");
        assert!(
            e.starts_with("`ww` in the pattern `yyyy-ww` is not supported"),
            "{e}"
        );
        let e = chrono_format("HH 'o").expect_err("open quote");
        assert_eq!(e, "an unclosed quote in the pattern `HH 'o`");
    }
}
