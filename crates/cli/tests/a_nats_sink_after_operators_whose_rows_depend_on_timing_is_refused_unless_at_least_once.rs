//! An exactly-once NATS sink names each row by its place in the order the rows reach it, so a
//! run started again from a checkpoint must make the same rows after it. A window over
//! processing time, or a filter following a control stream without `time` (its changes apply
//! to whichever rows come when they arrive), makes other rows in another run: they would get
//! the ids of the rows written before and be dropped as duplicates, silently. Such a query is
//! refused before it runs, naming the operator and what to do; `delivery = 'at-least-once'`
//! lifts it. So are (issue 19, H5) a control stream with `time` whose source has
//! `idle_timeout` (once silent that long, its watermark no longer holds the rows back, so
//! whether a change applies to a row depends on when each arrives), and a filter or map
//! calling a function whose value changes from call to call (`random()`, `PROCTIME()`),
//! named with its position; and so (issue 19, probe39) is such a call in the aggregates of a
//! window (its FILTER too) or an OVER window, and in a pattern's DEFINE or MEASURES. (A GROUP
//! BY makes an updating stream, which a NATS sink does not take; a join's condition refuses
//! such a call itself.)

use crate::common;

use common::anduin;

const SINK: &str = r#"
operator name = "out", type = "nats" {
  input name = "${INPUT}"
  param server = "nats://127.0.0.1:4222"
  param stream = "OUT"
  param subject = "out"
  ${DELIVERY}
}
"#;

const PROCESSING_TIME: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 1000
  output name = "events", type = "Event"
}
operator name = "stamp", type = "map" {
  input name = "events"
  param columns = "sensor, PROCTIME() AS pt"
  output name = "stamped"
}
operator name = "w", type = "window" {
  input name = "stamped"
  param kind = "tumbling"
  param size = "100ms"
  param time = "pt"
  param time_kind = "processing"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n"
  output name = "counts"
}
"#;

const CONTROL_WITHOUT_TIME: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
type name = "Change" {
  column name = "operator", type = "string"
  column name = "param", type = "string"
  column name = "value", type = "string"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 1000
  output name = "events", type = "Event"
}
operator name = "changes", type = "reader" {
  param path = "changes.csv"
  output name = "changeRows", type = "Change"
}
operator name = "low", type = "filter" {
  input name = "events"
  control name = "changeRows"
  param condition = "value < 42"
  output name = "kept", type = "Event"
}
"#;

const CONTROL_WITH_AN_IDLE_SOURCE: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
type name = "Change" {
  column name = "operator", type = "string"
  column name = "param", type = "string"
  column name = "value", type = "string"
  column name = "ts", type = "timestamp"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 1000
  output name = "events", type = "Event"
}
operator name = "changes", type = "reader" {
  param path = "changes.csv"
  param event_time = "ts"
  param idle_timeout = "5s"
  output name = "changeRows", type = "Change"
}
operator name = "low", type = "filter" {
  input name = "events"
  control name = "changeRows", time = "ts"
  param condition = "value < 42"
  output name = "kept", type = "Event"
}
"#;

const VOLATILE: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 1000
  output name = "events", type = "Event"
}
operator name = "sample", type = "filter" {
  input name = "events"
  param condition = "random() < 0.5"
  output name = "kept", type = "Event"
}
"#;

/// The events with event time that the operators below read (each is written after it, so
/// that the positions the errors name are those of the whole text).
const TIMED_EVENTS: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 1000
  param event_time = "ts"
  output name = "events", type = "Event"
}
"#;

/// `operator` after [`TIMED_EVENTS`].
fn timed(operator: &str) -> String {
    format!("{TIMED_EVENTS}{operator}")
}

const IN_A_WINDOW_FILTER: &str = r#"operator name = "w", type = "window" {
  input name = "events"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, COUNT(*) FILTER (WHERE random() < 0.5) AS some"
  output name = "counts"
}
"#;

const IN_AN_OVER_WINDOW: &str = r#"operator name = "last4", type = "over" {
  input name = "events"
  param keys = "sensor"
  param time = "ts"
  param frame = "rows 3"
  param aggregates = "SUM(value) AS total, MAX(value * random()) AS noisy"
  output name = "stats"
}
"#;

const IN_A_PATTERN_DEFINE: &str = r#"operator name = "dips", type = "pattern" {
  input name = "events"
  param partition_by = "sensor"
  param order_by = "ts"
  param pattern = "A B+"
  param define = "B AS B.value < PREV(B.value) * random()"
  param measures = "A.ts AS a_ts, COUNT(B.*) AS b_cnt"
  output name = "dips"
}
"#;

const IN_A_PATTERN_MEASURE: &str = r#"operator name = "dips", type = "pattern" {
  input name = "events"
  param partition_by = "sensor"
  param order_by = "ts"
  param pattern = "A B+"
  param define = "B AS B.value < PREV(B.value)"
  param measures = "A.ts AS a_ts, uuid() AS id"
  output name = "dips"
}
"#;

fn check(query: &str, input: &str, delivery: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "{query}{}",
        SINK.replace("${INPUT}", input)
            .replace("${DELIVERY}", delivery)
    );
    std::fs::write(dir.path().join("q.flow"), text).expect("query");
    std::fs::write(dir.path().join("changes.csv"), "").expect("changes");
    let out = anduin(dir.path(), &["check", "q.flow"]);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_nats_sink_after_operators_whose_rows_depend_on_timing_is_refused_unless_at_least_once() {
    let (code, stderr) = check(PROCESSING_TIME, "counts", "");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(r#"operator "out" (a NATS sink, exactly once)"#)
            && stderr.contains(r#"window "w" groups rows by processing time"#)
            && stderr.contains("Window by event time")
            && stderr.contains(r#"delivery = "at-least-once""#),
        "{stderr}"
    );
    let (code, stderr) = check(CONTROL_WITHOUT_TIME, "kept", "");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            r#"filter "low" applies the changes of control stream "changeRows" as they arrive"#
        ) && stderr.contains("Give the control input a `time` column"),
        "{stderr}"
    );
    let (code, stderr) = check(CONTROL_WITH_AN_IDLE_SOURCE, "kept", "");
    assert_eq!(code, Some(1), "{stderr}");
    for part in [
        r#"operator "out" (a NATS sink, exactly once)"#,
        r#"filter "low" applies the changes of control stream "changeRows" by event time, and its source "changes" has `idle_timeout`"#,
        "whether a change applies to a row depends on when each arrives",
        r#"Leave `idle_timeout` out of source "changes""#,
    ] {
        assert!(stderr.contains(part), "{part} not in {stderr}");
    }
    let (code, stderr) = check(VOLATILE, "kept", "");
    assert_eq!(code, Some(1), "{stderr}");
    for part in [
        r#"operator "out" (a NATS sink, exactly once)"#,
        r#"filter "sample" calls `random()` (at 14:22)"#,
        "Take the value from the input instead of calling `random()` in the query",
    ] {
        assert!(stderr.contains(part), "{part} not in {stderr}");
    }
    for (query, input, part) in [
        (
            IN_A_WINDOW_FILTER,
            "counts",
            r#"window "w" calls `random()` (at 19:38)"#,
        ),
        (
            IN_AN_OVER_WINDOW,
            "stats",
            r#"over "last4" calls `random()` (at 18:44)"#,
        ),
        (
            IN_A_PATTERN_DEFINE,
            "dips",
            r#"pattern "dips" calls `random()` (at 18:24)"#,
        ),
        (
            IN_A_PATTERN_MEASURE,
            "dips",
            r#"pattern "dips" calls `uuid()` (at 19:35)"#,
        ),
    ] {
        let (code, stderr) = check(&timed(query), input, "");
        assert_eq!(code, Some(1), "{stderr}");
        for part in [
            r#"operator "out" (a NATS sink, exactly once)"#,
            part,
            "whose value changes from call to call",
            "Take the value from the input instead of calling",
        ] {
            assert!(stderr.contains(part), "{part} not in {stderr}");
        }
    }
    for query in [
        (timed(IN_A_WINDOW_FILTER), "counts"),
        (timed(IN_AN_OVER_WINDOW), "stats"),
        (timed(IN_A_PATTERN_DEFINE), "dips"),
        (timed(IN_A_PATTERN_MEASURE), "dips"),
        (PROCESSING_TIME.to_string(), "counts"),
        (CONTROL_WITHOUT_TIME.to_string(), "kept"),
        (CONTROL_WITH_AN_IDLE_SOURCE.to_string(), "kept"),
        (VOLATILE.to_string(), "kept"),
    ] {
        let (code, stderr) = check(&query.0, query.1, r#"param delivery = "at-least-once""#);
        assert_eq!(code, Some(0), "{stderr}");
    }
}
