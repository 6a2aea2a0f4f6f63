//! A watermark ends the partial matches whose time bound it passes by visiting the partitions
//! queued by then (`store/deadlines.rs`), not every partition with a partial match: the same
//! rows come out, at the same watermarks, and a partition is visited about once per bound
//! instead of at every watermark while its partial matches last.

use anduin_operator_api::Operator;
use anduin_types::Watermark;

use super::super::test_rng::Rng;
use super::test_op::{batch, pattern, random_input, Event, Input, Seen};
use super::PatternOp;

/// Nexmark's cep_q3 on (sensor, value): a drop of more than 50 within the bound.
const DROP: &str = r#"  param pattern = "A B* C"
  param define = "B AS B.value > A.value - 50, C AS C.value < A.value - 50"
  param measures = "A.ts AS a_ts, C.ts AS c_ts, A.value - C.value AS diff""#;

/// The rows a run emitted, each with the number of the input (batch, watermark, end) after
/// which it came, sorted within each: the order of partitions at one watermark is the
/// table's, not the input's.
fn emitted(out: &Seen, marks: &[usize]) -> Vec<(usize, Event)> {
    let mut rows: Vec<(usize, Event)> = Vec::new();
    let mut from = 0;
    for (step, upto) in marks.iter().enumerate() {
        rows.extend(out.0[from..*upto].iter().map(|e| (step, e.clone())));
        from = *upto;
    }
    rows.sort();
    rows
}

/// Feeds `batches` (each followed by its watermark, if any), then the end of event time and
/// of input, to `op`; returns what it emitted (see [`emitted`]).
fn run(mut op: PatternOp, batches: &Input) -> Vec<(usize, Event)> {
    let mut out = Seen::default();
    let mut marks = Vec::new();
    for (rows, wm) in batches {
        op.process_batch(0, batch(rows), &mut out).expect("rows");
        marks.push(out.0.len());
        if let Some(wm) = wm {
            op.handle_watermark(Watermark(*wm), &mut out)
                .expect("a watermark");
            marks.push(out.0.len());
        }
    }
    op.handle_watermark(Watermark::MAX, &mut out)
        .expect("the end of event time");
    op.on_end_of_input(&mut out).expect("the end");
    marks.push(out.0.len());
    emitted(&out, &marks)
}

/// A pattern with `params` that visits every partition with a partial match at every
/// watermark (`all`), or only those queued.
fn op(params: &str, all: bool) -> PatternOp {
    let mut op = pattern(params);
    op.visit_all = all;
    op
}

#[test]
fn a_watermark_visits_the_partitions_whose_bound_it_passes_not_every_one_in_flight() {
    // 2,000 sensors of one row each, a millisecond apart, each a partial match for 1 s; a
    // watermark every 10 rows.
    let n = 2_000;
    let batches: Vec<_> = (0..n / 10)
        .map(|b| {
            let rows: Vec<_> = (b * 10..b * 10 + 10).map(|i| (i, i, 100)).collect();
            (rows, Some(b * 10 + 9))
        })
        .collect();
    let params = format!("{DROP}\n  param within = \"1s\"");
    let mut queued = op(&params, false);
    let mut all = op(&params, true);
    let mut seen = (Seen::default(), Seen::default());
    for (rows, wm) in &batches {
        for (o, out) in [(&mut queued, &mut seen.0), (&mut all, &mut seen.1)] {
            o.process_batch(0, batch(rows), out).expect("rows");
            o.handle_watermark(Watermark(wm.expect("each has one")), out)
                .expect("a watermark");
        }
    }
    // Each partition once, when its bound passes (those of the last second at the end).
    assert!(
        queued.visits <= n as u64,
        "{} visits of {n} partitions",
        queued.visits
    );
    // Every partition in flight at every watermark: up to 100 of them each time.
    assert!(all.visits > 50 * n as u64, "{} visits", all.visits);
    assert_eq!(seen.0 .0, seen.1 .0, "nothing matched, nothing timed out");
}

#[test]
fn the_queue_of_deadlines_finds_what_visiting_every_partition_finds_on_random_input() {
    let patterns = [
        format!("{DROP}\n  param within = \"30ms\""),
        format!("{DROP}\n  param within = \"30ms\"\n  param timeout_output = \"late\""),
        r#"  param pattern = "UP DOWN+ $"
  param define = "UP AS value > 50, DOWN AS value < 60"
  param measures = "UP.ts AS up_ts, LAST(DOWN.ts) AS down_ts"
  param within = "25ms"
  param timeout_output = "late""#
            .to_string(),
        r#"  param pattern = "A+? B"
  param define = "A AS value > 20, B AS value < 40"
  param measures = "FIRST(A.ts) AS a_ts, B.ts AS b_ts"
  param after_match = "skip to next row"
  param rows_per_match = "all"
  param within = "40ms""#
            .to_string(),
        r#"  param pattern = "(A | B)* C"
  param define = "A AS value > 60, B AS value <= 60, C AS value < 10"
  param measures = "COUNT(A.*) AS a, LAST(C.ts) AS c_ts"
  param within = "20ms""#
            .to_string(),
    ];
    let mut rng = Rng(18);
    // Rows emitted on each port over the rounds: matches and partial matches timed out.
    let mut ports = [0; 2];
    for round in 0..40 {
        let input = random_input(&mut rng, |_, _| true);
        for params in &patterns {
            let queued = run(op(params, false), &input);
            let all = run(op(params, true), &input);
            assert_eq!(queued, all, "round {round}, {params}\n{input:?}");
            for (_, e) in &queued {
                if let Event::Row(port, _) = e {
                    ports[*port] += 1;
                }
            }
        }
    }
    assert!(ports.iter().all(|n| *n > 100), "{ports:?}");
}
