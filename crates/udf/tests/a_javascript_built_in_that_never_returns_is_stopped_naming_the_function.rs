//! Issue 21, from the hostile probe: QuickJS stops a call only where it checks for an
//! interrupt (between bytecodes, on calls, in its regular expression engine), so one
//! built-in call that never returns (`indexOf` of a megabyte pattern in a larger string),
//! or a loop of built-in calls that each work on megabytes (ten thousand steps between two
//! checks, each of milliseconds), ran for hours: the wall-clock backstop was looked at only
//! at those checks. The call now runs on an engine's thread of its own, and the caller gives
//! up on it at the backstop: an error naming the function, after which the next call works
//! on a fresh engine. A catastrophic regular expression runs out of fuel, since QuickJS
//! checks for interrupts inside its regular expression engine.
//!
//! The backstop here is tiny (the default is 10 s); no duration is asserted.

use std::sync::Arc;
use std::time::Duration;

use anduin_udf::{Declaration, JsFunction, Limits, UdfError};
use arrow::array::{Array, ArrayRef, Int64Array};

fn js(name: &str, body: &str, limits: Limits) -> JsFunction {
    JsFunction::new(
        Declaration::parse(&format!("{name}(BIGINT) -> BIGINT")).expect("valid"),
        &["x".to_string()],
        body,
        limits,
    )
    .expect("compiles")
}

fn ints(v: Vec<i64>) -> ArrayRef {
    Arc::new(Int64Array::from(v))
}

/// A backstop short enough for the stuck calls here (which would run for hours) and long
/// enough for a call that returns at once on a loaded machine, a fresh engine's start
/// included (50 ms was not, under a busy CI).
const TINY: Limits = Limits {
    fuel: Limits::DEFAULT_FUEL,
    memory_bytes: Limits::DEFAULT_MEMORY_BYTES,
    backstop: Duration::from_secs(1),
};

#[test]
fn one_built_in_call_that_never_returns_is_stopped_at_the_backstop() {
    // Returns at once for x = 1; for x = 2 compares 2^21 bytes at each of 2^21 places.
    let f = js(
        "scan",
        "if (x == 1) return 1; \
         const s = 'a'.repeat(1 << 22); \
         return s.indexOf('a'.repeat(1 << 21) + 'b')",
        TINY,
    );
    let e = f.call(&[ints(vec![1, 2])], 2).expect_err("stopped");
    assert_eq!(
        e,
        UdfError::OutOfTime {
            function: "scan".into(),
            limit: Duration::from_secs(1)
        }
    );
    assert!(
        e.to_string()
            .starts_with("function `scan` ran for more than 1s of wall-clock time and was stopped"),
        "{e}"
    );
    // The stuck engine is abandoned; the next call gets a fresh one.
    let out = f.call(&[ints(vec![1, 1])], 2).expect("returns at once");
    assert_eq!(out.len(), 2);
}

#[test]
fn a_loop_of_built_in_calls_on_megabytes_is_stopped_at_the_backstop() {
    let f = js(
        "fill",
        "for (;;) { if ('x'.repeat(1 << 24).length == 0) return x }",
        TINY,
    );
    let e = f.call(&[ints(vec![1])], 1).expect_err("stopped");
    assert!(
        matches!(e, UdfError::OutOfTime { ref function, .. } if function == "fill"),
        "{e}"
    );
}

#[test]
fn a_catastrophic_regular_expression_runs_out_of_fuel() {
    let limits = Limits {
        fuel: 1_000_000,
        ..Limits::default()
    };
    let f = js(
        "redos",
        "return /(a+)+$/.test('a'.repeat(40) + 'b') ? 1 : 0",
        limits,
    );
    let e = f.call(&[ints(vec![1])], 1).expect_err("runs out");
    assert_eq!(
        e,
        UdfError::OutOfFuel {
            function: "redos".into(),
            fuel: 1_000_000
        }
    );
}
