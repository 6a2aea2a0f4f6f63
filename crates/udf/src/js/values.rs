//! Values across the border: a row's arguments into JavaScript, the result back out as the
//! declared type, and a JavaScript value in an error.

use rquickjs::{Ctx, Value};

use crate::call::{Arg, Out};
use crate::{SqlType, UdfError};

/// The largest integer a JavaScript number holds exactly and alone (`Number.MAX_SAFE_INTEGER`:
/// 2^53 itself is also what 2^53 + 1 rounds to).
const EXACT: i64 = (1 << 53) - 1;

pub(super) fn to_js<'js>(ctx: &Ctx<'js>, name: &str, a: &Arg<'_>) -> Result<Value<'js>, UdfError> {
    let engine = |e: rquickjs::Error| UdfError::Engine(e.to_string());
    Ok(match *a {
        Arg::I64(v) => {
            if !(-EXACT..=EXACT).contains(&v) {
                return Err(UdfError::JsValue {
                    function: name.to_string(),
                    message: format!("its BIGINT argument {v} is beyond ±(2^53 − 1), which a JavaScript number cannot hold exactly"),
                });
            }
            Value::new_number(ctx.clone(), v as f64)
        }
        // A float, always: a number equal to an integer would become one, and -0.0 would be 0.
        Arg::F64(v) => Value::new_float(ctx.clone(), v),
        Arg::Bool(v) => Value::new_bool(ctx.clone(), v),
        Arg::Str(s) => rquickjs::String::from_str(ctx.clone(), s)
            .map_err(engine)?
            .into_value(),
    })
}

pub(super) fn from_js(
    name: &str,
    declared: SqlType,
    v: &Value<'_>,
) -> Result<Option<Out>, UdfError> {
    from_js_as(name, declared, v, "it returned")
}

/// [`from_js`] of a value that `said` came from (`it returned`, `emit(…) was given, as
/// column `x`,`), for its error.
pub(super) fn from_js_as(
    name: &str,
    declared: SqlType,
    v: &Value<'_>,
    said: &str,
) -> Result<Option<Out>, UdfError> {
    if v.is_null() || v.is_undefined() {
        return Ok(None);
    }
    let wrong = |found: String| UdfError::JsValue {
        function: name.to_string(),
        message: format!("{said} {found} where {declared} was declared"),
    };
    match declared {
        SqlType::Bigint => {
            let n = v.as_number().ok_or_else(|| wrong(show(v)))?;
            if n.fract() != 0.0 || !(-(EXACT as f64)..=EXACT as f64).contains(&n) {
                return Err(wrong(format!(
                    "the number {n}, not an integer within ±(2^53 − 1) (a larger one may be a rounded value),"
                )));
            }
            Ok(Some(Out::I64(n as i64)))
        }
        SqlType::Double => v
            .as_number()
            .map(|n| Some(Out::F64(n)))
            .ok_or_else(|| wrong(show(v))),
        SqlType::Boolean => v
            .as_bool()
            .map(|b| Some(Out::Bool(b)))
            .ok_or_else(|| wrong(show(v))),
        SqlType::Varchar => match v.as_string() {
            Some(s) => s
                .to_string()
                .map(|s| Some(Out::Str(s)))
                .map_err(|e| UdfError::Engine(e.to_string())),
            None => Err(wrong(show(v))),
        },
    }
}

/// A JavaScript value in an error: its type and, for a scalar, its value.
pub(super) fn show(v: &Value<'_>) -> String {
    if let Some(n) = v.as_number() {
        format!("the number {n}")
    } else if let Some(b) = v.as_bool() {
        format!("the boolean {b}")
    } else if let Some(s) = v.as_string().and_then(|s| s.to_string().ok()) {
        format!("the string {s:?}")
    } else {
        format!("a value of type {}", v.type_name())
    }
}
