//! Flink's `HOUR(ts)` and `MOD(a, b)`, which DataFusion writes otherwise: each call becomes
//! DataFusion's expression when the expression is compiled. `HOUR(ts)` is
//! `CAST(date_part('hour', ts) AS BIGINT)` (the hour of UTC, a BIGINT as Flink's), `MOD(a,
//! b)` is `a % b` (the remainder, of the sign of `a`, as Flink's and Java's `%`).

use arrow::datatypes::DataType;
use datafusion_common::{plan_err, Result};
use datafusion_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion_expr::{
    binary_expr, cast, lit, ColumnarValue, Expr, Operator, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};

/// Which of the two functions.
#[derive(Debug, PartialEq, Eq, Hash, Clone, Copy)]
enum Kind {
    Hour,
    Mod,
}

/// `HOUR` or `MOD`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct FlinkAlias {
    kind: Kind,
    signature: Signature,
}

/// `HOUR(ts)`.
pub(crate) fn hour() -> ScalarUDF {
    ScalarUDF::new_from_impl(FlinkAlias {
        kind: Kind::Hour,
        signature: Signature::any(1, Volatility::Immutable),
    })
}

/// `MOD(a, b)`.
pub(crate) fn modulo() -> ScalarUDF {
    ScalarUDF::new_from_impl(FlinkAlias {
        kind: Kind::Mod,
        signature: Signature::any(2, Volatility::Immutable),
    })
}

impl ScalarUDFImpl for FlinkAlias {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Hour => "hour",
            Kind::Mod => "mod",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match (self.kind, arg_types) {
            (Kind::Hour, [DataType::Timestamp(..) | DataType::Date32 | DataType::Date64]) => {
                Ok(DataType::Int64)
            }
            (Kind::Mod, [a, b]) if a.is_numeric() && b.is_numeric() => {
                // What `a % b` gives; the simplified call computes it.
                Ok(if a.is_integer() && b.is_integer() {
                    DataType::Int64
                } else {
                    DataType::Float64
                })
            }
            (Kind::Hour, _) => plan_err!("hour(ts) takes a timestamp, not {arg_types:?}"),
            (Kind::Mod, _) => plan_err!("mod(a, b) takes two numbers, not {arg_types:?}"),
        }
    }

    fn simplify(&self, args: Vec<Expr>, _info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        let mut args = args.into_iter();
        let (Some(a), b) = (args.next(), args.next()) else {
            return plan_err!("{}: an argument", self.name());
        };
        Ok(ExprSimplifyResult::Simplified(match (self.kind, b) {
            (Kind::Hour, None) => cast(
                datafusion_functions::datetime::date_part().call(vec![lit("hour"), a]),
                DataType::Int64,
            ),
            (Kind::Mod, Some(b)) => binary_expr(a, Operator::Modulo, b),
            _ => return plan_err!("{}: its arguments", self.name()),
        }))
    }

    /// Never called: [`FlinkAlias::simplify`] replaces every call when it is compiled.
    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        plan_err!("{} was not simplified", self.name())
    }
}
