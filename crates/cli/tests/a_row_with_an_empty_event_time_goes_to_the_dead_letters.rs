//! Issue 22, point 4: a row whose event time is empty cannot be placed in time. At a source
//! with `event_time` it is a malformed record (dead letters, with its file, line and reason),
//! or, with `on_null_event_time = "drop"`, dropped and counted in the run's summary; a null
//! event time computed later goes to the dead letters from the window that meets it. None
//! vanishes uncounted.

use crate::common;

use common::{anduin_ok, dead_letters, repo};

/// Eleven rows, the fifth without its event time.
const INPUT: &str = "ts,sensor,value
1700000000000,413,52
1700000000001,858,49
1700000000002,250,51
1700000000003,925,53
,5,52
1700000000005,207,53
1700000000006,398,51
1700000000007,956,52
1700000000008,989,51
1700000000009,47,53
1700000000010,872,51
";

#[test]
fn a_row_with_an_empty_event_time_goes_to_the_dead_letters() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), INPUT).expect("input");
    let flow = repo().join("examples/q2.flow");
    let out = anduin_ok(
        dir.path(),
        &[
            "run",
            flow.to_str().expect("utf-8 path"),
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=o.csv",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("events  [reader] 10 rows out"), "{stderr}");
    assert!(
        stderr.contains("q2      [window] 10 rows in, 10 rows out; late_rows 0"),
        "{stderr}"
    );
    assert!(
        stderr.contains("anduin: 1 malformed records went to o.csv.rejected"),
        "{stderr}"
    );
    let rejected = dead_letters(&dir.path().join("o.csv.rejected"));
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0]["line"], 6);
    assert_eq!(rejected[0]["source"], "in.csv");
    assert_eq!(rejected[0]["record"], ",5,52");
    assert_eq!(rejected[0]["reason"], "event-time column `ts` is empty");
    assert_eq!(rejected[0]["operator"], "events");
}

#[test]
fn with_on_null_event_time_drop_the_row_is_dropped_and_counted() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("in.csv"), INPUT).expect("input");
    let flow = std::fs::read_to_string(repo().join("examples/q2.flow"))
        .expect("q2.flow")
        .replace(
            "param event_time = \"ts\"",
            "param event_time = \"ts\"\n  param on_null_event_time = \"drop\"",
        );
    std::fs::write(dir.path().join("q.flow"), flow).expect("query");
    let out = anduin_ok(
        dir.path(),
        &[
            "run",
            "q.flow",
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=o.csv",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("events  [reader] 10 rows out; null_event_time_rows 1"),
        "{stderr}"
    );
    assert!(stderr.contains("anduin: no malformed records"), "{stderr}");
    assert!(!dir.path().join("o.csv.rejected").exists());
}

#[test]
fn a_null_event_time_computed_by_a_map_goes_to_the_dead_letters_from_the_window() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("in.csv"),
        INPUT.replace("\n,5,52", "\n1700000000004,5,52"),
    )
    .expect("input");
    let flow = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "events", type = "reader" {
  param path = "${INPUT}"
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "retime", type = "map" {
  input name = "events"
  param columns = "CASE WHEN sensor = 5 THEN NULL ELSE ts END AS t, sensor, value"
  output name = "retimed"
}
operator name = "perSecond", type = "window" {
  input name = "retimed"
  param kind = "tumbling"
  param size = "1s"
  param time = "t"
  param aggregates = "COUNT(*) AS cnt"
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "${OUTPUT}"
}
"#;
    std::fs::write(dir.path().join("q.flow"), flow).expect("query");
    let out = anduin_ok(
        dir.path(),
        &[
            "run",
            "q.flow",
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=o.csv",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("anduin: 1 rejected rows went to o.csv.rejected"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("o.csv")).expect("output"),
        "window_start,window_end,cnt\n1700000000000,1700000001000,10\n"
    );
    let rejected = dead_letters(&dir.path().join("o.csv.rejected"));
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0]["operator"], "perSecond");
    assert_eq!(rejected[0]["row"]["sensor"], 5);
    assert!(
        rejected[0]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("event-time column `t` is null")),
        "{}",
        rejected[0]
    );
}
