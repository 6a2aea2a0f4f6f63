//! A failed cluster query waits before its next attempt (`anduin coordinator
//! --restart-backoff`, doubled after each failure in a row); a cancel asked while it waits
//! ends the wait at once: the query is cancelled, no further attempt starts. Here the wait is
//! an hour, so only the cancel can end it. While it waits, its API says it is recovering;
//! once cancelled, cancelled.

use crate::common;

use common::cluster::{failing_at_start, LocalCluster, Setup};
use common::{anduin_ok, wait_until_or_show};

#[test]
fn a_cluster_query_waiting_for_its_next_attempt_is_cancelled_at_once() {
    let work = tempfile::tempdir().expect("tempdir");
    failing_at_start(work.path());
    let cluster = LocalCluster::start_with(
        1,
        8,
        Setup {
            coordinator_flags: ["--restart-backoff", "1h"].map(String::from).to_vec(),
            ..Setup::default()
        },
    );
    let submit = cluster.submit(work.path(), "q.sql", &[]);
    wait_until_or_show(
        "the first attempt to fail",
        || {
            cluster
                .coordinator_log()
                .contains("recovering from the last checkpoint in 3600s")
        },
        || cluster.logs(),
    );
    // Its control plane (the API, the web UI) says it is recovering, not failed (probe45: for
    // the whole wait it said "failed").
    let client = anduin_api::Client::new(&cluster.api(), None).expect("an address");
    let info = client.query("q").expect("the API knows the query");
    assert_eq!(info.state, anduin_runtime::control::QueryState::Recovering);
    let refused = client
        .checkpoint("q")
        .expect_err("no checkpoint while it waits");
    assert!(refused.to_string().contains("recovering"), "{refused}");

    anduin_ok(
        work.path(),
        &["cancel", "q", "--coordinator", &cluster.addr],
    );
    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let status = cluster.status("q");
    assert_eq!(status["state"], "cancelled", "{status}\n{}", cluster.logs());
    assert_eq!(
        status["attempt"], 1,
        "no attempt after the cancel: {status}"
    );
    assert!(
        cluster
            .coordinator_log()
            .contains("query q cancelled (while it waited for its next attempt)"),
        "{}",
        cluster.logs()
    );
    // And its API says so too: no attempt is to recover it any more (probe46: it said
    // `recovering` for good).
    let shown = std::cell::Cell::new(None);
    wait_until_or_show(
        "the API to say cancelled",
        || {
            shown.set(client.query("q").ok().map(|i| i.state));
            shown.get() == Some(anduin_runtime::control::QueryState::Cancelled)
        },
        || format!("{:?}", shown.get()),
    );
}
