//! A pattern asked to stop gives up feeding rows a grace later (issue 18, M3: an hour of
//! partial matches piled up held a SIGTERM): between two rows, so that the rows not fed wait
//! on, in its snapshot too, and the watermark it forwards does not pass them. A run resumed
//! from that snapshot writes what a run never stopped writes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anduin_operator_api::{BuildContext, Operator, RestoreIn, StopRequest, GRACE};
use anduin_types::{Epoch, ManualClock, Watermark};

use super::super::test_rng::Rng;
use super::shed_tests::Memory;
use super::test_op::{batch, pattern_built, random_input, schema, Event, Input, Seen};

/// Nexmark's cep_q3 on (sensor, value), with a time bound.
const DROP: &str = r#"  param partition_by = "sensor"
  param pattern = "A B* C"
  param define = "B AS B.value > A.value - 50, C AS C.value < A.value - 50"
  param measures = "A.ts AS a_ts, C.ts AS c_ts, A.value - C.value AS diff"
  param within = "30ms""#;

/// The rows emitted, sorted (the order of partitions at one watermark is the table's).
fn rows(out: Seen) -> Vec<Event> {
    let mut rows: Vec<Event> = out
        .0
        .into_iter()
        .filter(|e| matches!(e, Event::Row(..)))
        .collect();
    rows.sort();
    rows
}

/// Feeds `input` from batch `from` on, each batch then its watermark; then the end.
fn feed(op: &mut super::PatternOp, input: &Input, from: usize, out: &mut Seen) {
    for (rows, wm) in &input[from..] {
        op.process_batch(0, batch(rows), out).expect("rows");
        if let Some(wm) = wm {
            op.handle_watermark(Watermark(*wm), out)
                .expect("a watermark");
        }
    }
    op.on_end_of_input(out).expect("the end");
}

#[test]
fn a_pattern_asked_to_stop_keeps_the_rows_it_gave_up_for_the_run_resumed_from_its_snapshot() {
    let mut gave_up = 0;
    for seed in 0..40u64 {
        let mut rng = Rng(seed);
        let input = random_input(&mut rng, |_, _| true);
        let mut out = Seen::default();
        feed(
            &mut pattern_built(schema(), DROP, &BuildContext::default()),
            &input,
            0,
            &mut out,
        );
        let whole = rows(out);

        let flag = Arc::new(AtomicBool::new(false));
        let clock = Arc::new(ManualClock::new());
        let ctx = BuildContext {
            stop: StopRequest::new(Arc::clone(&flag)),
            clock: Arc::clone(&clock) as anduin_types::SharedClock,
            ..BuildContext::default()
        };
        let mut op = pattern_built(schema(), DROP, &ctx);
        let mut out = Seen::default();
        let stop_at = input.len() / 3;
        let snapshot_at = 2 * input.len() / 3;
        let mut forwarded = None;
        for (i, (rows, wm)) in input[..snapshot_at].iter().enumerate() {
            if i == stop_at {
                flag.store(true, Ordering::Relaxed);
            }
            op.process_batch(0, batch(rows), &mut out).expect("rows");
            if let Some(wm) = wm {
                let sent = op
                    .handle_watermark(Watermark(*wm), &mut out)
                    .expect("a watermark");
                if op.pending.peek().is_some_and(|p| p.ts < op.watermark) {
                    // Rows given up wait behind the watermark: the one forwarded stays
                    // where it was.
                    assert_eq!(sent, forwarded.or(sent), "seed {seed}");
                }
                forwarded = sent;
            }
            if i >= stop_at {
                // The grace started at the first row fed after the stop: it is over now.
                clock.advance(GRACE);
            }
        }
        if op.pending.peek().is_some_and(|p| p.ts < op.watermark) {
            gave_up += 1;
        }
        let mut checkpoint = Memory::default();
        op.snapshot(&mut checkpoint).expect("a snapshot");
        let mut resumed = pattern_built(schema(), DROP, &BuildContext::default());
        resumed
            .restore(RestoreIn {
                epoch: Epoch(1),
                inline: checkpoint.inline,
                files: vec![Box::new(std::io::Cursor::new(checkpoint.bytes))],
            })
            .expect("restores");
        feed(&mut resumed, &input, snapshot_at, &mut out);
        assert_eq!(rows(out), whole, "seed {seed}");
    }
    assert!(gave_up >= 20, "most runs gave up rows: {gave_up} of 40");
}
