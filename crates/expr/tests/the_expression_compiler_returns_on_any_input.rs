//! Fuzzing the expression compiler (issue 22, point 6): random sequences of expression tokens,
//! with long chains and deep nesting among them, compiled as a condition, a projection and
//! aggregates, and evaluated when they compile. Each returns a compiled expression or an error
//! located in the text, without a panic and without overflowing a thread's modest stack (as a
//! task's thread may have); inputs are of bounded size, so that the time per case is bounded
//! without timing it. A case that has not returned after [`LIVENESS`] (a hang: they take
//! milliseconds) fails with its text, as a case that panics does, instead of stalling the run
//! until the test runner kills it without saying which text hung (as a nest of 130 `CAST(`s
//! once did: `calls_the_parser_would_read_again_and_again_are_refused_at_once`).
//! `PROPTEST_CASES=N` runs more cases than the default.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use anduin_expr::{compile_aggregates, compile_predicate, compile_projection, Scope};
use arrow::array::{Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use proptest::prelude::*;

const TOKENS: [&str; 42] = [
    "value",
    "sensor",
    "name",
    "s.value",
    "1",
    "0",
    "2.5",
    "'a'",
    "NULL",
    "(",
    ")",
    ",",
    "+",
    "-",
    "*",
    "/",
    "%",
    "||",
    "=",
    "<",
    ">=",
    "<>",
    "AND",
    "OR",
    "NOT",
    "IS NULL",
    "IN (1, 2)",
    "BETWEEN 1 AND 3",
    "LIKE 'a%'",
    "CASE WHEN",
    "THEN",
    "ELSE",
    "END",
    "abs(",
    "coalesce(",
    "CAST(",
    "AS BIGINT)",
    "upper(",
    "COUNT(*)",
    "SUM(",
    "AS x",
    "9223372036854775807",
];

/// A sequence of tokens, with runs repeated: chains and nestings of up to 1 200 of them.
fn soup() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            0..TOKENS.len(),
            prop_oneof![9 => 1..3usize, 1 => 100..1_200usize],
        ),
        1..30,
    )
    .prop_map(|parts| {
        parts
            .into_iter()
            .map(|(t, n)| format!("{} ", TOKENS[t]).repeat(n))
            .collect()
    })
}

/// `value + value + …` with `n` operators, or `n` parentheses around `value > 0`.
fn deep() -> impl Strategy<Value = String> {
    (0..3usize, 0..1_100usize).prop_map(|(kind, n)| match kind {
        0 => format!("{} > 0", vec!["value"; n + 1].join(" + ")),
        1 => format!("{}value > 0{}", "(".repeat(n / 5), ")".repeat(n / 5)),
        _ => format!("{}value > 0", "NOT ".repeat(n)),
    })
}

fn scope() -> Scope {
    Scope::new(
        "s",
        Arc::new(Schema::new(vec![
            Field::new("sensor", DataType::Int64, true),
            Field::new("value", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
        ])),
    )
}

/// How long a case may go without returning before it counts as hung: a liveness guard, far
/// above the milliseconds a case takes, not a measure of speed.
const LIVENESS: Duration = Duration::from_secs(60);

/// Compiles `text` every way, and evaluates what compiles, on a thread with a 1 MiB stack; an
/// error if that panics or has not returned after [`LIVENESS`] (the thread is then left to run
/// on: nothing can stop it, and the test fails).
fn compile_and_run(text: String) -> Result<(), String> {
    let (done, returned) = mpsc::channel();
    let worker = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            let scope = scope();
            let batch = RecordBatch::try_new(
                Arc::clone(&scope.schema),
                vec![
                    Arc::new(Int64Array::from(vec![Some(1), None, Some(i64::MAX)])),
                    Arc::new(Int64Array::from(vec![Some(-3), Some(0), Some(i64::MIN)])),
                    Arc::new(StringArray::from(vec![Some("a"), None, Some("b")])),
                ],
            )
            .expect("a batch");
            if let Ok(p) = compile_predicate(&text, &scope) {
                let _ = p.evaluate_bool(&batch);
            }
            if let Ok(cols) = compile_projection(&text, &scope) {
                for c in cols {
                    let _ = c.evaluate(&batch);
                }
            }
            if let Ok(aggs) = compile_aggregates(&text, &scope) {
                for a in aggs {
                    let _ = a.arguments(&batch);
                    let _ = a.filter(&batch);
                }
            }
            let _ = done.send(());
        })
        .map_err(|e| e.to_string())?;
    match returned.recv_timeout(LIVENESS) {
        // Sent when it returned; dropped unsent when it panicked.
        Ok(()) | Err(RecvTimeoutError::Disconnected) => worker.join().map_err(|p| {
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        }),
        Err(RecvTimeoutError::Timeout) => Err(format!("no answer after {LIVENESS:?}: hung")),
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(48)
}

/// `cases` cases, with shrinking cut short after a minute: shrinking a hung case costs
/// [`LIVENESS`] per step, and its text is reported either way.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        max_shrink_time: 60_000,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(cases()))]

    #[test]
    fn random_tokens_compile_or_are_refused(text in soup()) {
        // Shown if the case aborts the test (a stack overflow), which proptest cannot report.
        eprintln!("case: {} bytes", text.len());
        let shown = text.clone();
        let outcome = compile_and_run(text);
        prop_assert!(outcome.is_ok(), "{:?} on {shown}", outcome);
    }
}

proptest! {
    // Each of these compiles up to a thousand levels: fewer cases.
    #![proptest_config(config(cases().div_ceil(4)))]

    #[test]
    fn long_chains_and_deep_nesting_compile_and_run_or_are_refused(text in deep()) {
        let shown = text.clone();
        let outcome = compile_and_run(text);
        prop_assert!(outcome.is_ok(), "{:?} on {shown}", outcome);
    }
}
