//! The executors keep the acknowledgements of the last checkpoint, and where their sources
//! ended, until that checkpoint is settled: a coordinator that read them all and died before
//! writing the last manifest leaves the next coordinator the facts to complete it from. An
//! executor whose part had ended used to end as soon as its coordinator had read them (it was
//! answered at once): a coordinator killed between reading the last acknowledgements and
//! writing the last manifest left the next one nothing to complete it from, and the query
//! finished with its output complete but no checkpoint marked finished. This was
//! `a_coordinator_killed_mid_run_takes_over_a_cluster_checkpointing_to_s3_without_restarting_a_task`
//! failing under load ("no finished checkpoint", every part ended before the kill). The
//! coordinator, told to by a testing flag, exits before the last manifest once every executor
//! waits to end (a kill in that window is too rare to aim at by timing); the next one
//! completes the last checkpoint, marked finished, without restarting a task.

use crate::common;

use common::cluster::{windowed_reference, LocalCluster, Setup};
use common::{output_rows, stdout_ok, wait_until};

#[test]
fn a_coordinator_that_died_after_reading_the_last_acknowledgements_leaves_the_next_to_complete_the_last_checkpoint(
) {
    let work = tempfile::tempdir().expect("tempdir");
    let expected = windowed_reference(work.path(), 23, 40_000, 20_000);
    assert!(expected.len() > 1_000, "the query writes enough rows");

    let mut cluster = LocalCluster::start_with(
        3,
        8,
        Setup {
            coordinator_flags: vec![
                "--inject-exit-after".into(),
                "last-checkpoint-awaited".into(),
            ],
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
        "the coordinator to exit once every executor waits for the last checkpoint",
        || cluster.coordinator.0.try_wait().is_ok_and(|s| s.is_some()),
    );
    let first = cluster.coordinator_log();
    assert!(
        first.contains("exiting after LastCheckpointAwaited"),
        "{first}\n{}",
        cluster.logs()
    );
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
