//! Inline JavaScript functions (`LANGUAGE javascript AS $$ … $$`): a string function and a
//! numeric one give their results row by row, NULLs passing through; a runaway loop runs
//! out of fuel naming the function (which stops a query); a throw, a result of the wrong
//! type and a memory bomb are errors naming the function; a body that does not compile is
//! refused when declared.

use std::sync::Arc;

use anduin_udf::{Declaration, JsFunction, Limits, UdfError};
use arrow::array::{Array, ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray};

fn js(decl: &str, names: &[&str], body: &str, limits: Limits) -> Result<JsFunction, UdfError> {
    let names: Vec<String> = names.iter().map(ToString::to_string).collect();
    JsFunction::new(
        Declaration::parse(decl).expect("valid"),
        &names,
        body,
        limits,
    )
}

fn strings(v: Vec<Option<&str>>) -> ArrayRef {
    Arc::new(StringArray::from(v))
}

fn ints(v: Vec<Option<i64>>) -> ArrayRef {
    Arc::new(Int64Array::from(v))
}

#[test]
fn a_string_function_gives_its_results_and_passes_nulls_through() {
    let f = js(
        "greet(VARCHAR, BIGINT) -> VARCHAR",
        &["name", "n"],
        "return 'hi ' + name.toUpperCase() + '!'.repeat(n)",
        Limits::default(),
    )
    .expect("compiles");
    let out = f
        .call(
            &[
                strings(vec![Some("ann"), None, Some("grüße"), Some("bo")]),
                ints(vec![Some(1), Some(2), Some(2), None]),
            ],
            4,
        )
        .expect("no throw");
    assert_eq!(
        out.as_any().downcast_ref::<StringArray>(),
        Some(&StringArray::from(vec![
            Some("hi ANN!"),
            None,
            Some("hi GRÜSSE!!"),
            None
        ]))
    );
}

#[test]
fn the_issues_bucket_and_a_null_result() {
    let f = js(
        "bucket(BIGINT) -> BIGINT",
        &["x"],
        "if (x < 0) return null; return x >> 10",
        Limits::default(),
    )
    .expect("compiles");
    let out = f
        .call(&[ints(vec![Some(5000), Some(-1), Some(1023)])], 3)
        .expect("no throw");
    assert_eq!(
        out.as_any().downcast_ref::<Int64Array>(),
        Some(&Int64Array::from(vec![Some(4), None, Some(0)]))
    );
    let even = js(
        "even(BIGINT) -> BOOLEAN",
        &["x"],
        "return x % 2 == 0",
        Limits::default(),
    )
    .expect("compiles");
    let out = even
        .call(&[ints(vec![Some(2), Some(3)])], 2)
        .expect("no throw");
    assert_eq!(
        out.as_any().downcast_ref::<BooleanArray>(),
        Some(&BooleanArray::from(vec![true, false]))
    );
}

#[test]
fn a_runaway_loop_runs_out_of_fuel_naming_the_function_and_the_next_call_works() {
    let limits = Limits {
        fuel: 1_000_000,
        ..Limits::default()
    };
    let f = js(
        "spin(BIGINT) -> BIGINT",
        &["x"],
        "while (x == 3) {} return x",
        limits,
    )
    .expect("compiles");
    let e = f
        .call(&[ints(vec![Some(1), Some(3)])], 2)
        .expect_err("runs away");
    assert_eq!(
        e,
        UdfError::OutOfFuel {
            function: "spin".into(),
            fuel: 1_000_000
        }
    );
    let out = f.call(&[ints(vec![Some(1), Some(2)])], 2).expect("no 3");
    assert_eq!(out.len(), 2);
    // The interruption cannot be caught.
    let f = js(
        "spin(BIGINT) -> BIGINT",
        &["x"],
        "for (;;) { try { while (true) {} } catch (e) {} }",
        limits,
    )
    .expect("compiles");
    let e = f.call(&[ints(vec![Some(1)])], 1).expect_err("runs away");
    assert!(matches!(e, UdfError::OutOfFuel { .. }), "{e}");
}

#[test]
fn a_throw_a_wrong_type_and_an_inexact_bigint_are_errors_naming_the_function() {
    let f = js(
        "f(BIGINT) -> BIGINT",
        &["x"],
        "if (x == 1) throw new RangeError('no ones'); if (x == 2) return 'two'; if (x == 3) return 1.5; return x",
        Limits::default(),
    )
    .expect("compiles");
    let one = |v: i64| {
        f.call(&[ints(vec![Some(v)])], 1)
            .expect_err("fails")
            .to_string()
    };
    assert_eq!(one(1), "function `f` threw RangeError: no ones");
    let thrower = js(
        "t(BIGINT) -> BIGINT",
        &["x"],
        "if (x == 1) throw 'a string'; throw { an: 'object' }",
        Limits::default(),
    )
    .expect("compiles");
    let threw = |v: i64| {
        thrower
            .call(&[ints(vec![Some(v)])], 1)
            .expect_err("throws")
            .to_string()
    };
    assert_eq!(threw(1), "function `t` threw the string \"a string\"");
    assert_eq!(threw(2), "function `t` threw a value of type object");
    assert_eq!(
        one(2),
        "function `f`: it returned the string \"two\" where BIGINT was declared"
    );
    assert_eq!(
        one(3),
        "function `f`: it returned the number 1.5, not an integer within ±(2^53 − 1) (a larger one may be a rounded value), where BIGINT was declared"
    );
    assert_eq!(
        one(1 << 60),
        "function `f`: its BIGINT argument 1152921504606846976 is beyond ±(2^53 − 1), which a JavaScript number cannot hold exactly"
    );
    // 2^53 is also what 2^53 + 1 rounds to: neither it nor a result of it is taken.
    assert!(one(1 << 53).contains("is beyond ±(2^53 − 1)"));
    let inc = js(
        "inc(BIGINT) -> BIGINT",
        &["x"],
        "return x + 1",
        Limits::default(),
    )
    .expect("compiles");
    let e = inc
        .call(&[ints(vec![Some((1 << 53) - 1)])], 1)
        .expect_err("rounded");
    assert!(
        e.to_string()
            .contains("the number 9007199254740992, not an integer within"),
        "{e}"
    );
}

/// From the hostile probe of JavaScript functions.
#[test]
fn a_negative_zero_reaches_the_function_as_negative_zero() {
    let f = js(
        "sign(DOUBLE) -> DOUBLE",
        &["d"],
        "return Object.is(d, -0) ? -1 : 1 / d",
        Limits::default(),
    )
    .expect("compiles");
    let out = f
        .call(
            &[Arc::new(Float64Array::from(vec![-0.0, 0.0, 2.0])) as ArrayRef],
            3,
        )
        .expect("no throw");
    let out = out
        .as_any()
        .downcast_ref::<Float64Array>()
        .expect("doubles");
    assert_eq!(out.values().to_vec(), vec![-1.0, f64::INFINITY, 0.5]);
}

/// From the hostile probe: a body that closes its function reached the top level, and a call
/// could leave state behind for the next (a global, a changed built-in, the engine's own
/// handle on the function), or read the clock or a random number.
#[test]
fn a_call_depends_on_its_arguments_alone() {
    let escape =
        "return 1 }), globalThis.top = 7, (function (x) { return x * 1000 + globalThis.top";
    let e = js("f(BIGINT) -> BIGINT", &["x"], escape, Limits::default()).expect_err("escapes");
    assert!(
        e.to_string()
            .contains("closes the function it is the body of"),
        "{e}"
    );
    for (body, says) in [
        (
            "globalThis.n = (globalThis.n || 0) + 1; return x",
            "TypeError",
        ),
        ("Array.prototype.twice = 2; return x", "TypeError"),
        (
            r"globalThis['\u0000anduin function'] = 5; return x",
            "TypeError",
        ),
        (
            "return Math.random() < 2 ? x : 0",
            "Math.random() is not available",
        ),
        (
            "return Date.now() > 0 ? x : 0",
            "Date.now() is not available",
        ),
        (
            "return new Date().getTime() > 0 ? x : 0",
            "the current time",
        ),
    ] {
        let f = js("f(BIGINT) -> BIGINT", &["x"], body, Limits::default()).expect("compiles");
        let e = f
            .call(&[ints(vec![Some(1)])], 1)
            .expect_err(body)
            .to_string();
        assert!(e.contains(says), "{body}: {e}");
        // The next call meets the same engine, the same function: the same error.
        let next = f
            .call(&[ints(vec![Some(2)])], 1)
            .expect_err(body)
            .to_string();
        assert!(next.contains(says), "{body}: {next}");
    }
    // A date from a number is deterministic, and works.
    let f = js(
        "year(BIGINT) -> BIGINT",
        &["ms"],
        "return new Date(ms).getUTCFullYear()",
        Limits::default(),
    )
    .expect("compiles");
    let out = f
        .call(&[ints(vec![Some(1_700_000_000_000)])], 1)
        .expect("a year");
    assert_eq!(
        out.as_any().downcast_ref::<Int64Array>(),
        Some(&Int64Array::from(vec![2023]))
    );
}

#[test]
fn a_memory_bomb_stops_at_the_limit() {
    let limits = Limits {
        memory_bytes: 8 << 20,
        ..Limits::default()
    };
    let f = js(
        "bomb(BIGINT) -> BIGINT",
        &["x"],
        "let a = []; for (;;) a.push(new Array(10000).fill(x)); return 0",
        limits,
    )
    .expect("compiles");
    let e = f.call(&[ints(vec![Some(1)])], 1).expect_err("too much");
    assert_eq!(
        e.to_string(),
        "function `bomb` ran out of memory: its JavaScript engine may use 8388608 bytes"
    );
}

#[test]
fn a_body_that_does_not_compile_is_refused_when_declared() {
    let e = js(
        "f(BIGINT) -> BIGINT",
        &["x"],
        "return x +",
        Limits::default(),
    )
    .expect_err("syntax");
    assert!(
        e.to_string()
            .starts_with("function `f`: its JavaScript does not compile: SyntaxError: "),
        "{e}"
    );
    // A closing brace cannot escape the function to run code at the top level.
    let e = js(
        "g(BIGINT) -> BIGINT",
        &["x"],
        "return x }); while (true) {} ((function() {",
        Limits::default(),
    )
    .expect_err("the body is one function's");
    assert!(
        e.to_string()
            .starts_with("function `g`: its JavaScript does not compile: SyntaxError: "),
        "{e}"
    );
}
