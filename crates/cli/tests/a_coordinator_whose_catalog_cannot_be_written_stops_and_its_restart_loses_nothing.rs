//! A coordinator whose catalog cannot take an edit (a full disk, a state directory gone
//! read-only) must not act on what it could not record: told that a part ended, it used to
//! log the failure, tell the worker the end was noted (so the worker forgot it) and go on, and
//! a restarted coordinator, reading a catalog without that end, would wait for a part that had
//! finished. It now stops at once, before acting, with exit code 74 and a message that says
//! what to do; its workers and their executors run on, and the coordinator started again reads
//! its catalog back, takes the query over and finishes it at its first attempt, its output
//! equal to an uninterrupted embedded run's. A testing flag makes the chosen edit's write fail
//! (a full disk is not something a test can make on every machine).

use crate::common;

use common::cluster::{tumbling_generator, PerTask};
use common::wait_until;

fn scenario(edit: &str, seed: u64) {
    let mut t = PerTask::start_with(
        &tumbling_generator(seed, 60_000),
        &["--inject-catalog-failure-at", edit],
    );
    // As `PerTask::submit`, without waiting for a checkpoint (the coordinator may stop at the
    // first).
    let args = [
        "--var",
        "OUTPUT=out",
        "--parallelism",
        "3",
        "--checkpoint-every",
        "4000",
        "--no-chaining",
    ];
    let submit = t.cluster.submit(t.work.path(), "q.flow", &args);
    let mut code = None;
    wait_until("the coordinator to stop on the failed edit", || {
        code = t
            .cluster
            .coordinator
            .0
            .try_wait()
            .ok()
            .flatten()
            .map(|s| s.code());
        code.is_some()
    });
    let first = t.cluster.coordinator_log();
    assert_eq!(code, Some(Some(74)), "{first}");
    assert!(
        first.contains("the coordinator stops: its catalog did not take an edit")
            && first.contains("start the coordinator again once its --state-dir can be written"),
        "{first}"
    );
    t.cluster.setup.coordinator_flags.clear();
    t.cluster.restart_coordinator();
    let log = t.assert_same_output_at_attempt_1(submit);
    let status = t.cluster.status("q");
    assert_eq!(status["state"], "finished", "{status}\n{log}");
    assert_eq!(status["error"], serde_json::Value::Null, "{status}\n{log}");
}

#[test]
fn a_coordinator_that_cannot_record_a_part_end_stops_before_telling_the_worker() {
    scenario("part-ended", 47);
}

#[test]
fn a_coordinator_that_cannot_record_a_completed_checkpoint_stops() {
    scenario("checkpoint-completed", 48);
}
