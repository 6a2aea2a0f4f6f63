//! Issue 21, from the hostile probe: QuickJS out of memory may fail to build its own
//! `InternalError` and leave `null` thrown, and anduin read "out of memory" from the text of
//! whatever was thrown — so a user's `throw new Error("out of memory")` passed for the
//! engine's. The engine's allocator now counts its memory and marks a call it refused: that
//! mark, not a message, makes an error "out of memory", naming the function and its limit.

use std::sync::Arc;

use anduin_udf::{Declaration, JsFunction, Limits, UdfError};
use arrow::array::{ArrayRef, Int64Array};

fn js(body: &str, limits: Limits) -> JsFunction {
    JsFunction::new(
        Declaration::parse("bomb(BIGINT) -> BIGINT").expect("valid"),
        &["x".to_string()],
        body,
        limits,
    )
    .expect("compiles")
}

fn call(f: &JsFunction) -> Result<(), UdfError> {
    let a: ArrayRef = Arc::new(Int64Array::from(vec![1]));
    f.call(&[a], 1).map(|_| ())
}

#[test]
fn memory_bombs_are_out_of_memory_naming_the_function_and_its_limit() {
    let limits = Limits {
        memory_bytes: 8 << 20,
        ..Limits::default()
    };
    for body in [
        "let a = []; for (;;) a.push('x'.repeat(1e6)); return 0",
        "let a = []; for (;;) a.push({ x: a.length, y: [a.length] }); return 0",
        "let m = new Map(); for (let i = 0; ; i++) m.set(i, 'k' + i); return 0",
        "return 'x'.repeat(2 ** 28).length",
        // Caught, then something else thrown: still the engine's refusal.
        "try { let a = []; for (;;) a.push('x'.repeat(1e6)) } catch (e) { throw e }",
    ] {
        let e = call(&js(body, limits)).expect_err(body);
        assert_eq!(
            e,
            UdfError::JsMemory {
                function: "bomb".into(),
                limit: 8 << 20
            },
            "{body}"
        );
        assert_eq!(
            e.to_string(),
            "function `bomb` ran out of memory: its JavaScript engine may use 8388608 bytes"
        );
    }
}

#[test]
fn a_users_out_of_memory_error_is_what_the_user_threw() {
    let f = js("throw new Error('out of memory')", Limits::default());
    let e = call(&f).expect_err("throws");
    assert_eq!(
        e,
        UdfError::JsThrew {
            function: "bomb".into(),
            message: "Error: out of memory".into()
        }
    );
    let f = js(
        "throw new RangeError('out of memory, says the user')",
        Limits::default(),
    );
    assert!(matches!(call(&f), Err(UdfError::JsThrew { .. })));
}
