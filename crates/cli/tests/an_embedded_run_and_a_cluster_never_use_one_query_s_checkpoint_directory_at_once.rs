//! probe48 H2: `anduin run --checkpoint-dir STORE/NAME` on the checkpoint directory of a
//! query a coordinator was running was not refused: the two ran side by side, each deleting
//! the other's checkpoints, and every row reached a Kafka topic twice. The other way round, a
//! `submit` was accepted while an embedded run held the directory, and cleared its
//! checkpoints. Now the coordinator holds the directory's lock (as `anduin run` does) for as
//! long as it runs the query, and a submission takes it before it touches the directory.

use crate::common;

use common::cluster::LocalCluster;
use common::{anduin, wait_until, ChildGuard, SLOW_GENERATOR};

use std::process::{Command, Stdio};

const HELD: &str = "is in use by another anduin run";

/// A directory with `slow.flow` (a generator that runs until stopped), and a cluster of one
/// worker.
fn setup() -> (tempfile::TempDir, LocalCluster) {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("slow.flow"), SLOW_GENERATOR).expect("query");
    (work, LocalCluster::start(1, 4))
}

#[test]
fn an_embedded_run_on_the_directory_of_a_query_the_cluster_runs_is_refused() {
    let (work, cluster) = setup();
    let dir = work.path();
    let out = dir.join("cluster.csv").display().to_string();
    let _submitted = cluster.submit(
        dir,
        "slow.flow",
        &[
            "--name",
            "slow",
            "--var",
            &format!("OUTPUT={out}"),
            "--checkpoint-interval",
            "200ms",
        ],
    );
    wait_until("the cluster's first checkpoint", || {
        cluster.status("slow")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });
    let store = cluster.checkpoints("slow").display().to_string();
    let refused = anduin(
        dir,
        &[
            "run",
            "slow.flow",
            "--no-api",
            "--var",
            "OUTPUT=embedded.csv",
            "--checkpoint-dir",
            &store,
        ],
    );
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains(HELD), "{said}");
    assert_eq!(cluster.status("slow")["state"], "running");
}

#[test]
fn a_submission_of_a_query_whose_directory_an_embedded_run_holds_is_refused_and_clears_nothing() {
    let (work, cluster) = setup();
    let dir = work.path();
    let store = cluster.checkpoints("held");
    let mut embedded = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["run", "slow.flow", "--no-api", "-q"])
            .args([
                "--var",
                "OUTPUT=embedded.csv",
                "--checkpoint-interval",
                "200ms",
            ])
            .arg("--checkpoint-dir")
            .arg(&store)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("anduin run starts"),
    );
    let checkpoints = || {
        std::fs::read_dir(&store)
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().starts_with("chk-"))
                    .count()
            })
            .unwrap_or(0)
    };
    wait_until("the embedded run's first checkpoint", || checkpoints() > 0);
    let refused = anduin(
        dir,
        &[
            "submit",
            "slow.flow",
            "--name",
            "held",
            "--coordinator",
            &cluster.addr,
            "--var",
            "OUTPUT=cluster.csv",
        ],
    );
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains(HELD), "{said}");
    assert!(said.contains("held"), "names the query: {said}");
    assert_eq!(
        embedded.0.try_wait().expect("waits"),
        None,
        "the embedded run goes on"
    );
    assert!(checkpoints() > 0, "its checkpoints were left alone");
}
