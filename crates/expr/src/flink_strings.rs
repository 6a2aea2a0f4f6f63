//! Flink's `REGEXP_EXTRACT(s, regex[, group])` and `SPLIT_INDEX(s, delimiter, n)`, which
//! DataFusion lacks (Nexmark q21 and q22 call them). Their second and third arguments are
//! literals, checked when the expression is compiled (a regular expression that does not
//! compile is an error there, where Flink returns NULL for every row); the first is any text.
//!
//! - `REGEXP_EXTRACT(s, regex, group)`: group `group` (0 the whole match; 0 when omitted, as
//!   Flink's) of the first match of `regex` in `s` (Rust's `regex` syntax, as
//!   `regexp_like`'s); NULL without a match, when the group took no part in it, or when the
//!   regex has fewer groups.
//! - `SPLIT_INDEX(s, delimiter, n)`: the `n`-th piece (from 0) of `s` split at every
//!   `delimiter` (empty pieces kept); NULL past the last piece or for a negative `n`.
//!
//! NULL in, NULL out.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, StringArray};
use arrow::datatypes::DataType;
use datafusion_common::{exec_err, plan_err, Result, ScalarValue};
use datafusion_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};

/// A row's result from its text.
type PerRow = Box<dyn Fn(&str) -> Option<String>>;

/// Which of the two functions.
#[derive(Debug, PartialEq, Eq, Hash, Clone, Copy)]
enum Kind {
    RegexpExtract,
    SplitIndex,
}

/// One of the two functions: its kind and signature.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct FlinkString {
    kind: Kind,
    signature: Signature,
}

/// `REGEXP_EXTRACT(s, regex[, group])`.
pub(crate) fn regexp_extract() -> ScalarUDF {
    ScalarUDF::new_from_impl(FlinkString {
        kind: Kind::RegexpExtract,
        signature: Signature::one_of(
            vec![TypeSignature::Any(2), TypeSignature::Any(3)],
            Volatility::Immutable,
        ),
    })
}

/// `SPLIT_INDEX(s, delimiter, n)`.
pub(crate) fn split_index() -> ScalarUDF {
    ScalarUDF::new_from_impl(FlinkString {
        kind: Kind::SplitIndex,
        signature: Signature::any(3, Volatility::Immutable),
    })
}

fn is_text(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Null
    )
}

fn is_int(t: &DataType) -> bool {
    t.is_integer() || *t == DataType::Null
}

/// The text of a literal argument (`None` for NULL), or why it is not one.
fn literal_text(e: &Expr) -> Option<Option<String>> {
    match e {
        Expr::Literal(
            ScalarValue::Utf8(s) | ScalarValue::Utf8View(s) | ScalarValue::LargeUtf8(s),
            _,
        ) => Some(s.clone()),
        Expr::Literal(ScalarValue::Null, _) => Some(None),
        _ => None,
    }
}

fn is_literal_int(e: &Expr) -> bool {
    matches!(e, Expr::Literal(v, _) if v.is_null() || v.data_type().is_integer())
}

/// An integer scalar argument, `None` for NULL.
fn scalar_int(v: &ColumnarValue, name: &str) -> Result<Option<i64>> {
    match v {
        ColumnarValue::Scalar(s) if s.is_null() => Ok(None),
        ColumnarValue::Scalar(s) => match s.cast_to(&DataType::Int64)? {
            ScalarValue::Int64(n) => Ok(n),
            other => exec_err!("{name}: an integer, not {other}"),
        },
        ColumnarValue::Array(_) => exec_err!("{name} takes a literal integer"),
    }
}

/// A text scalar argument, `None` for NULL.
fn scalar_text(v: &ColumnarValue, name: &str) -> Result<Option<String>> {
    match v {
        ColumnarValue::Scalar(s) if s.is_null() => Ok(None),
        ColumnarValue::Scalar(s) => match s.cast_to(&DataType::Utf8)? {
            ScalarValue::Utf8(t) => Ok(t),
            other => exec_err!("{name}: a text, not {other}"),
        },
        ColumnarValue::Array(_) => exec_err!("{name} takes a literal text"),
    }
}

impl FlinkString {
    fn what(&self) -> &'static str {
        match self.kind {
            Kind::RegexpExtract => "regexp_extract(s, 'regex'[, group])",
            Kind::SplitIndex => "split_index(s, 'delimiter', n)",
        }
    }

    /// Each row's result from its text.
    fn apply(&self, args: &[ColumnarValue]) -> Result<PerRow> {
        match self.kind {
            Kind::RegexpExtract => {
                let Some(pattern) = scalar_text(&args[1], "regexp_extract")? else {
                    return Ok(Box::new(|_| None));
                };
                let group = match args.get(2) {
                    Some(g) => scalar_int(g, "regexp_extract")?,
                    None => Some(0),
                };
                let re = match regex::Regex::new(&pattern) {
                    Ok(re) => re,
                    Err(e) => return exec_err!("regexp_extract: {e}"),
                };
                let Some(group) = group.and_then(|g| usize::try_from(g).ok()) else {
                    return Ok(Box::new(|_| None));
                };
                Ok(Box::new(move |s| {
                    let caps = re.captures(s)?;
                    caps.get(group).map(|m| m.as_str().to_string())
                }))
            }
            Kind::SplitIndex => {
                let delimiter = scalar_text(&args[1], "split_index")?;
                let n = scalar_int(&args[2], "split_index")?;
                let (Some(delimiter), Some(n)) =
                    (delimiter, n.and_then(|n| usize::try_from(n).ok()))
                else {
                    return Ok(Box::new(|_| None));
                };
                Ok(Box::new(move |s| {
                    let piece = if delimiter.is_empty() {
                        s.split(char::is_whitespace).nth(n)
                    } else {
                        s.split(delimiter.as_str()).nth(n)
                    };
                    piece.map(str::to_string)
                }))
            }
        }
    }
}

impl ScalarUDFImpl for FlinkString {
    fn name(&self) -> &str {
        match self.kind {
            Kind::RegexpExtract => "regexp_extract",
            Kind::SplitIndex => "split_index",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let ok = match (self.kind, arg_types) {
            (Kind::RegexpExtract, [s, r]) => is_text(s) && is_text(r),
            (Kind::RegexpExtract, [s, r, g]) | (Kind::SplitIndex, [s, r, g]) => {
                is_text(s) && is_text(r) && is_int(g)
            }
            _ => false,
        };
        if ok {
            Ok(DataType::Utf8)
        } else {
            plan_err!(
                "{} takes a text, a text and an integer, not {arg_types:?}",
                self.what()
            )
        }
    }

    /// Checks that the arguments after the first are literals (and a regex compiles); the
    /// call stays as it is.
    fn simplify(&self, args: Vec<Expr>, _info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        let Some(text) = args.get(1).and_then(literal_text) else {
            return plan_err!("{}: its second argument is a literal", self.what());
        };
        if args.get(2).is_some_and(|g| !is_literal_int(g)) {
            return plan_err!("{}: its third argument is a literal integer", self.what());
        }
        if let (Kind::RegexpExtract, Some(pattern)) = (self.kind, text) {
            if let Err(e) = regex::Regex::new(&pattern) {
                return plan_err!("regexp_extract: the regular expression `{pattern}`: {e}");
            }
        }
        Ok(ExprSimplifyResult::Original(args))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let f = self.apply(&args.args)?;
        let input = match &args.args[0] {
            ColumnarValue::Array(a) => Arc::clone(a),
            ColumnarValue::Scalar(s) => s.to_array_of_size(rows)?,
        };
        let input = arrow::compute::cast(&input, &DataType::Utf8)?;
        let Some(texts) = input.as_any().downcast_ref::<StringArray>() else {
            return exec_err!("{}: a text first argument", self.what());
        };
        let out: StringArray = (0..texts.len())
            .map(|i| texts.is_valid(i).then(|| f(texts.value(i))).flatten())
            .collect();
        Ok(ColumnarValue::Array(Arc::new(out) as ArrayRef))
    }
}
