//! `anduin cluster --workers 2` starts a coordinator whose `process` scheduler starts the two
//! workers; the query's output equals an embedded run's, both workers registered, and
//! once the command has returned no process it started is left. A second `anduin cluster` on
//! the same directory meanwhile is refused at once, naming the first; an `anduin cluster`
//! stopped by SIGTERM to its own PID mid-run leaves no process behind either (its coordinator
//! ends with it, and stops its workers). Run again on that directory, with the same file, it
//! takes the query it left over and waits for it: the output is the embedded run's, no row
//! lost or written twice; with another text under the query's name it is refused, saying so.
//! The run stopped mid-run is throttled so that it cannot end before its signal (500 rows a
//! second: two minutes); the run that takes it over is sped up through `anduin ctl set`.

use crate::common;

use std::process::{Command, Stdio};

use common::cluster::{running, signal, tumbling_generator, windowed_generator};
use common::{anduin, anduin_ok, ctl, output_rows, wait_until, ChildGuard};

/// The processes whose command line names `dir`: what `anduin cluster` started there.
fn started_in(dir: &std::path::Path) -> Vec<u32> {
    let needle = dir.display().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&needle) && running(pid) {
            out.push(pid);
        }
    }
    out
}

/// Kills, by PID, whatever the command left behind (the test fails then anyway).
struct Leftovers(std::path::PathBuf);

impl Drop for Leftovers {
    fn drop(&mut self) {
        for pid in started_in(&self.0) {
            signal(pid, libc::SIGKILL);
        }
    }
}

#[test]
fn anduin_cluster_runs_a_query_on_workers_its_coordinator_starts_and_leaves_no_process_behind() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), tumbling_generator(31, 60_000)).expect("query");
    anduin_ok(
        work.path(),
        &["run", "q.flow", "--var", "OUTPUT=reference.csv"],
    );
    let dir = work.path().join("cluster");
    let _leftovers = Leftovers(dir.clone());
    let dir_arg = dir.display().to_string();
    let first = cluster(work.path(), &dir_arg, "OUTPUT=out");
    wait_until("the first cluster's workers", || {
        registered(&dir, "local-1")
    });
    let second = anduin(
        work.path(),
        &[
            "cluster",
            "q.flow",
            "--dir",
            &dir_arg,
            "--var",
            "OUTPUT=out2",
        ],
    );
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{err}");
    assert!(err.contains("another `anduin cluster` uses it"), "{err}");
    assert!(err.contains(&format!("PID {}", first.pid())), "{err}");
    let out = first.wait_output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        output_rows(&work.path().join("out")),
        output_rows(&work.path().join("reference.csv"))
    );
    for w in ["local-0", "local-1"] {
        let log = std::fs::read_to_string(dir.join("coordinator/workers").join(format!("{w}.log")))
            .unwrap_or_default();
        assert!(
            log.contains("registered with the coordinator"),
            "{w}: {log}"
        );
    }
    let left = started_in(&dir);
    assert!(left.is_empty(), "processes left behind: {left:?}");

    // Stopped by SIGTERM to its own PID (not its process group) mid-run: the same rows
    // (event times do not depend on the rate), too slowly to end before the signal.
    let slow = windowed_generator(
        31,
        60_000,
        500,
        r#"param kind = "tumbling" param size = "100ms""#,
    );
    std::fs::write(work.path().join("q.flow"), slow).expect("query");
    let dir = work.path().join("stopped");
    let _leftovers = Leftovers(dir.clone());
    let dir_arg = dir.display().to_string();
    let every = ["--checkpoint-every", "500"];
    let stopped = cluster_with(work.path(), &dir_arg, "OUTPUT=out3", &every);
    wait_until("the stopped cluster's second checkpoint", || {
        // Checkpoints only: the directory holds a lock file before the query is submitted.
        std::fs::read_dir(dir.join("checkpoints/q")).is_ok_and(|d| {
            d.flatten().any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with("chk-") && name != "chk-00000001"
            })
        })
    });
    signal(stopped.pid(), libc::SIGTERM);
    let out = stopped.wait_output();
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_until("every process of the stopped cluster gone", || {
        started_in(&dir).is_empty()
    });

    // Again, with another text under the query's name: refused.
    let text = std::fs::read_to_string(work.path().join("q.flow")).expect("query");
    std::fs::write(work.path().join("q.flow"), format!("{text}\n# changed\n")).expect("query");
    let other = cluster_with(work.path(), &dir_arg, "OUTPUT=out3", &every).wait_output();
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(!other.status.success(), "{err}");
    assert!(err.contains("whose text is not"), "{err}");
    wait_until("every process of the refused cluster gone", || {
        started_in(&dir).is_empty()
    });
    // Again, with the same file: the query left running goes on, sped up once it runs.
    std::fs::write(work.path().join("q.flow"), text).expect("query");
    let url_file = dir.join("coordinator/api.url");
    std::fs::remove_file(&url_file).expect("the earlier coordinators' API address");
    let again = cluster_with(work.path(), &dir_arg, "OUTPUT=out3", &every);
    wait_until("the taken-over query to accept a new rate", || {
        std::fs::read_to_string(&url_file).is_ok_and(|api| {
            ctl(work.path(), &api, &["set", "q", "gen", "rate", "1000000"])
                .status
                .success()
        })
    });
    let again = again.wait_output();
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{err}");
    assert!(err.contains("taken over, it goes on"), "{err}");
    assert_eq!(
        output_rows(&work.path().join("out3")),
        output_rows(&work.path().join("reference.csv")),
        "{err}"
    );
    wait_until("every process of the cluster run again gone", || {
        started_in(&dir).is_empty()
    });
}

/// `anduin cluster q.flow --workers 2 --dir DIR --parallelism 2 --var OUTPUT`, started.
fn cluster(cwd: &std::path::Path, dir: &str, output: &str) -> ChildGuard {
    cluster_with(cwd, dir, output, &[])
}

/// [`cluster`] with `more` run flags.
fn cluster_with(cwd: &std::path::Path, dir: &str, output: &str, more: &[&str]) -> ChildGuard {
    ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["cluster", "q.flow", "--workers", "2", "--dir", dir])
            .args(["--parallelism", "2", "--var", output])
            .args(more)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("anduin cluster starts"),
    )
}

/// Whether worker `name` of the cluster in `dir` has registered (its log says so).
fn registered(dir: &std::path::Path, name: &str) -> bool {
    std::fs::read_to_string(dir.join("coordinator/workers").join(format!("{name}.log")))
        .is_ok_and(|l| l.contains("registered with the coordinator"))
}
