//! The paper's meta query in its stream form: a filter follows a control stream of
//! `<query, operator, param, value, ts>` rows read from a file. Each change applies to exactly
//! the data rows whose event time is at or after its own, whichever stream runs ahead (the
//! control reader throttled so that data rows wait for it, or the data reader throttled so
//! that the changes wait), so the output equals a reference computed from the two files.
//! Rows for another operator or another query are ignored; a change the filter refuses
//! (a bad expression, a param that cannot change) changes nothing. A run killed with SIGKILL
//! and resumed writes exactly the rows of an uninterrupted one (the rows waiting for the
//! control stream are in every checkpoint).

use crate::common;

use common::Rng;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{anduin_ok, kill_after, output_rows};

const T0: i64 = 1_700_000_000_000;
const ROWS: i64 = 30_000;

/// The query; `DATA_RATE` and `CONTROL_RATE` throttle the two readers (or not).
const QUERY: &str = r#"
type name = "Reading" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
type name = "Change" {
  column name = "query", type = "string"
  column name = "operator", type = "string"
  column name = "param", type = "string"
  column name = "value", type = "string"
  column name = "ts", type = "timestamp"
}
operator name = "readings", type = "reader" {
  param path = "data.csv"
  param event_time = "ts"
  param watermark = "100ms"
  ${DATA_RATE}
  output name = "raw", type = "Reading"
}
operator name = "changes", type = "reader" {
  param path = "changes.csv"
  param event_time = "ts"
  ${CONTROL_RATE}
  output name = "changeRows", type = "Change"
}
operator name = "low", type = "filter" {
  input name = "raw"
  control name = "changeRows", time = "ts"
  param condition = "raw.value < 42"
  output name = "kept", type = "Reading"
}
operator name = "out", type = "writer" {
  input name = "kept"
  param path = "${OUTPUT}"
}
"#;

/// Readings 10 ms apart, each up to 50 ms out of order (within the watermark's 100 ms).
fn data(seed: u64) -> Vec<(i64, u64, u64)> {
    let mut rng = Rng(seed);
    (0..ROWS)
        .map(|i| {
            let jitter = i64::try_from(rng.next(50)).expect("small");
            (T0 + i * 10 + jitter, rng.next(10), rng.next(100))
        })
        .collect()
}

/// The control rows: (query, operator, value, at); all change `condition` but one.
const CHANGES: &[(&str, &str, &str, &str, i64)] = &[
    ("q", "low", "condition", "value < 10", 40_000),
    ("q", "other", "condition", "value < 1", 60_000),
    ("another", "low", "condition", "value < 2", 70_000),
    ("q", "low", "condition", "value >= 90", 100_000),
    ("q", "low", "condition", "value <", 130_000),
    ("q", "low", "on_error", "skip", 140_000),
    ("q", "low", "condition", "value BETWEEN 20 AND 25", 200_000),
    ("q", "low", "condition", "value = 7", 200_000),
    ("q", "low", "condition", "value > 95", 250_000),
];

/// Which rows the reference keeps: the last accepted change at or before a row's time.
fn keeps(ts: i64, value: u64) -> bool {
    let t = ts - T0;
    match t {
        _ if t < 40_000 => value < 42,
        _ if t < 100_000 => value < 10,
        _ if t < 200_000 => value >= 90,
        _ if t < 250_000 => value == 7,
        _ => value > 95,
    }
}

fn write_inputs(dir: &Path, seed: u64) -> Vec<String> {
    let rows = data(seed);
    let mut csv = String::from("ts,sensor,value\n");
    for (ts, sensor, value) in &rows {
        csv.push_str(&format!("{ts},{sensor},{value}\n"));
    }
    std::fs::write(dir.join("data.csv"), csv).expect("data");
    let mut changes = String::from("query,operator,param,value,ts\n");
    for (q, op, param, value, at) in CHANGES {
        changes.push_str(&format!("{q},{op},{param},{value},{}\n", T0 + at));
    }
    std::fs::write(dir.join("changes.csv"), changes).expect("changes");
    let mut expected: Vec<String> = rows
        .iter()
        .filter(|(ts, _, v)| keeps(*ts, *v))
        .map(|(ts, s, v)| format!("{ts},{s},{v}"))
        .collect();
    expected.sort();
    expected
}

/// Writes the query with the readers throttled to these rates (rows a second; 0: as fast as
/// they can).
fn query(dir: &Path, data_rate: u32, control_rate: u32) {
    let rate = |r: u32| {
        if r == 0 {
            String::new()
        } else {
            format!("param rate = {r}")
        }
    };
    let q = QUERY
        .replace("${DATA_RATE}", &rate(data_rate))
        .replace("${CONTROL_RATE}", &rate(control_rate));
    std::fs::write(dir.join("q.flow"), q).expect("query");
}

#[test]
fn a_control_stream_changes_a_filter_at_the_event_time_of_each_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let expected = write_inputs(dir.path(), 3);
    assert!(expected.len() > 1000, "the reference keeps enough rows");
    // The changes trickle in (the data waits for them), then the data does (the changes
    // wait for it), then both as fast as they can.
    for (i, (data_rate, control_rate)) in [(0, 20), (60_000, 0), (0, 0)].into_iter().enumerate() {
        query(dir.path(), data_rate, control_rate);
        let output = format!("OUTPUT=out{i}.csv");
        let out = anduin_ok(
            dir.path(),
            &["run", "q.flow", "--name", "q", "--var", &output],
        );
        let got = output_rows(&dir.path().join(format!("out{i}.csv")));
        assert_eq!(
            got.len(),
            expected.len(),
            "run {i}: rows lost or kept wrongly"
        );
        assert!(
            got == expected,
            "run {i}: the output differs from the reference"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(
                "control_changes 5, control_changes_late 0, control_rows_refused 2, late_rows 0"
            ),
            "run {i}: the summary counts the changes taken and refused: {stderr}"
        );
    }
}

#[test]
fn a_refused_change_from_a_control_stream_names_why_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_inputs(dir.path(), 4);
    query(dir.path(), 0, 0);
    let out = anduin_ok(
        dir.path(),
        &["run", "q.flow", "--name", "q", "--var", "OUTPUT=out.csv"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("control row refused")
            && stderr.contains("value=\"value <\"")
            && stderr.contains("reason=")
            && stderr.contains("`on_error` cannot change while running"),
        "{stderr}"
    );
}

#[test]
fn a_killed_run_following_a_control_stream_resumes_to_the_output_of_an_uninterrupted_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let expected = write_inputs(dir.path(), 5);
    // Slow changes: rows wait for them across checkpoints.
    query(dir.path(), 40_000, 30);
    let mut rng = Rng(5);
    let mut killed = 0;
    for _ in 0..3 {
        let child = Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["run", "q.flow", "--name", "q", "--var", "OUTPUT=out"])
            .args(["--checkpoint-dir", "ckpt", "--checkpoint-every", "3000"])
            .args(["--batch-size", "500", "--events", "-"])
            .current_dir(dir.path())
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts");
        if kill_after(child, 1 + rng.next(3), rng.next(100)) {
            killed += 1;
        }
    }
    assert!(killed >= 1, "the run was never killed mid-way");
    anduin_ok(
        dir.path(),
        &[
            "run",
            "q.flow",
            "--name",
            "q",
            "--var",
            "OUTPUT=out",
            "--checkpoint-dir",
            "ckpt",
        ],
    );
    let got = output_rows(&dir.path().join("out"));
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated");
    assert!(got == expected, "the output differs from the reference");
}

/// The shipped example with its data and changes given: the summary and the rows kept.
fn run_example(dir: &Path, data: &str, changes: &str, batch_size: &str) -> (String, Vec<String>) {
    std::fs::write(dir.join("d.csv"), data).expect("data");
    std::fs::write(dir.join("c.csv"), changes).expect("changes");
    let example = common::repo().join("examples/sensors_controlled.flow");
    let out = anduin_ok(
        dir,
        &[
            "run",
            &example.display().to_string(),
            "--var",
            "INPUT=d.csv",
            "--var",
            "CHANGES=c.csv",
            "--var",
            "OUTPUT=o.csv",
            "--batch-size",
            batch_size,
        ],
    );
    (
        String::from_utf8_lossy(&out.stderr).to_string(),
        output_rows(&dir.join("o.csv")),
    )
}

#[test]
fn a_change_late_in_its_own_stream_never_overrides_a_later_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut data = String::from("ts,sensor,value\n");
    for i in 0..500 {
        data.push_str(&format!("{},1,{}\n", T0 + i * 10, i % 100));
    }
    // The change at 2000 comes after the one at 3000 (and many rows for another operator):
    // late in the control stream, it may not undo the later change.
    let mut changes = String::from("ts,operator,param,value\n");
    changes.push_str(&format!("{},low,condition,value < 10\n", T0 + 1000));
    changes.push_str(&format!("{},low,condition,value >= 90\n", T0 + 3000));
    for _ in 0..3000 {
        changes.push_str(&format!("{},other,condition,x\n", T0 + 3000));
    }
    changes.push_str(&format!("{},low,condition,value < 50\n", T0 + 2000));
    for batch_size in ["1", "8192"] {
        let (stderr, rows) = run_example(dir.path(), &data, &changes, batch_size);
        let after: Vec<i64> = rows
            .iter()
            .filter_map(|r| {
                let cols: Vec<i64> = r.split(',').filter_map(|c| c.parse().ok()).collect();
                (cols[0] >= T0 + 3000).then_some(cols[2])
            })
            .collect();
        assert_eq!(after.len(), 20, "batch size {batch_size}: {after:?}");
        assert!(after.iter().all(|v| *v >= 90), "batch size {batch_size}");
        // Read one row at a time, the change comes after the control stream's watermark
        // passed its time: it is counted as late. (Read in one batch with the others, it
        // is not late: the watermark follows the batch.)
        assert!(
            batch_size != "1" || stderr.contains("control_changes_late 1"),
            "the late change is counted: {stderr}"
        );
    }
}

#[test]
fn rows_at_the_ends_of_the_time_range_are_evaluated_not_lost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = format!(
        "ts,sensor,value\n{},1,1\n0,1,2\n{T0},1,3\n{},1,4\n{},1,50\n",
        i64::MIN,
        i64::MAX - 1,
        i64::MAX
    );
    let changes = format!(
        "ts,operator,param,value\n{},low,condition,value >= 5\n",
        i64::MAX
    );
    let (_, rows) = run_example(dir.path(), &data, &changes, "8192");
    // Every row is evaluated: under `value < 42` before i64::MAX, under `value >= 5` at it
    // (which keeps its 50).
    assert_eq!(rows.len(), 5, "{rows:?}");
    assert!(rows.contains(&format!("{},1,50", i64::MAX)), "{rows:?}");
}
