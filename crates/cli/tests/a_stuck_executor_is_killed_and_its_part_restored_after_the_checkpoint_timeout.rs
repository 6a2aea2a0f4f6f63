//! An executor can get stuck while its worker heartbeats on (paused here with SIGSTOP, as a
//! deadlock or an endless loop in a function would): the checkpoint it holds back times out
//! (`--checkpoint-timeout`), the coordinator tells the stuck part from the parts that only
//! wait behind it, has its worker kill it, and restores its instances alone while the rest of
//! the query runs on, at its first attempt. The output equals an uninterrupted embedded run's.

mod common;

use common::cluster::{children, running, windowed_generator, LocalCluster, Setup};
use common::{anduin_ok, output_rows, wait_until};

#[test]
fn a_stuck_executor_is_killed_and_its_part_restored_after_the_checkpoint_timeout() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        work.path().join("q.flow"),
        windowed_generator(
            13,
            200_000,
            20_000,
            r#"param kind = "sliding" param size = "200ms" param slide = "50ms""#,
        ),
    )
    .expect("query");
    anduin_ok(
        work.path(),
        &["run", "q.flow", "--var", "OUTPUT=reference.csv"],
    );
    let expected = output_rows(&work.path().join("reference.csv"));

    let cluster = LocalCluster::start_with(
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
            "--checkpoint-timeout",
            "3s",
            // Checkpoints by time too: a stalled query triggers none by rows.
            "--checkpoint-interval",
            "500ms",
        ],
    );
    wait_until("a checkpoint before the kill", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });
    let executors = children(cluster.workers[2].pid());
    assert_eq!(executors.len(), 1, "the worker runs one executor");
    let pid = libc::pid_t::try_from(executors[0]).expect("a pid");
    // SAFETY: kill(2) on the executor the test's worker started.
    unsafe {
        libc::kill(pid, libc::SIGSTOP);
    }
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
    let log = cluster.coordinator_log();
    assert_eq!(
        status["attempt"],
        1,
        "the query rolled back as a whole: {status}\n{}",
        cluster.logs()
    );
    assert!(
        log.contains("past --checkpoint-timeout: stuck")
            && log.contains("instances restored; no other task"),
        "{log}"
    );
    wait_until("the stuck executor killed", || !running(executors[0]));
}
