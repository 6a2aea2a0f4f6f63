//! `anduin coordinator --scheduler process --workers 2` starts its two workers itself. One of
//! them is killed with SIGKILL mid-run: the query's output still equals an uninterrupted
//! embedded run's, at its first attempt (the lost instances are restored alone), and the
//! scheduler starts a worker of the lost one's name again, so that the cluster has its two
//! workers back. Stopped with SIGTERM, the coordinator stops every worker it started. While the
//! query runs, `anduin status` shows each operator's rows and rate, from the figures the
//! executors send to the coordinator.

use crate::common;

use common::cluster::{children, running, signal, tumbling_generator, LocalCluster, Setup};
use common::{anduin_ok, output_rows, wait_until};

/// Processes the coordinator started (they outlive a coordinator killed by the test's guard),
/// killed by their PIDs when the test ends.
#[derive(Default)]
struct Adopted(Vec<u32>);

impl Drop for Adopted {
    fn drop(&mut self) {
        for pid in &self.0 {
            if running(*pid) {
                signal(*pid, libc::SIGKILL);
            }
        }
    }
}

#[test]
fn a_coordinator_with_the_process_scheduler_starts_its_workers_and_starts_a_killed_one_again() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), tumbling_generator(29, 200_000)).expect("query");
    anduin_ok(
        work.path(),
        &["run", "q.flow", "--var", "OUTPUT=reference.csv"],
    );
    let expected = output_rows(&work.path().join("reference.csv"));
    let mut cluster = LocalCluster::start_with(
        0,
        8,
        Setup {
            coordinator_flags: ["--scheduler", "process", "--workers", "2", "--slots", "8"]
                .map(String::from)
                .to_vec(),
            ..Setup::default()
        },
    );
    let mut adopted = Adopted::default();
    let coordinator = cluster.coordinator.pid();
    let seen = |adopted: &mut Adopted| {
        for pid in children(coordinator) {
            if !adopted.0.contains(&pid) {
                adopted.0.push(pid);
            }
        }
    };
    wait_until("the scheduler's two workers", || {
        seen(&mut adopted);
        cluster.workers_joined() == 2
    });
    let first: Vec<u32> = children(coordinator)
        .into_iter()
        .filter(|p| running(*p))
        .collect();
    assert_eq!(first.len(), 2, "two worker processes: {first:?}");
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &[
            "--var",
            "OUTPUT=out",
            "--parallelism",
            "2",
            "--checkpoint-every",
            "4000",
        ],
    );
    wait_until("the first checkpoint", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });
    wait_until("the source's rate in the status", || {
        cluster.status("q")["operators"]
            .as_array()
            .is_some_and(|ops| {
                ops.iter().any(|o| {
                    o["operator"] == "gen" && o["rows_out_per_s"].as_f64().is_some_and(|r| r > 0.0)
                })
            })
    });
    let text = std::process::Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(["status", "q", "--coordinator", &cluster.addr])
        .output()
        .expect("status runs");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("rows out: ") && text.contains("gen "),
        "{text}"
    );
    signal(first[0], libc::SIGKILL);
    wait_until("a worker started again", || {
        seen(&mut adopted);
        children(coordinator)
            .into_iter()
            .any(|p| running(p) && !first.contains(&p))
    });
    let out = submit.wait_output();
    let logs = cluster.logs();
    assert!(
        out.status.success(),
        "{}\n{logs}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = output_rows(&work.path().join("out"));
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated\n{logs}");
    assert!(
        got == expected,
        "the output differs from the uninterrupted run"
    );
    assert_eq!(cluster.status("q")["attempt"], 1, "{logs}");
    wait_until("two live workers again", || cluster.workers_joined() == 2);
    let log = cluster.coordinator_log();
    assert_eq!(
        log.matches("anduin: scheduler: started worker local-")
            .count(),
        3,
        "{log}"
    );
    // SIGTERM: the coordinator stops its workers, then itself.
    signal(coordinator, libc::SIGTERM);
    wait_until("the coordinator to stop", || {
        cluster.coordinator.0.try_wait().is_ok_and(|s| s.is_some())
    });
    let left: Vec<u32> = adopted.0.iter().copied().filter(|p| running(*p)).collect();
    assert!(
        left.is_empty(),
        "workers outlived their coordinator: {left:?}"
    );
}
