//! The last checkpoint's barrier ends the sources. A coordinator that dies after every source
//! took it, before the checkpoint completed, left the next coordinator a query it could not
//! finish well: it numbered a last checkpoint of its own, which no source was left to take,
//! and the query ended with its output complete but no checkpoint marked finished (a new
//! submission would read it all again). This was
//! `a_coordinator_killed_mid_run_takes_over_a_cluster_checkpointing_to_s3_without_restarting_a_task`
//! failing under load once the reader ran several instances (each at the paced rate, so the
//! last checkpoint came right after the second, where the kill lands). Now each executor
//! tells the next coordinator where its sources ended and the acknowledgements it sent since
//! the last complete checkpoint: the next coordinator completes the checkpoint the other began,
//! marked finished, without restarting a task; `anduin checkpoints list` shows it. The
//! coordinator, told to by a testing flag, exits as soon as every source reported taking the
//! last barrier (a kill in that window is too rare to aim at by timing).

use crate::common;

use common::cluster::{windowed_reference, LocalCluster, Setup};
use common::{output_rows, stdout_ok, wait_until};

#[test]
fn a_coordinator_that_died_once_the_sources_took_the_last_barrier_leaves_the_next_to_complete_it() {
    let work = tempfile::tempdir().expect("tempdir");
    let expected = windowed_reference(work.path(), 19, 40_000, 20_000);
    assert!(expected.len() > 1_000, "the query writes enough rows");

    let mut cluster = LocalCluster::start_with(
        3,
        8,
        Setup {
            coordinator_flags: vec!["--inject-exit-after".into(), "last-barrier-taken".into()],
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
            "10000",
        ],
    );
    wait_until(
        "the coordinator to exit once the sources took the last barrier",
        || cluster.coordinator.0.try_wait().is_ok_and(|s| s.is_some()),
    );
    let first = cluster.coordinator_log();
    assert!(first.contains("exiting after LastBarrierTaken"), "{first}");
    cluster.setup.coordinator_flags.clear();
    cluster.restart_coordinator();

    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let logs = cluster.logs();
    assert!(out.status.success(), "{stderr}\n{logs}");
    let got = output_rows(&work.path().join("out"));
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated\n{logs}");
    assert!(
        got == expected,
        "the output differs from the embedded run's"
    );
    let status = cluster.status("q");
    assert_eq!(status["state"], "finished", "{status}");
    assert_eq!(
        status["attempt"], 1,
        "a task was restarted: {status}\n{logs}"
    );
    let log = cluster.coordinator_log();
    assert!(
        !log[first.len()..].contains("its last checkpoint failed"),
        "{log}\n{logs}"
    );

    let listed = std::process::Command::new(env!("CARGO_BIN_EXE_anduin"))
        .arg("checkpoints")
        .arg("list")
        .arg(cluster.checkpoints("q"))
        .output()
        .expect("anduin runs");
    let listing = stdout_ok(&listed);
    let finished = listing
        .lines()
        .find(|l| l.contains("complete (finished)"))
        .unwrap_or_else(|| panic!("no finished checkpoint:\n{listing}\n{logs}"));
    let last = status["last_checkpoint"]
        .as_u64()
        .expect("a last checkpoint");
    assert_eq!(
        finished.split_whitespace().next(),
        Some(last.to_string().as_str()),
        "the last checkpoint of the status is the finished one:\n{listing}"
    );
}
