//! One cell of a row as the matcher sees it, and SQL's operations on it (three-valued logic:
//! any operation on NULL is NULL). Timestamps are epoch milliseconds in `Int`.
//!
//! An operation that has no result on its operands is an error, as in the DataFusion-based
//! `map`, with the same message: integer `/` and `%` by zero ("Divide by zero error"), integer
//! overflow of `+ - * /` ("Arithmetic overflow: Overflow happened on: …"). Floats follow IEEE
//! 754, as arrow's float kernels do: `x / 0.0` is ±inf (NaN for `0.0 / 0.0`), `x % 0.0` NaN.

use anduin_expr::ExprErrorKind;
use std::cmp::Ordering;
use std::sync::Arc;

/// A cell value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Arc<str>),
    /// `array_agg`'s values, in order (NULLs kept): only ever a measure's result, written to
    /// an Arrow list column; no operation takes one.
    List(Arc<[Value]>),
}

/// Why an expression has no value on a row: the message DataFusion gives for the same
/// failure ("Divide by zero error", "Arithmetic overflow: …", "Cast error: …").
/// Its kind says whether the row may go to the dead letters, or a function ran out of
/// resources on it (a user-defined function's fuel) and the query stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EvalError(pub Box<str>, pub ExprErrorKind);

impl EvalError {
    /// The row's fault: `message`.
    pub(crate) fn row(message: Box<str>) -> Self {
        EvalError(message, ExprErrorKind::Row)
    }

    /// An error of an expression DataFusion evaluated, of its kind.
    pub(crate) fn of(e: anduin_expr::ExprError) -> Self {
        EvalError(e.message.into(), e.kind)
    }

    pub(crate) fn divide_by_zero() -> Self {
        EvalError::row("Divide by zero error".into())
    }

    /// `a op b` overflows (`op` as arrow writes it: `+`, `-`, `*`, `/`).
    pub(crate) fn overflow(a: i64, op: &str, b: i64) -> Self {
        EvalError::row(
            format!("Arithmetic overflow: Overflow happened on: {a:?} {op} {b:?}").into(),
        )
    }

    pub(crate) fn message(&self) -> &str {
        &self.0
    }

    /// Whether a function ran out of resources: the query stops.
    pub(crate) fn is_exhausted(&self) -> bool {
        self.1 == ExprErrorKind::Exhausted
    }
}

/// A value, or why it has none.
pub(crate) type Eval = Result<Value, EvalError>;

/// An arithmetic or comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl Value {
    pub(crate) fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value as a float, for numbers.
    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// SQL comparison; `None` when either side is NULL (or the types differ, which the
    /// compiler rules out).
    pub(crate) fn compare(&self, other: &Value) -> Option<Ordering> {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
            (Value::Str(a), Value::Str(b)) => Some(a.cmp(b)),
            (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
            (a, b) => a.as_f64()?.partial_cmp(&b.as_f64()?),
        }
    }

    /// The order `MIN` and `MAX` use: SQL comparison, but with floats in SQL's total order
    /// (`-∞ < … < -0 < +0 < … < +∞ < NaN`, see [`anduin_expr::SqlFloat`]); `None` when
    /// either side is NULL.
    pub(crate) fn order(&self, other: &Value) -> Option<Ordering> {
        use anduin_expr::SqlFloat;
        match (self, other) {
            (Value::Float(_), _) | (_, Value::Float(_)) => {
                Some(self.as_f64()?.sql_cmp(other.as_f64()?))
            }
            _ => self.compare(other),
        }
    }

    /// `self op other`. Integer division truncates; integer division by zero and integer
    /// overflow are errors; floats follow IEEE 754.
    pub(crate) fn binary(&self, op: BinOp, other: &Value) -> Eval {
        use BinOp::*;
        if self.is_null() || other.is_null() {
            return Ok(Value::Null);
        }
        let cmp = |f: fn(Ordering) -> bool| {
            Ok(match self.compare(other) {
                Some(o) => Value::Bool(f(o)),
                None => Value::Null,
            })
        };
        match op {
            Eq => cmp(|o| o == Ordering::Equal),
            NotEq => cmp(|o| o != Ordering::Equal),
            Lt => cmp(|o| o == Ordering::Less),
            LtEq => cmp(|o| o != Ordering::Greater),
            Gt => cmp(|o| o == Ordering::Greater),
            GtEq => cmp(|o| o != Ordering::Less),
            Add | Sub | Mul | Div | Mod => match (self, other) {
                (Value::Int(a), Value::Int(b)) => int_arith(op, *a, *b).map(Value::Int),
                (a, b) => Ok(match (a.as_f64(), b.as_f64()) {
                    (Some(a), Some(b)) => Value::Float(match op {
                        Add => a + b,
                        Sub => a - b,
                        Mul => a * b,
                        Div => a / b,
                        _ => a % b,
                    }),
                    _ => Value::Null,
                }),
            },
        }
    }
}

/// `a op b` on integers for an arithmetic `op` (`+ - * / %`; any other is `%`), as arrow's
/// checked kernels compute it: `%` by -1 of the smallest value is 0 (arrow's remainder
/// wraps), every other overflow is an error.
fn int_arith(op: BinOp, a: i64, b: i64) -> Result<i64, EvalError> {
    let (result, sign) = match op {
        BinOp::Add => (a.checked_add(b), "+"),
        BinOp::Sub => (a.checked_sub(b), "-"),
        BinOp::Mul => (a.checked_mul(b), "*"),
        BinOp::Div if b == 0 => return Err(EvalError::divide_by_zero()),
        BinOp::Div => (a.checked_div(b), "/"),
        _ if b == 0 => return Err(EvalError::divide_by_zero()),
        _ => return Ok(a.wrapping_rem(b)),
    };
    result.ok_or_else(|| EvalError::overflow(a, sign, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(a: Value, op: BinOp, b: Value) -> Value {
        a.binary(op, &b).expect("has a value")
    }

    fn fails(a: Value, op: BinOp, b: Value) -> String {
        a.binary(op, &b).expect_err("fails").message().to_string()
    }

    #[test]
    fn null_propagates_and_numbers_mix() {
        assert_eq!(ok(Value::Null, BinOp::Lt, Value::Int(1)), Value::Null);
        assert_eq!(ok(Value::Null, BinOp::Div, Value::Int(0)), Value::Null);
        assert_eq!(
            ok(Value::Int(1), BinOp::Lt, Value::Float(1.5)),
            Value::Bool(true)
        );
        assert_eq!(ok(Value::Int(7), BinOp::Div, Value::Int(2)), Value::Int(3));
        assert_eq!(
            ok(Value::Int(-7), BinOp::Mod, Value::Int(2)),
            Value::Int(-1)
        );
        assert_eq!(
            ok(Value::Int(7), BinOp::Add, Value::Float(0.5)),
            Value::Float(7.5)
        );
        assert_eq!(
            ok(Value::Str("a".into()), BinOp::Lt, Value::Str("b".into())),
            Value::Bool(true)
        );
    }

    #[test]
    fn integer_division_by_zero_and_overflow_are_errors_as_in_datafusion() {
        let (min, max) = (Value::Int(i64::MIN), Value::Int(i64::MAX));
        assert_eq!(
            fails(Value::Int(7), BinOp::Div, Value::Int(0)),
            "Divide by zero error"
        );
        assert_eq!(
            fails(Value::Int(7), BinOp::Mod, Value::Int(0)),
            "Divide by zero error"
        );
        assert_eq!(
            fails(max.clone(), BinOp::Add, Value::Int(1)),
            "Arithmetic overflow: Overflow happened on: 9223372036854775807 + 1"
        );
        assert_eq!(
            fails(min.clone(), BinOp::Sub, Value::Int(1)),
            "Arithmetic overflow: Overflow happened on: -9223372036854775808 - 1"
        );
        assert_eq!(
            fails(max.clone(), BinOp::Mul, Value::Int(2)),
            "Arithmetic overflow: Overflow happened on: 9223372036854775807 * 2"
        );
        assert_eq!(
            fails(min.clone(), BinOp::Div, Value::Int(-1)),
            "Arithmetic overflow: Overflow happened on: -9223372036854775808 / -1"
        );
        assert_eq!(ok(min, BinOp::Mod, Value::Int(-1)), Value::Int(0));
        assert_eq!(ok(max, BinOp::Sub, Value::Int(1)), Value::Int(i64::MAX - 1));
    }

    #[test]
    fn floats_divide_by_zero_as_ieee_754_says() {
        let f = |v: Value| match v {
            Value::Float(x) => x,
            other => panic!("a float: {other:?}"),
        };
        assert_eq!(
            f(ok(Value::Float(1.5), BinOp::Div, Value::Float(0.0))),
            f64::INFINITY
        );
        assert_eq!(
            f(ok(Value::Int(-3), BinOp::Div, Value::Float(0.0))),
            f64::NEG_INFINITY
        );
        assert!(f(ok(Value::Float(0.0), BinOp::Div, Value::Int(0))).is_nan());
        assert!(f(ok(Value::Float(1.5), BinOp::Mod, Value::Float(0.0))).is_nan());
        assert_eq!(
            f(ok(Value::Float(f64::MAX), BinOp::Mul, Value::Int(2))),
            f64::INFINITY
        );
    }
}
