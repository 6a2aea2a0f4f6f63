//! Worker names tell workers apart, and a worker's work directory holds its parts' files: a
//! worker that registers under the name of a live worker is refused by the coordinator and
//! exits saying so, and a worker given the work directory of a running one is refused before
//! it registers, naming the PID that holds it. The first worker is not affected.

use crate::common;

use std::process::{Command, Stdio};

use common::cluster::LocalCluster;
use common::ChildGuard;

fn worker(cluster: &LocalCluster, name: &str, work_dir: &std::path::Path) -> std::process::Output {
    ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["worker", "--coordinator", &cluster.addr, "--name", name])
            .arg("--work-dir")
            .arg(work_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("a worker starts"),
    )
    .wait_output()
}

#[test]
fn a_second_worker_under_a_live_workers_name_or_work_directory_is_refused() {
    let cluster = LocalCluster::start(1, 4);
    let other = tempfile::tempdir().expect("tempdir");

    let same_name = worker(&cluster, "w0", other.path());
    let err = String::from_utf8_lossy(&same_name.stderr);
    assert!(!same_name.status.success(), "{err}");
    assert!(err.contains("a live worker named w0"), "{err}");
    assert!(err.contains("another --name"), "{err}");

    let same_dir = worker(&cluster, "w9", &cluster.dir.path().join("w0"));
    let err = String::from_utf8_lossy(&same_dir.stderr);
    assert!(!same_dir.status.success(), "{err}");
    assert!(err.contains("another worker uses it"), "{err}");
    assert!(
        err.contains(&format!("PID {}", cluster.workers[0].pid())),
        "{err}"
    );

    assert_eq!(cluster.workers_joined(), 1);
    let all = cluster.all();
    let names: Vec<&str> = all["workers"]
        .as_array()
        .map(|ws| ws.iter().filter_map(|w| w["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["w0"], "{all}");
}
