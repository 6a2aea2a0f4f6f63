//! `DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm')`: a timestamp as text, in Flink's (Java's
//! `SimpleDateFormat`) pattern letters, as Nexmark's q10, q15–q17 write it.
//!
//! DataFusion's `date_format` is an alias of `to_char`, whose format is chrono's
//! (`'%Y-%m-%d'`): given Flink's pattern it would return the pattern's letters unchanged
//! (`yyyy-MM-dd` for every row), silently. This `date_format` replaces that alias: its
//! pattern, a literal, is checked when the expression is compiled (a letter it does not
//! know is an error there) and translated to chrono's once per batch; `to_char` stays as
//! DataFusion has it. The time is of UTC, as anduin's timestamps are (of a timestamp's own
//! zone, if it has one, as `to_char` does).
//!
//! It formats as `to_char` would, but faster: chrono's format is parsed once per batch, not
//! once per row, and a row in the same second as the row before (a pattern without
//! milliseconds) repeats that row's text without formatting it again; the many rows of one
//! second of a stream cost a comparison each.

use std::fmt::Write;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use arrow::datatypes::{DataType, TimeUnit};
use chrono::format::{Item, StrftimeItems};
use chrono::{DateTime, TimeZone};
use datafusion_common::{exec_err, plan_err, DataFusionError, Result, ScalarValue};
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

    /// Checks the pattern when the expression is compiled: it must be a literal, of letters
    /// [`chrono_format`] knows. The call stays as it is.
    fn simplify(&self, args: Vec<Expr>, _info: &SimplifyContext) -> Result<ExprSimplifyResult> {
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
        match chrono_format(&pattern) {
            Ok(_) => Ok(ExprSimplifyResult::Original(args)),
            Err(e) => plan_err!("date_format: {e}"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [ts, pattern] = args.args.as_slice() else {
            return exec_err!("date_format takes two arguments, a timestamp and a pattern");
        };
        let pattern = match pattern {
            ColumnarValue::Scalar(
                ScalarValue::Utf8(Some(p))
                | ScalarValue::Utf8View(Some(p))
                | ScalarValue::LargeUtf8(Some(p)),
            ) => p,
            _ => {
                return exec_err!(
                    "date_format takes its pattern as a literal: DATE_FORMAT(ts, 'yyyy-MM-dd')"
                )
            }
        };
        let format = chrono_format(pattern)
            .map_err(|e| DataFusionError::Execution(format!("date_format: {e}")))?;
        let items = StrftimeItems::new(&format).parse().map_err(|e| {
            DataFusionError::Execution(format!(
                "date_format: the pattern `{pattern}` as chrono's `{format}`: {e}"
            ))
        })?;
        // Only `SSS` gives a text finer than the second.
        let whole_seconds = !format.contains("%3f");
        match ts {
            ColumnarValue::Array(a) => Ok(ColumnarValue::Array(format_times(
                a,
                &items,
                whole_seconds,
            )?)),
            ColumnarValue::Scalar(s) => {
                let text = format_times(&s.to_array()?, &items, whole_seconds)?;
                Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                    &text, 0,
                )?))
            }
        }
    }
}

/// The texts of `times` (timestamps of any unit and zone, or dates) in chrono's `items`;
/// `whole_seconds` when the items show nothing finer than a second.
fn format_times(times: &ArrayRef, items: &[Item<'_>], whole_seconds: bool) -> Result<ArrayRef> {
    let (unit, zone) = match times.data_type() {
        DataType::Timestamp(unit, zone) => (*unit, zone.clone()),
        DataType::Date32 => {
            let days = arrow::compute::cast(times, &DataType::Timestamp(TimeUnit::Second, None))?;
            return format_times(&days, items, whole_seconds);
        }
        DataType::Date64 => {
            let ms =
                arrow::compute::cast(times, &DataType::Timestamp(TimeUnit::Millisecond, None))?;
            return format_times(&ms, items, whole_seconds);
        }
        other => return exec_err!("date_format takes a timestamp or a date, not {other}"),
    };
    let per_second: i64 = match unit {
        TimeUnit::Second => 1,
        TimeUnit::Millisecond => 1_000,
        TimeUnit::Microsecond => 1_000_000,
        TimeUnit::Nanosecond => 1_000_000_000,
    };
    let zone: Option<arrow::array::timezone::Tz> = zone.map(|z| z.parse()).transpose()?;
    let values = arrow::compute::cast(times, &DataType::Int64)?;
    let values = values.as_primitive::<arrow::datatypes::Int64Type>();
    let mut out = StringBuilder::with_capacity(values.len(), values.len() * 8);
    // The key (the second, or the value) of the last text written, and the text.
    let mut last: Option<i64> = None;
    let mut text = String::new();
    for v in values.iter() {
        let Some(v) = v else {
            out.append_null();
            continue;
        };
        let (second, within) = (v.div_euclid(per_second), v.rem_euclid(per_second));
        let key = if whole_seconds { second } else { v };
        if last != Some(key) {
            let nanos =
                u32::try_from(within * (1_000_000_000 / per_second)).expect("below a second");
            let Some(utc) = DateTime::from_timestamp(second, nanos) else {
                return exec_err!("date_format: the timestamp {v} ({unit:?}) is out of range");
            };
            text.clear();
            let written = match &zone {
                Some(z) => write!(
                    text,
                    "{}",
                    z.from_utc_datetime(&utc.naive_utc())
                        .format_with_items(items.iter())
                ),
                None => write!(text, "{}", utc.naive_utc().format_with_items(items.iter())),
            };
            if written.is_err() {
                return exec_err!("date_format: the timestamp {v} ({unit:?}) cannot be formatted");
            }
            last = Some(key);
        }
        out.append_value(&text);
    }
    Ok(Arc::new(out.finish()))
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
