//! Per-task recovery outlives its coordinator: a worker is killed with SIGKILL, its instances
//! are restored alone on a live worker, then the coordinator is killed with SIGKILL and
//! started again on the same address and state. The restarted coordinator reads from its
//! catalog where the restored part runs and at which incarnation, takes the attempt over
//! without restarting a task — the query stays at attempt 1 — and the output equals an
//! uninterrupted embedded run's.

mod common;

use common::cluster::{kill_worker_after, restart_coordinator_after, windowed_generator};
use common::cluster::{LocalCluster, Setup};
use common::{anduin_ok, output_rows, wait_until};

#[test]
fn a_coordinator_restarted_after_a_per_task_recovery_takes_over_the_restored_part() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        work.path().join("q.flow"),
        windowed_generator(
            7,
            200_000,
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

    let mut cluster = LocalCluster::start_with(
        3,
        8,
        Setup {
            coordinator_flags: vec!["--per-task-recovery".into()],
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
            "3",
            "--no-chaining",
            "--checkpoint-every",
            "4000",
        ],
    );
    assert!(
        kill_worker_after(&mut cluster, "q", 1, 1),
        "the kill must come mid-run"
    );
    wait_until("the lost instances restored alone", || {
        cluster
            .coordinator_log()
            .contains("instances restored; no other task was restarted")
    });
    let restored_at = cluster.status("q")["last_checkpoint"].as_u64().unwrap_or(0);
    // A checkpoint the restored part took part in, then the coordinator goes.
    restart_coordinator_after(&mut cluster, "q", restored_at + 1);
    let out = submit.wait_output();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        cluster.logs()
    );
    let got = output_rows(&work.path().join("out"));
    assert_eq!(
        got.len(),
        expected.len(),
        "rows lost or duplicated\n{}",
        cluster.logs()
    );
    assert!(
        got == expected,
        "the output differs from the uninterrupted run"
    );
    let status = cluster.status("q");
    assert_eq!(status["state"], "finished", "{status}");
    assert_eq!(
        status["attempt"],
        1,
        "the restarted coordinator rolled the query back: {status}\n{}",
        cluster.logs()
    );
    assert!(
        cluster
            .coordinator_log()
            .contains("taken over, nothing restarted"),
        "{}",
        cluster.logs()
    );
}
