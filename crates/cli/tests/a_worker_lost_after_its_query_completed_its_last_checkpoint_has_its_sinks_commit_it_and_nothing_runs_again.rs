//! A worker can be lost after its query is over in all but name: it is paused (SIGSTOP, its
//! executor running on) after the first checkpoint, its executor ends its part with the
//! others and the last checkpoint completes at the end of every input, and only then, its
//! heartbeats missing for `--heartbeat-timeout`, is the worker declared dead. The
//! coordinator cannot tell whether the lost part's sinks committed that last checkpoint (its
//! end was never heard of): it restores every instance from it, so that the sinks commit
//! what it holds, and runs nothing (before, it said "nothing to recover" and ended the query
//! as finished: an exactly-once Kafka sink's last rows were then never committed, see
//! `a_cluster_query_whose_last_kafka_commit_failed_…`). The output equals an uninterrupted
//! embedded run's, and the query ends finished. (Should the run be so slow that the worker
//! is declared dead before the end, its part is restored alone: the output is the same.)

use crate::common;

use common::cluster::{children, signal, tumbling_generator, PerTask};

#[test]
fn a_worker_lost_after_its_query_completed_its_last_checkpoint_has_its_sinks_commit_it_and_nothing_runs_again(
) {
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
    let logs = common::cluster::assert_submitted_output(
        &t.cluster,
        submit,
        &t.work.path().join("out"),
        &t.expected,
    );
    signal(worker, libc::SIGCONT);
    let log = t.cluster.coordinator_log();
    assert!(
        log.contains("instances restored")
            || log.contains("its last checkpoint says every input ended: its instances are restored from it so that its sinks commit what it holds; nothing runs"),
        "{logs}"
    );
    assert!(!log.contains("nothing to recover"), "{log}");
    // The coordinator's API says it finished (it said it was recovering).
    let client = anduin_api::Client::new(&t.cluster.api(), None).expect("an address");
    let info = client.query("q").expect("the coordinator serves the query");
    assert_eq!(
        info.state,
        anduin_runtime::control::QueryState::Finished,
        "{log}"
    );
}
