//! Rescaling from a checkpoint: a keyed window, a join and a pattern, each killed with
//! SIGKILL after some checkpoints and resumed at another `--parallelism` (2, then 4, then 1,
//! then 3), write exactly the rows of an uninterrupted run: each new instance restores the
//! key groups it owns now, taken from the instances that owned them before (open windows,
//! buffered join rows, partial matches and rows waiting for the watermark all move with
//! their key).

use crate::a_killed_run_resumes_to_the_output_of_an_uninterrupted_one::{
    start, CEP, EVENTS, JOINED, WINDOWED,
};
use crate::common;

use common::{anduin, anduin_ok, kill_after, output_rows, Rng};

/// The parallelism of each run in turn; the last runs to the end.
const STEPS: [&str; 4] = ["2", "4", "1", "3"];

fn scenario(query: &str, seed: u64, extra: &[&str]) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("events.flow"), EVENTS).expect("query");
    anduin_ok(dir.path(), &["run", "events.flow"]);
    std::fs::write(dir.path().join("q.flow"), query).expect("query");
    anduin_ok(
        dir.path(),
        &["run", "q.flow", "--var", "OUTPUT=reference.csv"],
    );
    let expected = output_rows(&dir.path().join("reference.csv"));
    assert!(expected.len() > 10_000, "the query produces enough rows");

    let mut rng = Rng(seed);
    let mut killed = 0;
    let (last, kills) = STEPS.split_last().expect("steps");
    for p in kills {
        let after = 1 + rng.next(3);
        let delay_ms = rng.next(100);
        let args = [&["--parallelism", p][..], extra].concat();
        if kill_after(start(dir.path(), &args), after, delay_ms) {
            killed += 1;
        }
    }
    assert!(
        killed >= 2,
        "seed {seed}: killed only {killed} times mid-way"
    );
    let args = [
        &[
            "run",
            "q.flow",
            "--var",
            "OUTPUT=out",
            "--checkpoint-dir",
            "ckpt",
            "--checkpoint-every",
            "5000",
            "--parallelism",
            last,
        ][..],
        extra,
    ]
    .concat();
    let out = anduin(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "seed {seed}: {stderr}");
    let got = output_rows(&dir.path().join("out"));
    assert_eq!(
        got.len(),
        expected.len(),
        "seed {seed}: rows lost or duplicated"
    );
    if let Some(i) = (0..got.len()).find(|&i| got[i] != expected[i]) {
        panic!(
            "seed {seed}: the output differs from the uninterrupted run at sorted row {i}: {:?} instead of {:?}",
            got[i], expected[i]
        );
    }
}

#[test]
fn a_keyed_window_killed_at_one_parallelism_resumes_at_another_to_the_uninterrupted_output() {
    scenario(WINDOWED, 31, &[]);
}

#[test]
fn a_join_killed_at_one_parallelism_resumes_at_another_to_the_uninterrupted_output() {
    scenario(JOINED, 32, &[]);
}

#[test]
fn a_pattern_killed_at_one_parallelism_resumes_at_another_to_the_uninterrupted_output() {
    scenario(CEP, 33, &[]);
}

#[test]
fn a_keyed_window_with_its_state_in_the_lsm_backend_resumes_at_another_parallelism_to_the_uninterrupted_output(
) {
    scenario(WINDOWED, 34, &["--state-backend", "lsm"]);
}

#[test]
fn a_pattern_with_its_state_in_the_lsm_backend_resumes_at_another_parallelism_to_the_uninterrupted_output(
) {
    scenario(CEP, 35, &["--state-backend", "lsm"]);
}
