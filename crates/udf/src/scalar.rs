//! A [`WasmFunction`] or a [`JsFunction`] as a DataFusion scalar function, so that an
//! expression calls it by name like a built-in one.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion_common::Result;
use datafusion_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use crate::{Declaration, JsFunction, UdfError, WasmFunction};

/// The function behind a [`UdfScalar`].
#[derive(Debug)]
enum Callee {
    Wasm(Arc<WasmFunction>),
    Js(Arc<JsFunction>),
}

impl Callee {
    fn declaration(&self) -> &Declaration {
        match self {
            Callee::Wasm(f) => f.declaration(),
            Callee::Js(f) => f.declaration(),
        }
    }

    fn call(
        &self,
        args: &[arrow::array::ArrayRef],
        rows: usize,
    ) -> Result<arrow::array::ArrayRef, UdfError> {
        match self {
            Callee::Wasm(f) => f.call(args, rows),
            Callee::Js(f) => f.call(args, rows),
        }
    }
}

/// The DataFusion face of a user-defined function.
#[derive(Debug)]
struct UdfScalar {
    function: Callee,
    signature: Signature,
}

impl UdfScalar {
    fn scalar_udf(function: Callee) -> ScalarUDF {
        // Coerced by `coerce_types`, as an exact signature would be, but with errors that
        // name the function and its declaration.
        ScalarUDF::new_from_impl(UdfScalar {
            signature: Signature::user_defined(Volatility::Immutable),
            function,
        })
    }
}

impl PartialEq for UdfScalar {
    fn eq(&self, other: &Self) -> bool {
        match (&self.function, &other.function) {
            (Callee::Wasm(a), Callee::Wasm(b)) => Arc::ptr_eq(a, b),
            (Callee::Js(a), Callee::Js(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for UdfScalar {}

impl Hash for UdfScalar {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.function.declaration().hash(state);
        if let Callee::Wasm(f) = &self.function {
            f.module().label().hash(state);
        }
    }
}

impl ScalarUDFImpl for UdfScalar {
    fn name(&self) -> &str {
        &self.function.declaration().name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The declared types, to which the arguments are cast as for a built-in function; an
    /// error naming the function for a wrong number of arguments, or one that does not cast.
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        crate::coerce::to_declared(self.function.declaration(), "function", arg_types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.function.declaration().result.arrow())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let rows = args.number_rows;
        let arrays = arrays
            .into_iter()
            .map(|a| {
                if a.len() == rows {
                    Ok(a)
                } else {
                    // A scalar argument: repeated to the batch's length.
                    ColumnarValue::Scalar(datafusion_common::ScalarValue::try_from_array(&a, 0)?)
                        .into_array(rows)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        self.function
            .call(&arrays, rows)
            .map(ColumnarValue::Array)
            .map_err(crate::coerce::datafusion_error)
    }
}

impl WasmFunction {
    /// This function as a DataFusion scalar function of the same name, with its declared
    /// signature (arguments coerced to it as for a built-in function). It is declared
    /// immutable: a call on constants may be made once, when the expression is compiled.
    pub fn into_scalar_udf(self: Arc<Self>) -> ScalarUDF {
        UdfScalar::scalar_udf(Callee::Wasm(self))
    }
}

impl JsFunction {
    /// This function as a DataFusion scalar function, as [`WasmFunction::into_scalar_udf`].
    pub fn into_scalar_udf(self: Arc<Self>) -> ScalarUDF {
        UdfScalar::scalar_udf(Callee::Js(self))
    }
}
