//! A worker can be lost after its query is over in all but name: it is paused (SIGSTOP, its
//! executor running on) after the first checkpoint, its executor ends its part with the
//! others and the last checkpoint completes at the end of every input, and only then, its
//! heartbeats missing for `--heartbeat-timeout`, is the worker declared dead. Nothing is left
//! to recover: the coordinator says so and ends the query as finished, at its first attempt,
//! instead of announcing a whole rollback that it then skips. The output equals an
//! uninterrupted embedded run's. (Should the run be so slow that the worker is declared dead
//! before the end, its part is restored alone: the output is the same.)

use crate::common;

use common::cluster::{children, signal, tumbling_generator, PerTask};

#[test]
fn a_worker_lost_after_its_query_completed_its_last_checkpoint_costs_no_rollback() {
    let t = PerTask::start_with(
        &tumbling_generator(17, 60_000),
        &["--heartbeat-timeout", "20s"],
    );
    let submit = t.submit(&["--no-chaining"]);
    let worker = t
        .cluster
        .workers
        .iter()
        .map(|w| w.pid())
        .find(|w| !children(*w).is_empty())
        .expect("a worker runs an executor");
    signal(worker, libc::SIGSTOP);
    let log = t.assert_same_output_at_attempt_1(submit);
    signal(worker, libc::SIGCONT);
    assert!(!log.contains("the whole query rolls back"), "{log}");
    if !log.contains("instances restored") {
        assert!(log.contains("nothing to recover"), "{log}");
    }
    // The coordinator's API says it finished (it said it was recovering).
    let client = anduin_api::Client::new(&t.cluster.api(), None).expect("an address");
    let info = client.query("q").expect("the coordinator serves the query");
    assert_eq!(
        info.state,
        anduin_runtime::control::QueryState::Finished,
        "{log}"
    );
}
