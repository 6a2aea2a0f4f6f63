//! Checkpoints of a cluster's query in an S3-compatible object store (a moto server on
//! loopback; no directory is shared): a coordinator and three workers run Q2 of the benchmark
//! over the million-row file, each executor uploading its tasks' files and the coordinator
//! writing the manifests. A worker killed with SIGKILL at a seeded moment costs nothing: its
//! instances are restored on the others from the store (per-task recovery, or a whole
//! rollback when the query was finishing), its output equal to the embedded run's. A
//! coordinator killed mid-run and started again takes over from the store without restarting
//! a task. Either way `anduin checkpoints list` reads the query's checkpoints in the store,
//! and the executors leave no staging directory behind.

use crate::common;

use std::path::Path;

use common::cluster::{
    kill_worker_at, pick, q2_paced, q2_reference, restart_coordinator_after, LocalCluster, Moment,
    Setup,
};
use common::output_rows;
use common::s3::{S3Server, BUCKET};

/// Each of the 4 instances of Q2's reader reads at most this many rows a second (a
/// quarter of the million rows): a run of a few seconds, with a checkpoint every 100 000 rows
/// of a reader instance. The coordinator's kill after the second lands close to the last,
/// often after its barrier ended the sources (the next coordinator completes it).
const RATE: u64 = 150_000;

/// A cluster of a coordinator and three workers whose checkpoints go to `store`.
fn cluster(s3: &S3Server, store: &str) -> LocalCluster {
    LocalCluster::start_with(
        3,
        8,
        Setup {
            checkpoint_store: Some(store.to_string()),
            env: s3
                .env()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            ..Setup::default()
        },
    )
}

/// Submits the paced Q2 (in `work`) to `cluster`, writing `out`.
fn submit(cluster: &LocalCluster, work: &Path, out: &str) -> common::ChildGuard {
    cluster.submit(
        work,
        "q2.flow",
        &[
            "--var",
            "INPUT=events.csv",
            "--var",
            &format!("OUTPUT={out}"),
            "--parallelism",
            "4",
            "--checkpoint-every",
            "100000",
        ],
    )
}

/// What is left to check once the query ended: its output, its checkpoints in the store (as
/// `anduin checkpoints list` reads them), and that no executor of its last attempt on a
/// worker other than `killed` left its staging directory.
#[allow(clippy::too_many_arguments)]
fn check_the_end(
    cluster: &LocalCluster,
    killed: Option<usize>,
    s3: &S3Server,
    store: &str,
    work: &Path,
    out: &str,
    expected: &[String],
    what: &str,
) -> serde_json::Value {
    let got = output_rows(&work.join(out));
    assert_eq!(got.len(), expected.len(), "{what}: rows lost or duplicated");
    assert!(
        got == expected,
        "{what}: the output differs from the embedded run's"
    );
    let status = cluster.status("q2");
    assert_eq!(status["state"], "finished", "{what}: {status}");
    let last = status["last_checkpoint"]
        .as_u64()
        .expect("a last checkpoint");

    let url = format!("{store}/q2");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(["checkpoints", "list", &url])
        .envs(s3.env())
        .output()
        .expect("anduin runs");
    let listing = common::stdout_ok(&out);
    let finished = listing
        .lines()
        .find(|l| l.contains("complete (finished)"))
        .unwrap_or_else(|| panic!("{what}: no finished checkpoint in {url}:\n{listing}"));
    assert_eq!(
        finished.split_whitespace().next(),
        Some(last.to_string().as_str()),
        "{what}: the last checkpoint of the status is the finished one in the store:\n{listing}"
    );
    assert!(
        !listing.contains("corrupt"),
        "{what}: every checkpoint in the store checks out:\n{listing}"
    );

    assert!(
        !cluster.dir.path().join("checkpoints").exists(),
        "{what}: no checkpoint went to a directory"
    );
    // A part's directory is `QUERY-ATTEMPT-PART`, `.INCARNATION` after per-task recoveries.
    let attempt = status["attempt"].as_u64().expect("an attempt");
    let mut parts = 0;
    for w in (0..3).filter(|w| Some(*w) != killed) {
        let dir = cluster.dir.path().join(format!("w{w}"));
        let entries = std::fs::read_dir(&dir).expect("the worker's directory");
        for part in entries.flatten().map(|e| e.path()) {
            let name = part.file_name().map(|n| n.to_string_lossy().into_owned());
            if !name.is_some_and(|n| n.starts_with(&format!("q2-{attempt}-"))) {
                continue;
            }
            parts += 1;
            assert!(
                !part.join("checkpoints").exists(),
                "{what}: the part in {} left its staging directory",
                part.display()
            );
        }
    }
    assert!(parts > 0, "{what}: no part of attempt {attempt} found");
    status
}

/// The work directory with the events, the paced Q2 and the embedded run's output.
fn work() -> (tempfile::TempDir, Vec<String>) {
    let work = tempfile::tempdir().expect("tempdir");
    let expected = q2_reference(work.path());
    std::fs::write(work.path().join("q2.flow"), q2_paced(RATE)).expect("query");
    (work, expected)
}

/// The seeds: one, or as many as `ANDUIN_SOAK_SEEDS` says (scripts/soak_cluster_kills.sh).
fn seeds() -> Vec<u64> {
    match std::env::var("ANDUIN_SOAK_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(n) => (1..=n).collect(),
        None => vec![7],
    }
}

#[test]
fn a_worker_killed_mid_run_costs_a_cluster_checkpointing_to_s3_nothing() {
    let (work, expected) = work();
    let s3 = S3Server::start();
    for seed in seeds() {
        let store = format!("s3://{BUCKET}/cluster-{seed}");
        let out = format!("out-{seed}");
        let mut cluster = cluster(&s3, &store);
        let submit = submit(&cluster, work.path(), &out);
        // After one of the first three checkpoints (of ten), anywhere in the cycle after it.
        let moment = Moment::seeded(seed, 1, 3, 100_000, RATE);
        let victim = pick(seed, 3, 3) as usize;
        assert!(
            kill_worker_at(&mut cluster, "q2", victim, &moment).mid_part,
            "seed {seed}: worker {victim}'s part had ended {moment}: the kill must come mid-run"
        );
        let ended = submit.wait_output();
        let stderr = String::from_utf8_lossy(&ended.stderr);
        assert!(ended.status.success(), "seed {seed}: {stderr}");
        let what = format!("seed {seed} (worker {victim} killed {moment})");
        let status = check_the_end(
            &cluster,
            Some(victim),
            &s3,
            &store,
            work.path(),
            &out,
            &expected,
            &what,
        );
        let log = cluster.coordinator_log();
        assert!(
            log.contains("instances restored; no other task was restarted")
                || status["attempt"].as_u64().is_some_and(|a| a >= 2),
            "{what}: the query did not recover from the kill: {status}\n{log}"
        );
        eprintln!("{what}: recovered");
    }
}

#[test]
fn a_coordinator_killed_mid_run_takes_over_a_cluster_checkpointing_to_s3_without_restarting_a_task()
{
    let (work, expected) = work();
    let s3 = S3Server::start();
    let store = format!("s3://{BUCKET}/restarted");
    let mut cluster = cluster(&s3, &store);
    let submit = submit(&cluster, work.path(), "out");
    restart_coordinator_after(&mut cluster, "q2", 2);
    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let status = check_the_end(
        &cluster,
        None,
        &s3,
        &store,
        work.path(),
        "out",
        &expected,
        "coordinator restarted after checkpoint 2",
    );
    assert_eq!(
        status["attempt"], 1,
        "the restarted coordinator restarted the query's tasks: {status}"
    );
    // The layout is `anduin run`'s: run embedded from the query's checkpoints in the store
    // (another machine: an empty cache), it finds the query finished.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args([
            "run",
            "q2.flow",
            "--var",
            "INPUT=events.csv",
            "--var",
            "OUTPUT=out",
        ])
        .args([
            "--parallelism",
            "4",
            "--checkpoint-store",
            &format!("{store}/q2"),
        ])
        .args(["--checkpoint-cache", "cache"])
        .current_dir(work.path())
        .envs(s3.env())
        .output()
        .expect("anduin runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.contains("already finished"),
        "{stderr}"
    );
}
