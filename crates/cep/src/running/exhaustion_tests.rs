//! A pattern told that its input is exhausted matches every row waiting for the watermark and
//! ends its partial matches (those waiting at `$` complete, the others fail, a `within` times
//! out those past it), as at the end of input, says that its output is exhausted too, and
//! emits nothing after: the same rows, in the same order, as a run told only of the +∞ and
//! the end. Either way every row comes before the +∞ goes on (a row after it would be late
//! for an event-time operator downstream, and after the end for a lookup join's side).

use anduin_operator_api::Operator;
use anduin_types::Watermark;

use super::test_op::{batch, pattern, Event, Seen};

/// Rises above 50 followed by drops below 10, of two sensors; the watermark passes the first
/// rows, and the last rows of each sensor wait for it.
const ROWS: &[(i64, i64, i64)] = &[
    (1_000, 1, 60),
    (2_000, 1, 5),
    (3_000, 2, 70),
    (4_000, 1, 4),
    (5_000, 1, 80),
    (6_000, 2, 3),
    (7_000, 1, 2),
    (8_000, 2, 90),
];

/// The events of a run of a pattern with `params` over [`ROWS`] with the watermark at 4.5 s,
/// then (if `exhausted`) its input's exhaustion, then the end of event time and of input.
fn run(params: &str, exhausted: bool) -> Vec<Event> {
    let mut op = pattern(params);
    let mut out = Seen::default();
    op.process_batch(0, batch(&ROWS[..5]), &mut out)
        .expect("rows");
    op.handle_watermark(Watermark(4_500), &mut out)
        .expect("a watermark");
    op.process_batch(0, batch(&ROWS[5..]), &mut out)
        .expect("rows");
    if exhausted {
        assert!(
            op.on_input_exhausted(0, &mut out).expect("told"),
            "its output is exhausted with its input"
        );
        out.0.push(Event::Exhausted);
    }
    let forwarded = op
        .handle_watermark(Watermark::MAX, &mut out)
        .expect("the end of event time");
    assert_eq!(forwarded, Some(Watermark::MAX));
    out.0.push(Event::End);
    op.on_end_of_input(&mut out).expect("the end");
    out.0
}

/// A pattern with `params` emits everything before the end of event time, and told of its
/// input's exhaustion before that, the same rows then and nothing after; returns the rows.
fn same_with_exhaustion(params: &str) -> Vec<Event> {
    let ended = run(params, false);
    assert_eq!(
        ended.last(),
        Some(&Event::End),
        "no row after the end of event time: {ended:?}"
    );
    let exhausted = run(params, true);
    assert_eq!(
        exhausted[exhausted.len() - 2..],
        [Event::Exhausted, Event::End],
        "nothing after its output said it was exhausted: {exhausted:?}"
    );
    assert_eq!(
        exhausted[..exhausted.len() - 2],
        ended[..ended.len() - 1],
        "{params}"
    );
    ended[..ended.len() - 1].to_vec()
}

#[test]
fn a_pattern_ends_its_partial_matches_when_its_input_is_exhausted() {
    // Greedy: sensor 1's second match (5 s, then drops) grows until the input ends.
    let greedy = same_with_exhaustion(
        r#"  param pattern = "UP DOWN+"
  param define = "UP AS value > 50, DOWN AS value < 10"
  param measures = "UP.ts AS up_ts, LAST(DOWN.ts) AS down_ts""#,
    );
    assert_eq!(greedy.len(), 3, "{greedy:?}");
    // `$`: only the matches that reach the end of their partition.
    let anchored = same_with_exhaustion(
        r#"  param pattern = "UP DOWN+ $"
  param define = "UP AS value > 50, DOWN AS value < 10"
  param measures = "UP.ts AS up_ts, LAST(DOWN.ts) AS down_ts""#,
    );
    assert_eq!(anchored.len(), 1, "{anchored:?}");
    // A time bound: the partial match of sensor 2 at 8 s times out at the end.
    let timed = same_with_exhaustion(
        r#"  param pattern = "UP DOWN"
  param define = "UP AS value > 50, DOWN AS value < 10"
  param measures = "UP.ts AS up_ts, DOWN.ts AS down_ts"
  param within = "10s"
  param timeout_output = "late""#,
    );
    assert!(
        timed.contains(&Event::Row(1, vec![Some(2), Some(8_000), None])),
        "{timed:?}"
    );
}
