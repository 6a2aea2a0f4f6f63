//! `anduin coordinator --scheduler kubernetes --workers 2` against a fake Kubernetes API
//! server (the scheduler's unit tests' fake, on loopback): it creates its two worker pods,
//! each running `anduin worker` against the coordinator's address; a pod that fails is
//! deleted and created again; stopped with SIGTERM, the coordinator deletes its pods. A
//! coordinator whose service account RBAC forbids listing pods stops at its start, saying
//! which verbs on pods in which namespace it needs.

use std::process::{Command, Stdio};

use crate::common;

use common::cluster::signal;
use common::{anduin, wait_until, ChildGuard};

#[path = "../src/cluster/kubernetes/fake.rs"]
#[allow(dead_code)]
mod fake;

use fake::FakeApi;

/// `anduin coordinator --scheduler kubernetes` against `fake`, in `dir`.
fn coordinator_args(dir: &std::path::Path, fake: &FakeApi) -> Vec<String> {
    let secret = dir.join("secret");
    std::fs::write(&secret, "kubernetes-scenario\n").expect("the secret written");
    [
        "coordinator",
        "--listen",
        "127.0.0.1:0",
        "--state-dir",
        &dir.join("state").display().to_string(),
        "--checkpoint-store",
        &dir.join("checkpoints").display().to_string(),
        "--address-file",
        &dir.join("address").display().to_string(),
        "--cluster-secret-file",
        &secret.display().to_string(),
        "--scheduler",
        "kubernetes",
        "--workers",
        "2",
        "--slots",
        "3",
        "--kube-api",
        &fake.url(),
        "--kube-namespace",
        &fake.namespace,
        "--kube-worker-image",
        "example.org/anduin:scenario",
        "--kube-worker-secret",
        "anduin",
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn a_coordinator_with_the_kubernetes_scheduler_keeps_its_worker_pods_and_deletes_them_when_stopped()
{
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = FakeApi::start("streams");
    let coordinator = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(coordinator_args(dir.path(), &fake))
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the coordinator starts"),
    );
    wait_until("the coordinator's two worker pods", || {
        fake.state().pods.len() == 2
    });
    wait_until("the coordinator's address", || {
        dir.path().join("address").exists()
    });
    let address = std::fs::read_to_string(dir.path().join("address")).expect("the address");
    {
        let state = fake.state();
        for i in 0..2 {
            let pod = &state.pods[&format!("anduin-worker-{i}")];
            assert_eq!(pod["metadata"]["labels"]["anduin.io/coordinator"], "anduin");
            let command: Vec<&str> = pod["spec"]["containers"][0]["command"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str())
                .collect();
            assert_eq!(
                command[..8],
                [
                    "anduin",
                    "worker",
                    "--coordinator",
                    address.trim(),
                    "--name",
                    &format!("anduin-worker-{i}"),
                    "--slots",
                    "3"
                ]
            );
        }
        assert!(state
            .requests
            .iter()
            .all(|r| r.path.starts_with("/api/v1/namespaces/streams/pods")));
    }
    // Worker 1's pod fails: the coordinator deletes it and creates it again.
    fake.state().set_phase("anduin-worker-1", "Failed");
    wait_until("worker 1's pod created again", || {
        fake.state()
            .pods
            .get("anduin-worker-1")
            .is_some_and(|p| p["status"]["phase"] == "Pending")
    });
    assert!(fake
        .state()
        .requests
        .iter()
        .any(|r| r.method == "DELETE" && r.path.ends_with("/pods/anduin-worker-1")));
    // Stopped as Kubernetes stops a pod: its worker pods go with it.
    signal(coordinator.pid(), libc::SIGTERM);
    let out = coordinator.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + libc::SIGTERM), "{stderr}");
    assert!(fake.state().pods.is_empty(), "{stderr}");
    assert!(
        stderr.contains("deleted worker pod anduin-worker-0: the coordinator stops"),
        "{stderr}"
    );
}

#[test]
fn a_coordinator_whose_rbac_forbids_listing_pods_stops_at_its_start_saying_what_it_needs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = FakeApi::start("streams");
    fake.state().forbid = Some(
        "pods is forbidden: User \"system:serviceaccount:streams:default\" cannot list resource \"pods\""
            .into(),
    );
    let args = coordinator_args(dir.path(), &fake);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = anduin(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("RBAC")
            && stderr.contains("create, delete, get, list and watch on pods in namespace streams")
            && stderr.contains(&fake.url()),
        "{stderr}"
    );
    assert!(fake.state().pods.is_empty());
}
