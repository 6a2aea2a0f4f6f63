//! The coordinator is no single point of loss: killed with SIGKILL mid-run (after a seeded
//! number of checkpoints) and started again on the same address and state directory, it
//! recovers its catalog, its workers and their executors report to it again — having kept
//! running meanwhile — and it takes over the query's checkpoints without restarting a task
//! (the query stays at attempt 1). The output equals an uninterrupted embedded run's.

use crate::common;

use common::cluster::{restart_coordinator_after, windowed_generator, LocalCluster};
use common::{anduin_ok, output_rows};

fn scenario(after: u64) {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        work.path().join("q.flow"),
        windowed_generator(
            5,
            60_000,
            20_000,
            r#"param kind = "tumbling" param size = "100ms""#,
        ),
    )
    .expect("query");
    anduin_ok(
        work.path(),
        &["run", "q.flow", "--var", "OUTPUT=reference.csv"],
    );
    let expected = output_rows(&work.path().join("reference.csv"));
    assert!(expected.len() > 10_000, "the query writes enough rows");

    let mut cluster = LocalCluster::start(3, 8);
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &[
            "--var",
            "OUTPUT=out",
            "--parallelism",
            "3",
            "--no-chaining",
            "--checkpoint-every",
            "4000",
        ],
    );
    restart_coordinator_after(&mut cluster, "q", after);
    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "after {after}: {stderr}");
    let got = output_rows(&work.path().join("out"));
    assert_eq!(
        got.len(),
        expected.len(),
        "after {after}: rows lost or duplicated"
    );
    assert!(
        got == expected,
        "after {after}: the output differs from the uninterrupted run"
    );
    let status = cluster.status("q");
    assert_eq!(status["state"], "finished", "{status}");
    assert_eq!(
        status["attempt"], 1,
        "after {after}: the restarted coordinator restarted the query's tasks: {status}"
    );
}

#[test]
fn a_coordinator_killed_mid_run_and_restarted_takes_over_without_restarting_a_task() {
    for after in [1, 3] {
        scenario(after);
    }
}
