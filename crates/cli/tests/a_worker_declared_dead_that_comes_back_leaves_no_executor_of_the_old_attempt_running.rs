//! A worker that is alive but stops answering (paused, its host swapping, a network partition)
//! is declared dead after the heartbeat timeout, and its query recovers on the other workers.
//! When that worker comes back, the executor it still runs for the old attempt must end: it
//! belongs to an attempt that is over, and it reads the same inputs and writes into the same
//! output directories as the new one.
//!
//! Found by a hostile probe (SIGSTOP a worker past the 5 s timeout, then SIGCONT): the
//! coordinator cancels the old attempt only on the workers it still thinks alive (driver.rs
//! `wind_down`), the returning worker registers under a new number and never kills what it
//! ran under the old one (worker.rs), so the old executor runs on for ever — its pipeline
//! here has no edge to another worker, so nothing fails it — and reconnects to the coordinator
//! every 50 ms, each time turned away with a warning in the coordinator's log.

use crate::common;

use common::cluster::{children, running, LocalCluster};
use common::{anduin_ok, output_rows, wait_until};

/// Two independent pipelines: with two workers, each runs one whole (instances go to the
/// least used worker in the order of the plan's tasks: genA, genB, outA, outB).
const TWO_PIPELINES: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "genA", type = "generator" {
  param profile = "events"
  param seed = 7
  param count = 40000
  param rate = 4000
  param event_time = "ts"
  output name = "a", type = "Event"
}
operator name = "genB", type = "generator" {
  param profile = "events"
  param seed = 8
  param count = 40000
  param rate = 4000
  param event_time = "ts"
  output name = "b", type = "Event"
}
operator name = "outA", type = "writer" {
  input name = "a"
  param path = "${OUTPUT}/A"
}
operator name = "outB", type = "writer" {
  input name = "b"
  param path = "${OUTPUT}/B"
}
"#;

fn signal(pid: u32, sig: i32) {
    // SAFETY: sends a signal to a process this test started.
    let rc = unsafe { libc::kill(pid as i32, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig})");
}

#[test]
fn a_worker_declared_dead_that_comes_back_leaves_no_executor_of_the_old_attempt_running() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), TWO_PIPELINES).expect("query");
    anduin_ok(
        work.path(),
        &[
            "run",
            "q.flow",
            "--var",
            "OUTPUT=reference",
            "--checkpoint-dir",
            "reference.ckpt",
        ],
    );

    let cluster = LocalCluster::start(2, 4);
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &[
            "--var",
            "OUTPUT=out",
            "--no-chaining",
            "--checkpoint-every",
            "2000",
        ],
    );
    wait_until("a first checkpoint", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });
    let victim = cluster.workers[0].pid();
    let mut executor = None;
    wait_until("the victim's executor", || {
        executor = children(victim).first().copied();
        executor.is_some()
    });
    let executor = executor.expect("found");

    signal(victim, libc::SIGSTOP);
    wait_until("the paused worker declared dead", || {
        cluster.all()["workers"]
            .as_array()
            .is_some_and(|w| w.iter().any(|w| w["alive"] == false))
    });
    signal(victim, libc::SIGCONT);

    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for part in ["A", "B"] {
        assert_eq!(
            output_rows(&work.path().join("out").join(part)),
            output_rows(&work.path().join("reference").join(part)),
            "output {part}"
        );
    }
    wait_until(
        "the old attempt's executor on the returning worker to end",
        || !running(executor),
    );
}
