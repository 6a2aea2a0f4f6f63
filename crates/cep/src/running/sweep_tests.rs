//! The end of the input forgets, as it feeds the rows still waiting, the partitions that no
//! row to come reaches and whose partial matches have ended with nothing to report (see
//! `sweep.rs`): the same rows come out, in the same order, as when every row is fed before
//! any partial match ends; and the partial matches held at once stay those of the bound.

use anduin_operator_api::Operator;
use anduin_types::Watermark;

use super::super::test_rng::Rng;
use super::test_op::{batch, pattern, random_input, Event, Input, Seen};
use super::PatternOp;

/// Nexmark's cep_q3 on (sensor, value): a drop of more than 50 within the bound.
const DROP: &str = r#"  param pattern = "A B* C"
  param define = "B AS B.value > A.value - 50, C AS C.value < A.value - 50"
  param measures = "A.ts AS a_ts, C.ts AS c_ts, A.value - C.value AS diff""#;

/// A pattern with `params` that sweeps at the end of the input or not.
fn op(params: &str, sweeps: bool) -> PatternOp {
    let mut op = pattern(params);
    op.no_sweep = !sweeps;
    op
}

/// Feeds `input`, then the end of event time and of input, to `op`; returns what it emitted,
/// in order, and the most partial matches it held at once.
fn run(mut op: PatternOp, input: &Input) -> (Vec<Event>, u64) {
    let mut out = Seen::default();
    for (rows, wm) in input {
        op.process_batch(0, batch(rows), &mut out).expect("rows");
        if let Some(wm) = wm {
            op.handle_watermark(Watermark(*wm), &mut out)
                .expect("a watermark");
        }
    }
    op.handle_watermark(Watermark::MAX, &mut out)
        .expect("the end of event time");
    op.on_end_of_input(&mut out).expect("the end");
    let peak = (op.metrics().into_iter())
        .find(|(name, _)| *name == "peak_partial_matches")
        .map_or(0, |(_, n)| n);
    (out.0, peak)
}

#[test]
fn the_end_of_the_input_emits_what_it_emitted_before_it_swept_in_the_same_order() {
    let patterns = [
        format!("{DROP}\n  param within = \"30ms\""),
        format!("{DROP}\n  param within = \"30ms\"\n  param timeout_output = \"late\""),
        r#"  param pattern = "(A | B)* C"
  param define = "A AS value > 60, B AS value <= 60, C AS value < 10"
  param measures = "COUNT(A.*) AS a, LAST(C.ts) AS c_ts"
  param within = "20ms""#
            .to_string(),
        r#"  param pattern = "A+? B"
  param define = "A AS value > 20, B AS value < 40"
  param measures = "FIRST(A.ts) AS a_ts, B.ts AS b_ts"
  param after_match = "skip to next row"
  param rows_per_match = "all"
  param within = "40ms""#
            .to_string(),
        r#"  param pattern = "A B"
  param define = "B AS B.value < PREV(B.value)"
  param measures = "A.ts AS a_ts, B.ts AS b_ts"
  param within = "10ms""#
            .to_string(),
    ];
    let mut rng = Rng(1818);
    let (mut rows, mut lower) = (0, 0);
    for round in 0..40 {
        let input = random_input(&mut rng, |b, n| b < n / 2);
        for params in &patterns {
            let (swept, peak) = run(op(params, true), &input);
            let (whole, whole_peak) = run(op(params, false), &input);
            assert_eq!(swept, whole, "round {round}, {params}\n{input:?}");
            assert!(peak <= whole_peak, "round {round}, {params}");
            rows += swept.len();
            lower += usize::from(peak < whole_peak);
        }
    }
    assert!(
        rows > 1_000 && lower >= 5,
        "{rows} rows, {lower} lower peaks"
    );
}

#[test]
fn partial_matches_held_at_the_end_stay_those_of_the_bound() {
    // 20,000 sensors of one row each, a millisecond apart, each a partial match for 5 s; a
    // watermark 4 s behind every 100 rows: at the end 4,000 rows wait, beside the 5,000
    // partial matches of the last 5 s before the watermark.
    let input: Vec<_> = (0..200)
        .map(|b| {
            let rows: Vec<_> = (b * 100..b * 100 + 100).map(|i| (i, i, 100)).collect();
            (rows, Some(b * 100 + 99 - 4_000))
        })
        .collect();
    let params = format!("{DROP}\n  param within = \"5s\"");
    let (swept, peak) = run(op(&params, true), &input);
    let (whole, whole_peak) = run(op(&params, false), &input);
    assert_eq!(swept, whole);
    assert!(swept.is_empty(), "no drop, nothing timed out shown");
    assert!(whole_peak >= 9_000, "{whole_peak}");
    // Up to 5,100 while the watermarks come; a few hundred more at the end, of partitions
    // that share a count with a row still to come (see `Sweep`).
    assert!(peak <= 5_600, "{peak} partial matches at once");
}
