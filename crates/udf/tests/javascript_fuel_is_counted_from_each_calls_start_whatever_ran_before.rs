//! Issue 21, from the hostile probe: QuickJS checks for an interrupt every 10 000 steps and
//! keeps its count across calls, so a call's first check came after anything from 1 to
//! 10 000 of its own steps, as the calls before it had left the count. A call near its fuel
//! passed or failed depending on the rows before it in its engine — on how the rows were cut
//! into batches. Fuel is now per call, counted from the call's start: a row runs out or not
//! on its own.

use std::sync::Arc;

use anduin_udf::{Declaration, JsFunction, Limits, UdfError};
use arrow::array::{ArrayRef, Int64Array};

/// `x` loop iterations (two steps each).
fn spin() -> JsFunction {
    JsFunction::new(
        Declaration::parse("spin(BIGINT) -> BIGINT").expect("valid"),
        &["x".to_string()],
        "for (let i = 0; i < x; i++) {} return x",
        Limits {
            fuel: 100_000,
            ..Limits::default()
        },
    )
    .expect("compiles")
}

fn outcome(f: &JsFunction, rows: Vec<i64>) -> Result<(), UdfError> {
    let n = rows.len();
    let a: ArrayRef = Arc::new(Int64Array::from(rows));
    f.call(&[a], n).map(|_| ())
}

#[test]
fn a_row_near_the_limit_runs_out_or_not_whatever_ran_before_it() {
    // 52 500 iterations, 105 000 steps: within 100 000 of fuel and the 10 000 steps to the
    // check after it, if counted from the call's start; 60 000 iterations: beyond.
    for (near, expected) in [(52_500, true), (60_000, false)] {
        let mut outcomes = Vec::new();
        // Rows before it of 0 to 10 000 steps: every count QuickJS may have been left at.
        for before in (0..20).map(|k| k * 250) {
            // The row alone, after a row of `before` steps in the same batch, and in the
            // batch after it: one outcome.
            let f = spin();
            outcomes.push(outcome(&f, vec![near]).is_ok());
            let f = spin();
            outcomes.push(outcome(&f, vec![before, near]).is_ok());
            let f = spin();
            outcome(&f, vec![before]).expect("short");
            outcomes.push(outcome(&f, vec![near]).is_ok());
        }
        assert!(
            outcomes.iter().all(|ok| *ok == expected),
            "{near} steps: {outcomes:?}"
        );
    }
}
