//! Authentication: a coordinator started with a cluster secret refuses a worker, a client and
//! a submission that do not prove they know it (no secret, or another one), saying why, and
//! works for those that do — through to a query whose executors also prove it to each
//! other's channel listeners. Without a secret nothing listens beyond loopback.

use crate::common;

use std::process::{Command, Stdio};

use common::{anduin, repo, wait_until, ChildGuard};

fn anduin_with(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(args)
        .current_dir(dir)
        .env_remove("ANDUIN_CLUSTER_SECRET")
        .output()
        .expect("runs")
}

#[test]
fn a_cluster_with_a_secret_refuses_every_process_that_does_not_know_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("secret"), "correct horse battery staple\n").expect("secret");
    std::fs::write(d.join("other"), "something else\n").expect("secret");
    let addr_file = d.join("addr");
    let _coordinator = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args([
                "coordinator",
                "--listen",
                "127.0.0.1:0",
                "--state-dir",
                "state",
            ])
            .args(["--checkpoint-store", "ck", "--address-file", "addr"])
            .args(["--cluster-secret-file", "secret"])
            .current_dir(d)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starts"),
    );
    wait_until("the coordinator listens", || addr_file.exists());
    let addr = std::fs::read_to_string(&addr_file).expect("addr");
    let addr = addr.trim();

    for secret in [None, Some("other")] {
        let mut args = vec!["status", "--coordinator", addr];
        let mut worker = vec!["worker", "--coordinator", addr, "--name", "intruder"];
        if let Some(s) = secret {
            args.extend(["--cluster-secret-file", s]);
            worker.extend(["--cluster-secret-file", s]);
        }
        let out = anduin_with(d, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("cluster's secret"), "{stderr}");
        let out = anduin_with(d, &worker);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("refused"), "{stderr}");
    }
    let out = anduin_with(
        d,
        &[
            "status",
            "--coordinator",
            addr,
            "--cluster-secret-file",
            "secret",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("intruder"),
        "no refused worker was registered"
    );

    // With the secret, a query runs across two workers (its channels authenticated too).
    let workers: Vec<ChildGuard> = (0..2)
        .map(|i| {
            ChildGuard(
                Command::new(env!("CARGO_BIN_EXE_anduin"))
                    .args(["worker", "--coordinator", addr, "--name", &format!("w{i}")])
                    .args(["--cluster-secret-file", "secret"])
                    .arg("--work-dir")
                    .arg(d.join(format!("w{i}")))
                    .current_dir(d)
                    .env_remove("ANDUIN_CLUSTER_SECRET")
                    .stdin(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("a worker starts"),
            )
        })
        .collect();
    let q2 = repo().join("examples/q2.flow");
    let readings = repo().join("data/readings.csv");
    let out = anduin_with(
        d,
        &[
            "submit",
            q2.to_str().expect("path"),
            "--coordinator",
            addr,
            "--cluster-secret-file",
            "secret",
            "--wait",
            "--var",
            &format!("INPUT={}", readings.display()),
            "--var",
            "OUTPUT=out",
            "--parallelism",
            "3",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = common::output_rows(&d.join("out"));
    assert!(rows.len() > 1000, "the query wrote its rows");
    drop(workers);

    // Without a secret, nothing listens beyond loopback.
    let out = anduin(
        d,
        &[
            "coordinator",
            "--listen",
            "0.0.0.0:0",
            "--state-dir",
            "s2",
            "--checkpoint-store",
            "c2",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("needs a cluster secret"), "{stderr}");
}
