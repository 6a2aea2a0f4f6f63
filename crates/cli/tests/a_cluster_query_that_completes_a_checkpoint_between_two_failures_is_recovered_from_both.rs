//! A cluster query that fails again and again, but completes a checkpoint between its
//! failures, is recovered every time: only the failures in a row that make no progress count
//! against `anduin coordinator --restart-attempts`. Here the coordinator gives a query two
//! attempts in a row (`--restart-attempts 2`, whole rollbacks with `--no-per-task-recovery`)
//! and two of its three workers are killed, the second once the attempt after the first kill
//! has completed a checkpoint of its own: the query finishes with the rows of an
//! uninterrupted run. Counting every failure, as the coordinator did before, the second kill
//! failed it (and ten kills over a long life failed any query).

use crate::common;

use common::cluster::{kill_worker_at, windowed_reference, LocalCluster, Moment, Setup};
use common::{output_rows, wait_until};

/// A worker (its index) that runs instances of the current attempt, by `status`.
fn a_worker_running(status: &serde_json::Value) -> usize {
    status["instances"]
        .as_object()
        .and_then(|i| {
            i.values()
                .filter_map(|w| w.as_str()?.strip_prefix('w'))
                .next()
        })
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no worker runs an instance: {status}"))
}

#[test]
fn a_cluster_query_that_completes_a_checkpoint_between_two_failures_is_recovered_from_both() {
    let work = tempfile::tempdir().expect("tempdir");
    // 40 000 rows at 4 000 a second: about 10 s, a checkpoint every second.
    let expected = windowed_reference(work.path(), 7, 40_000, 4_000);
    let mut cluster = LocalCluster::start_with(
        3,
        8,
        Setup {
            coordinator_flags: ["--no-per-task-recovery", "--restart-attempts", "2"]
                .map(String::from)
                .to_vec(),
            ..Setup::default()
        },
    );
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &[
            "--var",
            "OUTPUT=out",
            "--parallelism",
            "2",
            "--no-chaining",
            "--checkpoint-every",
            "2000",
        ],
    );

    let mut status = serde_json::Value::Null;
    wait_until("checkpoint 1 of attempt 1", || {
        status = cluster.status("q");
        status["last_checkpoint"].as_u64().is_some_and(|e| e >= 1) || status["state"] == "finished"
    });
    assert_eq!(
        status["attempt"], 1,
        "the query is still in its first attempt: {status}"
    );
    let first = a_worker_running(&status);
    let kill = kill_worker_at(&mut cluster, "q", first, &Moment::at_checkpoint(1));
    assert!(
        kill.mid_part,
        "worker w{first} ran its part when killed: {}",
        kill.status
    );

    // The next attempt completes a checkpoint newer than any before the kill.
    let before = kill.status["last_checkpoint"].as_u64().unwrap_or(0);
    wait_until("a checkpoint of attempt 2", || {
        status = cluster.status("q");
        status["state"] == "finished"
            || status["state"] == "failed"
            || (status["attempt"].as_u64() == Some(2)
                && status["last_checkpoint"]
                    .as_u64()
                    .is_some_and(|e| e > before))
    });
    assert_eq!(
        status["state"],
        "running",
        "attempt 2 runs: {status}\n{}",
        cluster.logs()
    );
    let second = a_worker_running(&status);
    assert_ne!(second, first, "the killed worker runs nothing: {status}");
    let after = status["last_checkpoint"].as_u64().unwrap_or(0);
    let kill = kill_worker_at(&mut cluster, "q", second, &Moment::at_checkpoint(after));
    assert!(
        kill.mid_part,
        "worker w{second} ran its part when killed: {}",
        kill.status
    );

    let ended = submit.wait_output();
    let said = String::from_utf8_lossy(&ended.stderr);
    assert!(ended.status.success(), "{said}\n{}", cluster.logs());
    let status = cluster.status("q");
    assert_eq!(status["state"], "finished", "{status}");
    assert_eq!(
        status["attempt"], 3,
        "one attempt after each kill: {status}"
    );
    let log = cluster.coordinator_log();
    assert!(!log.contains("failed after"), "{log}");
    let got = output_rows(&work.path().join("out"));
    assert!(
        got == expected,
        "{} rows against the uninterrupted run's {}: the output differs",
        got.len(),
        expected.len()
    );
}
