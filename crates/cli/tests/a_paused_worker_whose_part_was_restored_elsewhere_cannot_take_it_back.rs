//! A worker that is only paused (SIGSTOP, as a long garbage-collection pause or a frozen VM
//! would) past its heartbeat timeout is declared dead, and per-task recovery restores its
//! instances on a live worker. When it resumes (SIGCONT), its executor is stale: the
//! coordinator turns it away and ignores what it still sends, and the consumers of its
//! channels refuse its older incarnation, so it cannot take its part back. The query runs on
//! at its first attempt and its output equals an uninterrupted embedded run's; the stale
//! executor stops.

mod common;

use common::cluster::{children, running, windowed_generator, LocalCluster, Setup};
use common::{anduin_ok, output_rows, wait_until};

fn signal(pids: &[u32], signal: libc::c_int) {
    for pid in pids {
        let pid = libc::pid_t::try_from(*pid).expect("a pid");
        // SAFETY: kill(2) with a PID this test started (a worker) or its worker started.
        unsafe {
            libc::kill(pid, signal);
        }
    }
}

#[test]
fn a_paused_worker_whose_part_was_restored_elsewhere_cannot_take_it_back() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        work.path().join("q.flow"),
        windowed_generator(
            9,
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
        ],
    );
    wait_until("a checkpoint before the pause", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });
    let worker = cluster.workers[1].pid();
    let executors = children(worker);
    assert!(!executors.is_empty(), "the worker runs an executor");
    let mut paused = vec![worker];
    paused.extend(&executors);
    signal(&paused, libc::SIGSTOP);
    wait_until("the paused worker's instances restored elsewhere", || {
        cluster
            .coordinator_log()
            .contains("instances restored; no other task was restarted")
    });
    signal(&paused, libc::SIGCONT);
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
    assert_eq!(
        status["attempt"],
        1,
        "the query rolled back: {status}\n{}",
        cluster.logs()
    );
    wait_until("the stale executor stopped", || {
        !executors.iter().copied().any(running)
    });
}
