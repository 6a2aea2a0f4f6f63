//! State time-to-live (`param state_ttl`, `anduin run --state-ttl`) on the updating
//! operators, on a clock moved by hand: a key not written for the time-to-live is forgotten
//! and starts afresh when it comes again (its earlier result not retracted), one written
//! within it goes on; without a time-to-live the same input keeps every key. The state of
//! an endless stream of distinct keys stays bounded; a restore keeps the keys' ages on the
//! restoring process's clock; and the param is refused, naming the operator, on one that
//! keeps no updating state per key.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use anduin_operator_api::{Collector, Operator, OperatorError};
use anduin_types::{ChangeKind, ManualClock, SharedClock, Watermark, CHANGE_COLUMN};
use arrow::array::{Array, Int8Array};
use arrow::record_batch::RecordBatch;

const T: &str = r#"type name = "T" { column name = "ts", type = "timestamp" column name = "k", type = "int" column name = "v", type = "int" }"#;

/// The operator `op` of type `kind` with `params`, over one input `s` of `T` (two, `l` and
/// `r`, for a join), on `clock`.
fn op(kind: &str, params: &str, clock: &Arc<ManualClock>) -> Box<dyn Operator> {
    let inputs = if kind == "regular_join" {
        r#"operator name = "gl", type = "generator" { output name = "l", type = "T" }
operator name = "gr", type = "generator" { output name = "r", type = "T" }"#
    } else {
        r#"operator name = "g", type = "generator" { output name = "s", type = "T" }"#
    };
    let names = if kind == "regular_join" {
        r#"input name = "l" input name = "r""#
    } else {
        r#"input name = "s""#
    };
    let src = format!(
        r#"{T}
{inputs}
operator name = "op", type = "{kind}" {{ {names} {params} output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    );
    common::operator_on_clock(&src, Arc::clone(clock) as SharedClock)
}

/// `(ts, k, v)` rows of `T`.
fn rows(rows: &[(i64, i64, i64)]) -> RecordBatch {
    let with_tags: Vec<(i64, i64, i64, &str)> =
        rows.iter().map(|&(t, k, v)| (t, k, v, "")).collect();
    let b = common::pattern_batch(&with_tags);
    b.project(&[0, 1, 2]).expect("three columns")
}

/// An operator's rows: its cells but the time, and the change kind's symbol.
#[derive(Default)]
struct Out(Vec<String>);

impl Collector for Out {
    fn collect(&mut self, _port: usize, b: RecordBatch) -> Result<(), OperatorError> {
        let mut text = common::Formatted::new(" ");
        text.collect(0, b.clone())?;
        let kinds = b
            .schema()
            .index_of(CHANGE_COLUMN)
            .ok()
            .and_then(|i| b.column(i).as_any().downcast_ref::<Int8Array>().cloned());
        for (i, row) in text.rows.into_iter().enumerate() {
            let mut cells: Vec<&str> = row.split(' ').collect();
            let symbol = kinds.as_ref().map(|k| {
                let _ = cells.pop();
                ChangeKind::from_code(k.value(i)).map_or("?", ChangeKind::symbol)
            });
            let cells: Vec<&str> = cells
                .into_iter()
                .filter(|c| !c.starts_with("1970-"))
                .chain(symbol)
                .collect();
            self.0.push(cells.join(" "));
        }
        Ok(())
    }
}

/// Feeds `batch` on input `input` and returns what `op` emits (with the watermark after it
/// at `watermark`, if given).
fn feed(
    op: &mut Box<dyn Operator>,
    input: usize,
    batch: RecordBatch,
    watermark: Option<i64>,
) -> Vec<String> {
    let mut out = Out::default();
    op.process_batch(input, batch, &mut out).expect("runs");
    if let Some(w) = watermark {
        let _ = op.handle_watermark(Watermark(w), &mut out).expect("runs");
    }
    out.0
}

fn metric(op: &dyn Operator, name: &str) -> u64 {
    op.metrics()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map_or_else(|| panic!("no metric {name}"), |(_, v)| v)
}

const GROUP: &str = r#"param keys = "k" param aggregates = "COUNT(*) AS n, SUM(v) AS total""#;

/// Key 1 written at 0 s, key 2 at 0 s and 40 s; at 70 s both come again.
fn group_by_at_70s(ttl: &str) -> Vec<String> {
    let clock = Arc::new(ManualClock::new());
    let mut g = op("aggregate", &format!("{GROUP} {ttl}"), &clock);
    let _ = feed(&mut g, 0, rows(&[(1, 1, 10), (1, 2, 5)]), None);
    clock.advance(Duration::from_secs(40));
    let _ = feed(&mut g, 0, rows(&[(2, 2, 1)]), None);
    clock.advance(Duration::from_secs(30));
    feed(&mut g, 0, rows(&[(3, 1, 3), (3, 2, 1)]), None)
}

#[test]
fn a_group_idle_longer_than_the_ttl_starts_afresh_and_one_written_within_it_goes_on() {
    assert_eq!(
        group_by_at_70s(r#"param state_ttl = "1m""#),
        ["1 1 3 +I", "2 2 6 -U", "2 3 7 +U"],
        "key 1 (idle 70 s) starts from scratch; its earlier row is not retracted"
    );
    assert_eq!(
        group_by_at_70s(""),
        ["1 1 10 -U", "1 2 13 +U", "2 2 6 -U", "2 3 7 +U"],
        "without a time-to-live every group goes on"
    );
    assert_eq!(
        group_by_at_70s(r#"param state_ttl = "0s""#),
        group_by_at_70s(""),
        "0s: none"
    );
}

/// Left rows of keys 1 and 2 at 0 s, one more of key 2 at 50 s; at 100 s right rows of both.
fn join_at_100s(ttl: &str) -> Vec<String> {
    let clock = Arc::new(ManualClock::new());
    let mut j = op(
        "regular_join",
        &format!(r#"param on = "l.k = r.k" {ttl}"#),
        &clock,
    );
    let _ = feed(&mut j, 0, rows(&[(1, 1, 10), (1, 2, 20)]), None);
    clock.advance(Duration::from_secs(50));
    let _ = feed(&mut j, 0, rows(&[(2, 2, 21)]), None);
    clock.advance(Duration::from_secs(50));
    feed(&mut j, 1, rows(&[(3, 1, 100), (3, 2, 200)]), None)
}

#[test]
fn a_join_rows_side_idle_longer_than_the_ttl_is_matched_no_more() {
    assert_eq!(
        join_at_100s(r#"param state_ttl = "1m""#),
        ["2 20 2 200", "2 21 2 200"],
        "key 1's left row expired; key 2's left side was written at 50 s and keeps both rows"
    );
    assert_eq!(join_at_100s(""), ["1 10 1 100", "2 20 2 200", "2 21 2 200"]);
}

/// The top row of keys 1 and 2 at 0 s, key 2 written again at 50 s; at 100 s lower rows.
fn top_at_100s(ttl: &str) -> Vec<String> {
    let clock = Arc::new(ManualClock::new());
    let params = format!(r#"param keys = "k" param order = "v DESC" param limit = 1 {ttl}"#);
    let mut t = op("top_n", &params, &clock);
    let _ = feed(&mut t, 0, rows(&[(1, 1, 10), (1, 2, 10)]), None);
    clock.advance(Duration::from_secs(50));
    let _ = feed(&mut t, 0, rows(&[(2, 2, 1)]), None);
    clock.advance(Duration::from_secs(50));
    feed(&mut t, 0, rows(&[(3, 1, 5), (3, 2, 5)]), None)
}

#[test]
fn a_top_n_partition_idle_longer_than_the_ttl_starts_empty() {
    assert_eq!(
        top_at_100s(r#"param state_ttl = "1m""#),
        ["1 5 +I"],
        "key 1's partition starts empty: 5 is its first row"
    );
    assert_eq!(top_at_100s(""), Vec::<String>::new(), "10 stays first");
}

/// Keep-first deduplication: key 1's first row at 0 s, another at 2 minutes.
fn deduplicated_at_2m(ttl: &str) -> Vec<String> {
    let clock = Arc::new(ManualClock::new());
    let params =
        format!(r#"param keys = "k" param order = "ts" param limit = 1 param time = "ts" {ttl}"#);
    let mut t = op("top_n", &params, &clock);
    assert_eq!(feed(&mut t, 0, rows(&[(1, 1, 10)]), Some(1)), ["1 10"]);
    clock.advance(Duration::from_secs(120));
    feed(&mut t, 0, rows(&[(5, 1, 11)]), Some(5))
}

#[test]
fn a_deduplicated_key_idle_longer_than_the_ttl_emits_its_next_row_again() {
    assert_eq!(deduplicated_at_2m(r#"param state_ttl = "1m""#), ["1 11"]);
    assert_eq!(deduplicated_at_2m(""), Vec::<String>::new());
}

/// A row of keys 1 and 2 released at 0 s, key 2 written again at 30 s; rows of both at 80 s.
fn over_at_80s(ttl: &str) -> Vec<String> {
    let clock = Arc::new(ManualClock::new());
    let params = format!(
        r#"param keys = "k" param time = "ts" param frame = "rows unbounded" param aggregates = "COUNT(*) AS n" {ttl}"#
    );
    let mut o = op("over", &params, &clock);
    let _ = feed(&mut o, 0, rows(&[(1, 1, 10), (1, 2, 10)]), Some(2));
    clock.advance(Duration::from_secs(30));
    let _ = feed(&mut o, 0, rows(&[(2, 2, 11)]), Some(3));
    clock.advance(Duration::from_secs(50));
    feed(&mut o, 0, rows(&[(3, 1, 12), (3, 2, 12)]), Some(4))
}

#[test]
fn an_over_partition_idle_longer_than_the_ttl_starts_empty() {
    assert_eq!(
        over_at_80s(r#"param state_ttl = "1m""#),
        ["1 12 1", "2 12 3"],
        "key 1 counts from scratch; key 2 (written at 30 s) goes on"
    );
    assert_eq!(over_at_80s(""), ["1 12 2", "2 12 3"]);
}

/// As [`over_at_80s`], over an updating input (its own operator, `UpdatingOver`).
fn updating_over_at_80s(ttl: &str) -> Vec<String> {
    use anduin_operator_api::{Bound, BuildContext};
    use arrow::array::Int8Array;
    let clock = Arc::new(ManualClock::new());
    let src = format!(
        r#"operator name = "op", type = "over" {{ input name = "s" param keys = "k" param time = "ts" param frame = "rows unbounded" param aggregates = "COUNT(*) AS n" {ttl} output name = "out" }}"#
    );
    let spec = anduin_spec::parse_flow(&src).expect("parses");
    let def = spec.operators.first().expect("one operator");
    let binding =
        anduin_relational::over::bind(def, &[("s", common::over::schema(true))]).expect("binds");
    let Bound::Operator(factory) = binding.bound else {
        panic!("an operator")
    };
    let mut o = factory(&BuildContext {
        clock: Arc::clone(&clock) as SharedClock,
        ..BuildContext::default()
    })
    .expect("builds");
    let inserts = |rows: &[(i64, i64, Option<i64>, i64)]| {
        let mut columns = common::over::columns(rows.iter());
        columns.push(Arc::new(Int8Array::from(vec![0i8; rows.len()])));
        common::over::batch(columns, true)
    };
    let _ = feed(
        &mut o,
        0,
        inserts(&[(1, 1, Some(10), 1), (2, 1, Some(10), 2)]),
        None,
    );
    clock.advance(Duration::from_secs(30));
    let _ = feed(&mut o, 0, inserts(&[(2, 2, Some(11), 3)]), None);
    clock.advance(Duration::from_secs(50));
    feed(
        &mut o,
        0,
        inserts(&[(1, 3, Some(12), 4), (2, 3, Some(12), 5)]),
        None,
    )
}

#[test]
fn an_over_partition_of_an_updating_input_idle_longer_than_the_ttl_starts_empty() {
    assert_eq!(
        updating_over_at_80s(r#"param state_ttl = "1m""#),
        ["1 3 12 4 1 +I", "2 3 12 5 3 +I"]
    );
    assert_eq!(updating_over_at_80s(""), ["1 3 12 4 2 +I", "2 3 12 5 3 +I"]);
}

/// An endless stream of distinct keys, 100 a second, with a time-to-live of a minute: the
/// keys held stop growing at about a minute's worth, in memory and in the checkpointed table.
#[test]
fn the_state_of_an_endless_stream_of_distinct_keys_stays_bounded_under_a_ttl() {
    for (kind, params, input, held) in [
        ("aggregate", GROUP, 0, "peak_groups"),
        ("regular_join", r#"param on = "l.k = r.k""#, 1, "keys"),
        (
            "top_n",
            r#"param keys = "k" param order = "v DESC" param limit = 2"#,
            0,
            "partitions",
        ),
    ] {
        let clock = Arc::new(ManualClock::new());
        let mut o = op(kind, &format!(r#"{params} param state_ttl = "1m""#), &clock);
        let mut peak = 0;
        let mut checkpoints = Vec::new();
        for second in 0..600i64 {
            let batch: Vec<(i64, i64, i64)> =
                (0..100).map(|i| (second, second * 100 + i, i)).collect();
            let _ = feed(&mut o, input, rows(&batch), None);
            peak = peak.max(metric(o.as_ref(), held));
            if second % 100 == 99 {
                checkpoints.push(common::checkpoint(&mut o, !checkpoints.is_empty()));
            }
            clock.advance(Duration::from_secs(1));
        }
        assert!(
            (6_000..=6_100).contains(&peak),
            "{kind}: at most a minute of keys held, of 60 000 seen: {peak}"
        );
        assert_eq!(metric(o.as_ref(), "ttl_expired"), 60_000 - 6_000, "{kind}");
        // The checkpointed table holds what memory holds: restored, it has as many keys.
        let restored = common::restored(
            || op(kind, &format!(r#"{params} param state_ttl = "1m""#), &clock),
            checkpoints,
        );
        assert_eq!(metric(restored.as_ref(), held), 6_000, "{kind}: restored");
    }
}

#[test]
fn a_restore_keeps_the_ages_of_the_keys_on_the_restoring_clock() {
    let params = format!(r#"{GROUP} param state_ttl = "1m""#);
    let clock = Arc::new(ManualClock::new());
    let mut g = op("aggregate", &params, &clock);
    let _ = feed(&mut g, 0, rows(&[(1, 1, 10)]), None);
    clock.advance(Duration::from_secs(30));
    let _ = feed(&mut g, 0, rows(&[(2, 2, 5)]), None);
    clock.advance(Duration::from_secs(20));
    let full = common::checkpoint(&mut g, false);

    // Restored an hour later, on another clock: key 1 is 50 s old, key 2 20 s.
    let later = Arc::new(ManualClock::new());
    later.advance(Duration::from_secs(3_600));
    let mut back = common::restored(|| op("aggregate", &params, &later), vec![full]);
    later.advance(Duration::from_secs(15));
    assert_eq!(
        feed(&mut back, 0, rows(&[(3, 1, 1), (3, 2, 1)]), None),
        ["1 1 1 +I", "2 1 5 -U", "2 2 6 +U"],
        "key 1 (65 s old) starts afresh, key 2 (35 s) goes on"
    );
}

/// A checkpoint taken with a time-to-live restores without one (every key kept, the write
/// times dropped), and one taken without restores with one (every key as written at the
/// restore).
#[test]
fn a_checkpoint_restores_with_or_without_a_ttl_whichever_it_was_taken_with() {
    let with = format!(r#"{GROUP} param state_ttl = "1m""#);
    let clock = Arc::new(ManualClock::new());
    let mut g = op("aggregate", &with, &clock);
    let _ = feed(&mut g, 0, rows(&[(1, 1, 10)]), None);
    let taken_with = common::checkpoint(&mut g, false);
    let mut plain = common::restored(|| op("aggregate", GROUP, &clock), vec![taken_with]);
    clock.advance(Duration::from_secs(3_600));
    assert_eq!(
        feed(&mut plain, 0, rows(&[(2, 1, 1)]), None),
        ["1 1 10 -U", "1 2 11 +U"]
    );
    // Its next full checkpoint holds no write time any more: restored with a time-to-live,
    // the key counts as written at the restore.
    let taken_without = common::checkpoint(&mut plain, false);
    let mut again = common::restored(|| op("aggregate", &with, &clock), vec![taken_without]);
    clock.advance(Duration::from_secs(59));
    assert_eq!(
        feed(&mut again, 0, rows(&[(3, 1, 1)]), None),
        ["1 2 11 -U", "1 3 12 +U"]
    );
    clock.advance(Duration::from_secs(60));
    assert_eq!(feed(&mut again, 0, rows(&[(4, 1, 1)]), None), ["1 1 1 +I"]);
}

#[test]
fn a_state_ttl_on_an_operator_that_keeps_no_updating_state_per_key_is_refused_naming_it() {
    let src = format!(
        r#"{T}
operator name = "g", type = "generator" {{ output name = "s", type = "T" }}
operator name = "keep_big", type = "filter" {{ input name = "s" param condition = "v > 1" param state_ttl = "1h" output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    );
    let errors = common::check_errors(&src);
    assert!(
        errors.contains(r#"operator "keep_big" (type `filter`) keeps no updating state per key"#),
        "{errors}"
    );
    let bad = format!(
        r#"{T}
operator name = "g", type = "generator" {{ output name = "s", type = "T" }}
operator name = "op", type = "aggregate" {{ input name = "s" {GROUP} param state_ttl = "an hour" output name = "out" }}
operator name = "d", type = "discard" {{ input name = "out" }}"#
    );
    let errors = common::check_errors(&bad);
    assert!(
        errors.contains("param `state_ttl` of operator \"op\" must be a duration"),
        "{errors}"
    );
}
