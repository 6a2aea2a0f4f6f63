//! Issue 21, from the hostile probe: a user-defined function called with too few or too many
//! arguments was refused with DataFusion's words for a signature it could not coerce to
//! (`coercion from Int64 to the signature Exact([Int64, Utf8]) failed`). The error names the
//! function, what it takes and how many it was given.

use std::sync::Arc;

use anduin_expr::{compile_projection, FunctionProvider, Scope};
use anduin_udf::{Declaration, JsFunction, Limits};
use arrow::datatypes::{DataType, Field, Schema};

#[test]
fn too_few_too_many_and_none_are_refused_naming_the_counts() {
    let f = JsFunction::new(
        Declaration::parse("arity_pair(BIGINT, VARCHAR) -> BIGINT").expect("valid"),
        &["n".to_string(), "s".to_string()],
        "return n + s.length",
        Limits::default(),
    )
    .expect("compiles");
    FunctionProvider::get()
        .register_scalar(Arc::new(f).into_scalar_udf())
        .expect("a new name");
    let schema = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let scope = Scope::new("t", schema);
    compile_projection(
        "arity_pair(x, s) AS ok, arity_pair(x + 1, 'a') AS ok2",
        &scope,
    )
    .expect("two arguments, of types that cast");
    for (call, given) in [
        ("arity_pair(x)", "1 argument"),
        ("arity_pair(x, s, x)", "3 arguments"),
        ("arity_pair()", "none"),
    ] {
        let e = compile_projection(&format!("{call} AS y"), &scope).expect_err(call);
        assert!(
            e.message.contains(&format!(
                "function `arity_pair` takes 2 arguments (BIGINT, VARCHAR), but is given {given}"
            )),
            "{call}: {e}"
        );
    }
    // A type that does not cast implicitly is still refused, now naming the function too.
    let e = compile_projection("arity_pair(s, s) AS y", &scope).expect_err("a string is no BIGINT");
    assert!(
        e.message.contains(
            "function `arity_pair` takes BIGINT as argument 1, but is given Utf8: CAST it (e.g. CAST(… AS BIGINT))"
        ),
        "{e}"
    );
}
