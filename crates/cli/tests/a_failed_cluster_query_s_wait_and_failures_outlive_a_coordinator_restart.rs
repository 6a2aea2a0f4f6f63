//! A failed cluster query waits before its next attempt, and is given up after
//! `--restart-attempts` failures in a row with no checkpoint completed. Both are kept in the
//! coordinator's catalog: a coordinator restarted while the query waits does not take the
//! failed attempt over (nothing of it runs), waits what is left of the wait (never longer than
//! its own flags say), and goes on counting the failures from those recorded. `anduin status`
//! says when the next attempt starts and how many failures are left.

use crate::common;

use anduin_runtime::control::QueryState;
use common::cluster::{failing_at_start, LocalCluster, Setup};
use common::{anduin, wait_until_or_show};

const AN_HOUR_MS: u64 = 3_600_000;

fn flags(backoff: &[&str]) -> Vec<String> {
    ["--restart-attempts", "3", "--restart-backoff"]
        .iter()
        .chain(backoff)
        .map(|f| f.to_string())
        .collect()
}

/// Asserts that query `q` of `cluster` waits for its next attempt after one failure, with
/// more than a minute and at most an hour left, its status showing attempt `attempt` (0:
/// none was deployed) and the failure (`failure`, a part of its message).
fn waits_after_one_failure(cluster: &LocalCluster, attempt: u64, failure: &str) {
    let status = cluster.status("q");
    assert_eq!(
        status["state"],
        "recovering",
        "{status}\n{}",
        cluster.logs()
    );
    assert_eq!(status["attempt"], attempt, "{status}");
    assert_eq!(status["failures_in_a_row"], 1, "{status}");
    assert_eq!(status["restart_attempts"], 3, "{status}");
    let left = status["next_attempt_in_ms"].as_u64().expect("a wait");
    assert!(left > 60_000 && left <= AN_HOUR_MS, "{status}");
    assert!(
        status["error"]
            .as_str()
            .is_some_and(|e| e.contains(failure)),
        "the status names the failure: {status}"
    );
}

/// The failing query in a new directory, and a cluster of `workers` workers whose
/// coordinator waits an hour after a failure.
fn waiting_an_hour(workers: usize) -> (tempfile::TempDir, LocalCluster) {
    let work = tempfile::tempdir().expect("tempdir");
    failing_at_start(work.path());
    let cluster = LocalCluster::start_with(
        workers,
        8,
        Setup {
            coordinator_flags: flags(&["1h"]),
            ..Setup::default()
        },
    );
    (work, cluster)
}

/// Waits until the coordinator of `cluster` has said `line` (`what` names it).
fn await_line(cluster: &LocalCluster, what: &str, line: &str) {
    wait_until_or_show(
        what,
        || cluster.coordinator_log().contains(line),
        || cluster.logs(),
    );
}

#[test]
fn a_failed_cluster_query_s_wait_and_failures_outlive_a_coordinator_restart() {
    let (work, mut cluster) = waiting_an_hour(1);
    let _submit = cluster.submit(work.path(), "q.sql", &[]);
    await_line(
        &cluster,
        "the first attempt to fail",
        "recovering from the last checkpoint in 3600s",
    );
    waits_after_one_failure(&cluster, 1, "`out`");
    let shown = anduin(
        work.path(),
        &["status", "q", "--coordinator", &cluster.addr],
    );
    let line = String::from_utf8_lossy(&shown.stdout);
    assert!(
        line.contains("recovering (attempt 1)")
            && line.contains("; next attempt in ")
            && line.contains("(1 of 3 failures in a row with no checkpoint completed)"),
        "{line}"
    );

    // Restarted with the same flags: the wait goes on; the failed attempt is not taken over.
    cluster.restart_coordinator();
    await_line(
        &cluster,
        "the restarted coordinator to read the failure",
        "attempt 1 had failed before this coordinator started",
    );
    waits_after_one_failure(&cluster, 1, "`out`");
    // Its API (the web UI) serves it as recovering before any attempt of this coordinator.
    let client = anduin_api::Client::new(&cluster.api(), None).expect("an address");
    let info = client.query("q").expect("the API serves the waiting query");
    assert_eq!(info.state, QueryState::Recovering);
    let log = cluster.coordinator_log();
    assert!(log.contains("not taking that attempt over"), "{log}");
    assert!(
        !log.contains("waiting for its executors to report again"),
        "{log}"
    );

    // Restarted with a wait of 20 ms: the next attempts come at once, and the query is given
    // up after the third failure in all, not three more.
    cluster.setup.coordinator_flags = flags(&["20ms", "--restart-max-backoff", "40ms"]);
    cluster.restart_coordinator();
    wait_until_or_show(
        "the query to be given up",
        || cluster.status("q")["state"] == "failed",
        || cluster.logs(),
    );
    let status = cluster.status("q");
    assert_eq!(status["attempt"], 3, "{status}\n{}", cluster.logs());
    let log = cluster.coordinator_log();
    assert!(
        log.contains(
            "query q failed after 3 attempts, the last 3 in a row with no checkpoint completed"
        ),
        "{log}"
    );
    let client = anduin_api::Client::new(&cluster.api(), None).expect("an address");
    let shown = std::cell::Cell::new(None);
    wait_until_or_show(
        "the API to say failed",
        || {
            shown.set(client.query("q").ok().map(|i| i.state));
            shown.get() == Some(QueryState::Failed)
        },
        || format!("{:?}", shown.get()),
    );
}

/// The same when the attempt failed before it was deployed (the catalog has no attempt of
/// the query yet): its checkpoint directory is a file by the time a worker gives it slots.
/// probe47: a restarted coordinator started the next attempt at once, numbered 1 again.
#[test]
fn a_wait_after_a_failure_before_any_deployment_outlives_a_coordinator_restart() {
    let (work, mut cluster) = waiting_an_hour(0);
    std::fs::remove_file(work.path().join("out")).expect("no file in the way");
    let _submit = cluster.submit(work.path(), "q.sql", &[]);
    await_line(
        &cluster,
        "the query to wait for slots",
        "waiting for workers",
    );
    if cluster.checkpoints("q").is_dir() {
        std::fs::remove_dir_all(cluster.checkpoints("q")).expect("its checkpoint directory");
    }
    std::fs::write(cluster.checkpoints("q"), "a file in the way").expect("a file");
    cluster.add_worker("w0", 8);
    await_line(
        &cluster,
        "the first attempt to fail",
        "recovering from the last checkpoint in 3600s",
    );
    cluster.restart_coordinator();
    await_line(
        &cluster,
        "the restarted coordinator to read the failure",
        "attempt 1 had failed before this coordinator started",
    );
    waits_after_one_failure(&cluster, 0, "cannot use the checkpoint store");
    let log = cluster.coordinator_log();
    assert_eq!(
        log.matches("attempt 1 failed").count(),
        1,
        "no attempt after the restart\n{log}"
    );
}
