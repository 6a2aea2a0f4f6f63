//! Issue 22, point 1, found again by a probe: outputs were locked only by their path, in a
//! directory of locks under `$TMPDIR`. Two runs writing one file under two names (a hard
//! link), or under two `$TMPDIR`s, both ran and both exited 0, leaving a file mixed from two
//! runs (with checkpoints: a directory of parts missing rows). An existing output is now
//! locked itself, so the second run is refused, naming the first run's PID.

use crate::common;

use std::path::Path;
use std::process::{Output, Stdio};

use common::{anduin_in_tmpdir, wait_until, ChildGuard, SLOW_GENERATOR};

/// Ten rows, then the end: a second run that is not refused ends at once (and the test fails
/// rather than waits).
fn quick() -> String {
    SLOW_GENERATOR.replace("param rate = 50", "param count = 10")
}

fn spawn(dir: &Path, tmp: &str, args: &[&str]) -> ChildGuard {
    ChildGuard(
        anduin_in_tmpdir(dir, tmp, args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("anduin starts"),
    )
}

fn run(dir: &Path, tmp: &str, args: &[&str]) -> Output {
    anduin_in_tmpdir(dir, tmp, args)
        .output()
        .expect("anduin runs")
}

fn assert_refused(out: &Output, what: &str, pid: u32) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the output `{what}` is in use by another anduin run"
        )) && stderr.contains(&format!("PID {pid}")),
        "{stderr}"
    );
}

#[test]
fn a_second_run_on_an_output_under_another_name_or_tmpdir_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::write(root.join("slow.flow"), SLOW_GENERATOR).expect("query");
    std::fs::write(root.join("quick.flow"), quick()).expect("query");

    // Without checkpoints: the first run writes out.csv, which exists already (a rerun).
    std::fs::write(root.join("out.csv"), "old\n").expect("an earlier output");
    std::fs::hard_link(root.join("out.csv"), root.join("alias.csv")).expect("hard link");
    let first = spawn(root, "t1", &["run", "slow.flow", "--var", "OUTPUT=out.csv"]);
    let pid = first.pid();
    let locks = root.join("t1/anduin-locks");
    wait_until("the first run to lock its output", || {
        std::fs::read_dir(&locks).is_ok_and(|d| {
            d.flatten().any(|e| {
                e.file_name().to_string_lossy().contains("out.csv")
                    && std::fs::read_to_string(e.path()).is_ok_and(|t| t.trim() == pid.to_string())
            })
        })
    });
    let by_link = run(
        root,
        "t1",
        &["run", "quick.flow", "--var", "OUTPUT=alias.csv"],
    );
    assert_refused(&by_link, "alias.csv", pid);
    let other_tmp = run(
        root,
        "t2",
        &["run", "quick.flow", "--var", "OUTPUT=out.csv"],
    );
    assert_refused(&other_tmp, "out.csv", pid);
    drop(first);

    // Without checkpoints, an output that does not exist yet: made and locked as the first
    // run starts, before its first write, so a run under another $TMPDIR is refused too.
    let first = spawn(root, "t1", &["run", "slow.flow", "--var", "OUTPUT=new.csv"]);
    let pid = first.pid();
    wait_until("the first run to make and lock its output", || {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::metadata(root.join("new.csv")) else {
            return false;
        };
        // `/proc/locks`: `1: FLOCK  ADVISORY  WRITE <pid> <major>:<minor>:<inode> 0 EOF`.
        std::fs::read_to_string("/proc/locks").is_ok_and(|locks| {
            locks.lines().any(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.get(1) == Some(&"FLOCK")
                    && f.get(4) == Some(&pid.to_string().as_str())
                    && f.get(5)
                        .is_some_and(|id| id.ends_with(&format!(":{}", meta.ino())))
            })
        })
    });
    let other_tmp = run(
        root,
        "t2",
        &["run", "quick.flow", "--var", "OUTPUT=new.csv"],
    );
    assert_refused(&other_tmp, "new.csv", pid);
    drop(first);

    // With checkpoints: the output is a directory of parts, made (and locked) as the run
    // starts, so that a run under another $TMPDIR and another checkpoint directory that
    // comes a moment later is refused too.
    let first = spawn(
        root,
        "t1",
        &[
            "run",
            "slow.flow",
            "--var",
            "OUTPUT=parts",
            "--checkpoint-dir",
            "ck1",
        ],
    );
    let pid = first.pid();
    wait_until("the first run to lock its checkpoint directory", || {
        std::fs::read_to_string(root.join("ck1/LOCK")).is_ok_and(|t| t.trim() == pid.to_string())
    });
    wait_until("the first run to make its output directory", || {
        root.join("parts").is_dir()
    });
    let other = run(
        root,
        "t2",
        &[
            "run",
            "quick.flow",
            "--var",
            "OUTPUT=parts",
            "--checkpoint-dir",
            "ck2",
        ],
    );
    assert_refused(&other, "parts", pid);
    assert!(
        !root.join("ck2/chk-00000001").exists(),
        "the refused run took no checkpoint"
    );
}

/// Locking every output made two runs that discard their output into `/dev/null` (as
/// benchmarks do) refuse each other: a device is not an output to own.
#[test]
fn two_runs_may_write_to_dev_null_side_by_side() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::write(root.join("slow.flow"), SLOW_GENERATOR).expect("query");
    std::fs::write(root.join("quick.flow"), quick()).expect("query");
    let first = spawn(
        root,
        "t1",
        &[
            "run",
            "slow.flow",
            "--var",
            "OUTPUT=/dev/null",
            "--dead-letter",
            "rejected.jsonl",
        ],
    );
    let pid = first.pid().to_string();
    let locks = root.join("t1/anduin-locks");
    wait_until("the first run to lock its dead-letter file", || {
        std::fs::read_dir(&locks).is_ok_and(|d| {
            d.flatten().any(|e| {
                e.file_name().to_string_lossy().contains("rejected.jsonl")
                    && std::fs::read_to_string(e.path()).is_ok_and(|t| t.trim() == pid)
            })
        })
    });
    let second = run(
        root,
        "t1",
        &[
            "run",
            "quick.flow",
            "--var",
            "OUTPUT=/dev/null",
            "--dead-letter",
            "rejected2.jsonl",
        ],
    );
    assert_eq!(
        second.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
}
