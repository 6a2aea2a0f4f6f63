//! One cell of a row as the matcher sees it, and SQL's operations on it (three-valued logic:
//! any operation on NULL is NULL). Timestamps are epoch milliseconds in `Int`.

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
}

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

    /// `self op other`. Integer division truncates; division by zero is NULL.
    pub(crate) fn binary(&self, op: BinOp, other: &Value) -> Value {
        use BinOp::*;
        if self.is_null() || other.is_null() {
            return Value::Null;
        }
        let cmp = |f: fn(Ordering) -> bool| match self.compare(other) {
            Some(o) => Value::Bool(f(o)),
            None => Value::Null,
        };
        match op {
            Eq => cmp(|o| o == Ordering::Equal),
            NotEq => cmp(|o| o != Ordering::Equal),
            Lt => cmp(|o| o == Ordering::Less),
            LtEq => cmp(|o| o != Ordering::Greater),
            Gt => cmp(|o| o == Ordering::Greater),
            GtEq => cmp(|o| o != Ordering::Less),
            Add | Sub | Mul | Div | Mod => match (self, other) {
                (Value::Int(a), Value::Int(b)) => match op {
                    Add => Value::Int(a.wrapping_add(*b)),
                    Sub => Value::Int(a.wrapping_sub(*b)),
                    Mul => Value::Int(a.wrapping_mul(*b)),
                    Div => a.checked_div(*b).map_or(Value::Null, Value::Int),
                    _ => a.checked_rem(*b).map_or(Value::Null, Value::Int),
                },
                (a, b) => match (a.as_f64(), b.as_f64()) {
                    (Some(a), Some(b)) => match op {
                        Add => Value::Float(a + b),
                        Sub => Value::Float(a - b),
                        Mul => Value::Float(a * b),
                        Div if b == 0.0 => Value::Null,
                        Div => Value::Float(a / b),
                        _ if b == 0.0 => Value::Null,
                        _ => Value::Float(a % b),
                    },
                    _ => Value::Null,
                },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_propagates_and_numbers_mix() {
        assert_eq!(Value::Null.binary(BinOp::Lt, &Value::Int(1)), Value::Null);
        assert_eq!(
            Value::Int(1).binary(BinOp::Lt, &Value::Float(1.5)),
            Value::Bool(true)
        );
        assert_eq!(
            Value::Int(7).binary(BinOp::Div, &Value::Int(2)),
            Value::Int(3)
        );
        assert_eq!(
            Value::Int(7).binary(BinOp::Div, &Value::Int(0)),
            Value::Null
        );
        assert_eq!(
            Value::Int(7).binary(BinOp::Add, &Value::Float(0.5)),
            Value::Float(7.5)
        );
        assert_eq!(
            Value::Str("a".into()).binary(BinOp::Lt, &Value::Str("b".into())),
            Value::Bool(true)
        );
    }
}
