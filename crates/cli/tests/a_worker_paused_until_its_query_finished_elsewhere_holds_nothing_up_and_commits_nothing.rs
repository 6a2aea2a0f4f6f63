//! A worker paused (SIGSTOP, with its executor) for as long as its query takes to finish
//! elsewhere: its part — a generator fused with a file writer, no channel to another worker —
//! is restored on a live worker and the query finishes without it (the paused executor's
//! connection, which holds the attempt's checkpoint events open, is cut when its part is
//! restored). When the executor resumes it is stale and must not commit what it holds: its
//! tasks end their input only with the coordinator's leave, which it does not get, and it
//! learns from its cut connection that it must stop. The output equals an uninterrupted
//! embedded run's.

mod common;

use common::cluster::{children, running, LocalCluster, Setup};
use common::{anduin_ok, output_rows, wait_until};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 21
  param count = 120000
  param rate = 20000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "events"
  param path = "${OUTPUT}"
}
"#;

fn signal(pid: u32, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(pid).expect("a pid");
    // SAFETY: kill(2) with a PID this test started (a worker) or its worker started.
    unsafe {
        libc::kill(pid, signal);
    }
}

#[test]
fn a_worker_paused_until_its_query_finished_elsewhere_holds_nothing_up_and_commits_nothing() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), QUERY).expect("query");
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
            "--checkpoint-every",
            "4000",
        ],
    );
    wait_until("a checkpoint before the pause", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });
    // The query's one instance (a generator fused with its writer) runs on one worker.
    let (worker, executor) = cluster
        .workers
        .iter()
        .find_map(|w| Some((w.pid(), *children(w.pid()).first()?)))
        .expect("a worker runs the query's executor");
    signal(worker, libc::SIGSTOP);
    signal(executor, libc::SIGSTOP);
    // Its part is restored elsewhere, and the query finishes without it.
    let out = submit.wait_output();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        cluster.logs()
    );
    assert!(
        cluster
            .coordinator_log()
            .contains("instances restored; no other task was restarted"),
        "{}",
        cluster.logs()
    );
    // The stale executor resumes alone (its worker still paused, so that it is not stopped
    // by it): it reads to the end of its input and must not commit.
    signal(executor, libc::SIGCONT);
    wait_until("the stale executor ended", || !running(executor));
    signal(worker, libc::SIGCONT);
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
}
