//! What a function's declaration asks of its arguments' types at plan time, and how its
//! errors reach DataFusion: shared by the scalar and the aggregate functions.

use arrow::datatypes::DataType;
use datafusion_common::{plan_err, DataFusionError, Result};

use crate::{Declaration, UdfError};

/// `n` arguments, in words.
fn arguments(n: usize) -> String {
    match n {
        0 => "none".to_string(),
        1 => "1 argument".to_string(),
        n => format!("{n} arguments"),
    }
}

/// The declared types of `d` (a `what`: "function", "aggregate"), to which arguments of
/// `arg_types` are cast as for a built-in function; an error naming it for a wrong number
/// of arguments, or one that does not cast.
pub(crate) fn to_declared(
    d: &Declaration,
    what: &str,
    arg_types: &[DataType],
) -> Result<Vec<DataType>> {
    let declared: Vec<String> = d.args.iter().map(ToString::to_string).collect();
    if arg_types.len() != d.args.len() {
        return plan_err!(
            "{what} `{}` takes {} ({}), but is given {}",
            d.name,
            arguments(d.args.len()),
            declared.join(", "),
            arguments(arg_types.len())
        );
    }
    let mut out = Vec::with_capacity(arg_types.len());
    for (i, (given, want)) in arg_types.iter().zip(&d.args).enumerate() {
        let want_type = want.arrow();
        // The rule of DataFusion's exact signatures (an implicit, lossless coercion: an
        // INT to BIGINT, not a VARCHAR to BIGINT), which this signature had before it
        // named the function in its errors. DataFusion 55 deprecates the function as
        // unused by itself; should it go, copy its rule (`coerced_from`) here.
        #[allow(deprecated)]
        let coerces = datafusion_expr::type_coercion::functions::can_coerce_from(&want_type, given);
        if given != &want_type && !coerces {
            return plan_err!(
                "{what} `{}` takes {want} as argument {}, but is given {given}: CAST it (e.g. CAST(… AS {want}))",
                d.name,
                i + 1
            );
        }
        out.push(want_type);
    }
    Ok(out)
}

/// A function's error as DataFusion's: a runaway is no row's fault, so it is
/// `ResourcesExhausted`, which stops the query (see `anduin_expr::ExprErrorKind`); anything
/// else is an `Execution` error.
pub(crate) fn datafusion_error(e: UdfError) -> DataFusionError {
    match e {
        UdfError::OutOfFuel { .. } | UdfError::OutOfTime { .. } | UdfError::Stopped { .. } => {
            DataFusionError::ResourcesExhausted(e.to_string())
        }
        e => DataFusionError::Execution(e.to_string()),
    }
}
