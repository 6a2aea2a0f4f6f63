//! The paper's third elasticity scheme (§4.4): a pattern whose partial matches outgrow
//! `max_partial_matches` hands the oldest to a copy that only extends them
//! (`overflow_instances = 3`: the pattern and two copies, each reading the whole input, their
//! outputs united). The run writes exactly the rows one pattern writes, the copies report
//! matches of their own (so partial matches did move), the copies' partial matches stay near
//! the limit between checkpoints and without any, and a run killed with SIGKILL at seeded
//! moments resumes to the same rows. What it cannot do yet is refused, saying why. (On a
//! cluster: `a_pattern_spreading_over_workers_…`.)

use crate::a_killed_run_resumes_to_the_output_of_an_uninterrupted_one::scenario_with;
use crate::common;

use common::{anduin, output_rows};

/// The paper's pattern `A B+ C D+` per sensor, `overflow_instances` from `K` (1 by default:
/// no copies), every copy keeping at most 200 partial matches.
pub(crate) const SPREAD: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 7
  param count = 60000
  param rate = 40000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "dips", type = "pattern" {
  input name = "events"
  param partition_by = "sensor"
  param order_by = "ts"
  param pattern = "A B+ C D+"
  param define = "B AS B.value < PREV(B.value)"
  param define = "C AS C.value > PREV(C.value) AND C.value < A.value"
  param define = "D AS D.value > A.value AND D.value > PREV(D.value)"
  param measures = "A.ts AS a_ts, LAST(D.ts) AS last_ts, COUNT(B.*) AS b_cnt, MAX(D.value) AS top"
  param after_match = "skip to next row"
  param within = "3s"
  param overflow_instances = "${K:-1}"
  param max_partial_matches = 200
  output name = "dips"
}
operator name = "out", type = "writer" {
  input name = "dips"
  param path = "${OUTPUT}"
}
"#;

/// `anduin run q.flow FLAGS…` in `dir`, with `SPREAD` as q.flow.
fn run(dir: &std::path::Path, flags: &[&str]) -> std::process::Output {
    std::fs::write(dir.join("q.flow"), SPREAD).expect("query");
    let mut args = vec!["run", "q.flow", "--no-api"];
    args.extend(flags);
    anduin(dir, &args)
}

/// The figure `name` of operator `op` in a run's summary on stderr.
fn figure(stderr: &str, op: &str, name: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{op} ")))
        .unwrap_or_else(|| panic!("no summary of {op}: {stderr}"));
    let at = line
        .find(&format!("{name} "))
        .unwrap_or_else(|| panic!("no {name} in {line}"));
    line[at + name.len() + 1..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {name} in {line}"))
}

/// Runs `query` as one pattern (K = 1, no checkpoints) and with three copies (checkpoints
/// every 3000 rows), asserts they write the same rows, and returns the copies' run's stderr and
/// the number of rows.
fn spread_against_one(query: &str) -> (String, usize) {
    spread_against_one_with(
        query,
        &[
            "--var",
            "K=3",
            "--checkpoint-store",
            "ck",
            "--checkpoint-every",
            "3000",
        ],
    )
}

/// Runs `query` as one pattern (K = 1, no checkpoints) and with `flags` (which set K),
/// asserts they write the same rows, and returns the second run's stderr and the number of
/// rows.
fn spread_against_one_with(query: &str, flags: &[&str]) -> (String, usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("q.flow"), query).expect("query");
    let one = anduin(d, &["run", "q.flow", "--no-api", "--var", "OUTPUT=one.csv"]);
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    let expected = output_rows(&d.join("one.csv"));
    assert!(expected.len() > 500, "enough matches: {}", expected.len());
    let mut args = vec!["run", "q.flow", "--no-api", "--var", "OUTPUT=spread"];
    args.extend(flags);
    let spread = anduin(d, &args);
    let stderr = String::from_utf8_lossy(&spread.stderr).into_owned();
    assert!(spread.status.success(), "{stderr}");
    assert_eq!(
        output_rows(&d.join("spread")),
        expected,
        "rows lost or repeated"
    );
    (stderr, expected.len())
}

#[test]
fn the_copies_take_over_partial_matches_and_the_output_is_that_of_one_pattern() {
    let (stderr, rows) = spread_against_one(SPREAD);
    assert_copies_matched(&stderr, rows);
}

/// Without checkpoints, the copies hand over between barriers: after every batch that brings
/// half the limit of rows or more. So each copy's partial matches stay within a small multiple
/// of the limit (what it holds, what is handed to it at once, what one batch starts), where
/// one pattern keeps ten times the limit at its peak.
#[test]
fn between_checkpoints_and_without_any_every_copy_keeps_about_its_limit() {
    let one = {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = run(dir.path(), &["--var", "OUTPUT=one.csv"]);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        figure(&stderr, "dips", "peak_partial_matches")
    };
    assert!(
        one > 1500,
        "the pattern alone keeps many partial matches: {one}"
    );
    let (stderr, _) = spread_against_one_with(SPREAD, &["--var", "K=12", "--batch-size", "50"]);
    let peaks: Vec<u64> = std::iter::once("dips".to_string())
        .chain((1..12).map(|k| format!("dips_replica_{k}")))
        .map(|copy| figure(&stderr, &copy, "peak_partial_matches"))
        .collect();
    assert!(
        peaks.iter().all(|&p| p <= 3 * 200),
        "a copy kept far more than its limit of 200: {peaks:?} (one pattern: {one})"
    );
}

/// The pipelined form `P+ = P ∨ (P P+)` (paper §4.4): the copies hand on by age
/// (`stage_age`), each keeping the attempts younger than its stages and handing older ones to
/// the next. The same rows as one pattern, and every stage matched some.
fn by_age() -> String {
    SPREAD.replace(
        "param max_partial_matches = 200",
        "param stage_age = \"${AGE:-1s}\"",
    )
}

#[test]
fn copies_handing_on_by_age_are_a_pipeline_of_stages_that_writes_what_one_pattern_writes() {
    let (stderr, _) = spread_against_one_with(&by_age(), &["--var", "K=3"]);
    for copy in ["dips", "dips_replica_1", "dips_replica_2"] {
        assert!(figure(&stderr, copy, "matches") > 0, "{copy}: {stderr}");
        assert_eq!(figure(&stderr, copy, "stage_age_ms"), 1000, "{stderr}");
    }
}

#[test]
fn a_pipeline_of_stages_killed_at_seeded_moments_resumes_to_the_output_of_one_pattern() {
    scenario_with(
        &by_age(),
        &[29],
        &["--var", "K=3", "--var", "AGE=500ms"],
        500,
    );
}

/// A pattern whose name looks like a copy of another operator (`gen_replica_1`, the generator
/// being `gen`) is a pattern of its own: its copies chain, the output is one pattern's.
#[test]
fn a_pattern_named_like_a_copy_of_another_operator_spreads_as_any_other() {
    let named = SPREAD.replace("name = \"dips\"", "name = \"gen_replica_1\"");
    let (stderr, _) = spread_against_one(&named);
    assert!(
        figure(&stderr, "gen_replica_1_replica_2", "matches") > 0,
        "{stderr}"
    );
}

/// [`SPREAD`] with the pattern, and so each copy, at two instances.
fn two_instances() -> String {
    SPREAD.replace(
        "param overflow_instances",
        "param parallelism = 2\n  param overflow_instances",
    )
}

/// With `parallelism = 2` one producer splits the input alike for every copy, so instance i
/// of each copy reads the same key groups: instance i hands to instance i of the next copy.
#[test]
fn copies_of_two_instances_each_hand_over_instance_by_instance_and_write_one_patterns_rows() {
    for (stderr, rows) in spread_at_two_batch_sizes(&two_instances()) {
        assert_copies_matched(&stderr, rows);
    }
}

/// [`spread_against_one_with`] three copies, with checkpoints every 3000 rows, at batches of
/// 64 and of 1000 rows (handoff points between barriers come after other batches).
fn spread_at_two_batch_sizes(query: &str) -> Vec<(String, usize)> {
    ["64", "1000"]
        .into_iter()
        .map(|batch| {
            spread_against_one_with(
                query,
                &[
                    "--var",
                    "K=3",
                    "--batch-size",
                    batch,
                    "--checkpoint-every",
                    "3000",
                    "--checkpoint-store",
                    &format!("ck{batch}"),
                ],
            )
        })
        .collect()
}

/// Partial matches moved along the chain: the copies, which start none, matched some.
fn assert_copies_matched(stderr: &str, rows: usize) {
    let by_copies =
        figure(stderr, "dips_replica_1", "matches") + figure(stderr, "dips_replica_2", "matches");
    assert!(by_copies > 0, "the copies matched nothing: {stderr}");
    assert!(figure(stderr, "dips", "matches") < rows as u64, "{stderr}");
}

#[test]
fn copies_of_two_instances_killed_at_seeded_moments_resume_to_the_output_of_one_pattern() {
    scenario_with(&two_instances(), &[31, 32], &["--var", "K=3"], 500);
}

#[test]
fn a_run_spreading_partial_matches_killed_at_seeded_moments_resumes_to_the_output_of_one_pattern() {
    scenario_with(SPREAD, &[27, 28], &["--var", "K=3"], 500);
}

#[test]
fn what_spreading_cannot_do_yet_is_refused_saying_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("q.flow"), SPREAD).expect("query");
    // `stage_age` beside `max_partial_matches` (with copies or not), or not a positive
    // duration.
    for (k, query, says) in [
        (
            "1",
            by_age().replace(
                "param stage_age",
                "param max_partial_matches = 9\n  param stage_age",
            ),
            "by age (`stage_age`) or by their number (`max_partial_matches`), not both",
        ),
        (
            "2",
            by_age().replace(
                "param stage_age",
                "param max_partial_matches = 9\n  param stage_age",
            ),
            "by age (`stage_age`) or by their number (`max_partial_matches`), not both",
        ),
        (
            "2",
            by_age().replace("${AGE:-1s}", "0s"),
            "must be a positive duration",
        ),
    ] {
        std::fs::write(d.join("age.flow"), query).expect("query");
        let out = anduin(
            d,
            &[
                "check",
                "age.flow",
                "--var",
                &format!("K={k}"),
                "--var",
                "OUTPUT=x",
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains(says), "{says}: {stderr}");
    }
    // A second output: `anduin check` refuses it already.
    let timeouts = SPREAD.replace(
        "  output name = \"dips\"\n",
        "  output name = \"dips\"\n  output name = \"late\"\n  param timeout_output = \"late\"\n",
    );
    assert_ne!(timeouts, SPREAD);
    std::fs::write(d.join("timeouts.flow"), timeouts).expect("query");
    let out = anduin(
        d,
        &[
            "check",
            "timeouts.flow",
            "--var",
            "K=2",
            "--var",
            "OUTPUT=x",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("with `timeout_output` is not supported yet"),
        "{stderr}"
    );
    // A name the copies take, held by another operator.
    let clash = SPREAD.replace("name = \"out\"", "name = \"dips_replica_1\"");
    std::fs::write(d.join("clash.flow"), clash).expect("query");
    let out_run = anduin(
        d,
        &[
            "run",
            "clash.flow",
            "--no-api",
            "--var",
            "K=2",
            "--var",
            "OUTPUT=x",
            "--checkpoint-store",
            "ck2",
        ],
    );
    let stderr_run = String::from_utf8_lossy(&out_run.stderr);
    assert!(!out_run.status.success(), "{stderr_run}");
    assert!(
        stderr_run
            .contains("the name \"dips_replica_1\" is one the copies of pattern \"dips\" take"),
        "{stderr_run}"
    );
    // Hot standby of a spreading pattern.
    let hot = SPREAD.replace(
        "param max_partial_matches = 200",
        "param max_partial_matches = 200\n  param fault_tolerance = \"hot-standby\"",
    );
    std::fs::write(d.join("hot.flow"), hot).expect("query");
    let out = anduin(
        d,
        &[
            "run", "hot.flow", "--no-api", "--var", "K=2", "--var", "OUTPUT=x",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(
            "fault_tolerance = \"hot-standby\" with overflow_instances is not supported yet"
        ),
        "{stderr}"
    );
}

/// [`SPREAD`] with a filter of two instances before the pattern, and `funnel` (a stage of
/// operators) between the two.
fn behind_two_instances(funnel: &str) -> String {
    SPREAD.replace(
        r#"operator name = "dips", type = "pattern" {
  input name = "events""#,
        &format!(
            r#"operator name = "pre", type = "filter" {{
  input name = "events"
  param condition = "value > -1000000"
  param parallelism = 2
  output name = "pre"
}}
{funnel}operator name = "dips", type = "pattern" {{
  input name = "{}""#,
            if funnel.is_empty() { "pre" } else { "one" }
        ),
    )
}

/// The copies hand partial matches over at points of one common order of their input: read
/// from two instances, each copy would merge them in an order of its own (the handed partial
/// matches then did not line up: the run failed, "a bug in anduin", or worse). Refused before
/// the query runs, saying what to do; what it says to do writes what one pattern writes.
#[test]
fn a_spreading_pattern_fed_by_several_instances_is_refused_and_the_remedy_it_names_works() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("q.flow"), behind_two_instances("")).expect("query");
    let out = anduin(
        d,
        &[
            "run", "q.flow", "--no-api", "--var", "K=3", "--var", "OUTPUT=x",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "operator \"dips\" spreads its partial matches over copies (overflow_instances), which must all read its input in one order, but the input comes from 2 instances of \"pre\""
        ),
        "{stderr}"
    );
    assert!(!d.join("x").exists(), "refused before anything ran");
    // One pattern (K = 1) reads the two instances as any operator does.
    let funnel = r#"operator name = "funnel", type = "map" {
  input name = "pre"
  param columns = "*"
  param parallelism = 1
  output name = "one"
}
"#;
    spread_at_two_batch_sizes(&behind_two_instances(funnel));
}
