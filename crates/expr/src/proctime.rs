//! `PROCTIME()`: the processing time, the wall-clock instant an operator evaluates a row, as
//! Flink's `PROCTIME()`. Volatile: a row evaluated again (after a restore, in another copy)
//! gets another instant, so it is for observing a query (latency, output gaps), never for
//! results that must be the same in every run; event time is for those.

use std::time::{SystemTime, UNIX_EPOCH};

use arrow::datatypes::{DataType, TimeUnit};
use datafusion_common::{Result, ScalarValue};
use datafusion_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// The function's type: no arguments, a `TIMESTAMP` (milliseconds, as anduin's timestamps).
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct ProcTime {
    signature: Signature,
}

impl ProcTime {
    pub(crate) fn udf() -> ScalarUDF {
        ScalarUDF::new_from_impl(ProcTime {
            signature: Signature::nullary(Volatility::Volatile),
        })
    }
}

/// Milliseconds since the Unix epoch now; a clock set before 1970 reads as the epoch.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl ScalarUDFImpl for ProcTime {
    fn name(&self) -> &str {
        "proctime"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Timestamp(TimeUnit::Millisecond, None))
    }

    /// One instant for the batch: its rows are evaluated together.
    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(ColumnarValue::Scalar(ScalarValue::TimestampMillisecond(
            Some(now_ms()),
            None,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_reads_the_wall_clock_and_never_goes_before_the_instant_the_call_began() {
        let before = now_ms();
        let f = ProcTime::udf();
        let args = ScalarFunctionArgs {
            args: vec![],
            arg_fields: vec![],
            number_rows: 3,
            return_field: std::sync::Arc::new(arrow::datatypes::Field::new(
                "proctime",
                DataType::Timestamp(TimeUnit::Millisecond, None),
                false,
            )),
            config_options: std::sync::Arc::default(),
        };
        let Ok(ColumnarValue::Scalar(ScalarValue::TimestampMillisecond(Some(t), None))) =
            f.invoke_with_args(args)
        else {
            panic!("a millisecond timestamp");
        };
        assert!(t >= before, "{t} < {before}");
        assert_eq!(f.signature().volatility, Volatility::Volatile);
    }
}
