//! An operator whose params changed while it ran, then grown beyond `--max-parallelism`: the
//! instances started at the rescale take the event-time progress the changed param gave the
//! others (a window's lateness cutoff after `allowed_lateness` grew, a pattern's forwarded
//! watermark after `within` changed), not what a fresh instance would compute, and the run
//! writes exactly what the same changes write with spare instances planned from the start
//! (`--max-parallelism 8`). Found by the probe of the growth: the run failed ("its instances
//! were at different lateness cutoffs").

use crate::a_killed_run_resumes_to_the_output_of_an_uninterrupted_one::{CEP, WINDOWED};
use crate::common;

use common::{ctl, output_rows, slowed, stdout_ok};

/// The windowed query with its events' timestamps shifted back by up to 900 ms (late rows),
/// slowed to almost nothing until the steps are done. Its window starts with a lateness of
/// 1 s, which already covers the disorder: a changed lateness applies from the next watermark
/// (docs/flow-language.md), and whether the generator's first row and its watermark come
/// before or after the change's barrier depends on timing — with no lateness at first, the
/// rows judged before that watermark made the output depend on it (a flake under load:
/// 215 424 rows or 216 909). The change to 2 s still moves the givers' cutoff away from what
/// a fresh instance would compute.
fn late() -> String {
    WINDOWED
        .replace("param rate = 40000", "param rate = 0.001")
        .replace(
            "param slide = \"50ms\"",
            "param slide = \"50ms\"\n  param allowed_lateness = \"1s\"",
        )
        .replace(
            "operator name = \"w\", type = \"window\" {\n  input name = \"events\"",
            "operator name = \"m\", type = \"map\" {\n  input name = \"events\"\n  param columns = \"to_timestamp_millis(CAST(ts AS BIGINT) - (value % 10) * 100) AS ts, sensor, value\"\n  output name = \"shifted\"\n}\noperator name = \"w\", type = \"window\" {\n  input name = \"shifted\"",
        )
}

/// The pattern query, slowed as [`late`].
fn runs() -> String {
    CEP.replace("param rate = 40000", "param rate = 0.001")
}

/// `query` run with `--max-parallelism max`, `changes` made one after another (`ctl`
/// arguments) once the generator's first row has reached the operator they change (so that
/// it is judged before the changes in every run, however slow the start), then its generator
/// at full speed to the end: its sorted output.
fn run(query: &str, max: &str, changes: &[&[&str]]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    std::fs::write(d.join("q.flow"), query).expect("query");
    let (run, api) = slowed::start(d, &["--parallelism", "2", "--max-parallelism", max]);
    let client = anduin_api::Client::new(&api, None).expect("an address");
    let changed = changes[0][2];
    common::wait_until("the first row at the changed operator", || {
        let m = client.metrics("q").expect("metrics");
        m.instances
            .iter()
            .filter(|i| i.operator == changed)
            .map(|i| i.rows_in)
            .sum::<u64>()
            >= 1
    });
    for change in changes {
        stdout_ok(&ctl(d, &api, change));
    }
    stdout_ok(&ctl(d, &api, &["set", "q", "gen", "rate", "1000000"]));
    let out = run.wait_output();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    output_rows(&d.join("out.csv"))
}

/// The same changes with spare instances and with instances started while running.
fn same_with_growth(query: &str, changes: &[&[&str]]) {
    let spare = run(query, "8", changes);
    let grown = run(query, "2", changes);
    assert!(!spare.is_empty(), "the query writes rows");
    assert_eq!(grown.len(), spare.len(), "rows lost or duplicated");
    assert!(
        grown == spare,
        "the output differs from the run with spare instances"
    );
}

#[test]
fn a_window_whose_lateness_grew_while_running_grows_to_what_spare_instances_write() {
    let query = late();
    assert!(query.contains("input name = \"shifted\""), "the map is in");
    assert!(
        query.contains("allowed_lateness = \"1s\""),
        "the lateness is in"
    );
    same_with_growth(
        &query,
        &[
            &["set", "q", "w", "allowed_lateness", "2s"],
            &["scale", "q", "w", "3"],
            &["scale", "q", "w", "6"],
        ],
    );
}

#[test]
fn a_pattern_whose_time_bound_changed_while_running_grows_to_what_spare_instances_write() {
    same_with_growth(
        &runs(),
        &[
            &["set", "q", "p", "within", "700ms"],
            &["scale", "q", "p", "3"],
            &["scale", "q", "p", "5"],
        ],
    );
}
