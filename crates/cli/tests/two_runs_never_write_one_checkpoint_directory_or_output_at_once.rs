//! Issue 22, point 1: two runs on one checkpoint directory lost rows and both exited as if
//! nothing happened. A checkpoint directory and an output have one owner at a time: a second
//! run is refused, naming the PID of the first, and the lock dies with its holder; removing
//! the directory's `LOCK` file does not free it (issue 19: the directory is locked itself).

use crate::common;

use std::process::{Command, Stdio};

use common::{
    anduin, anduin_ok, output_rows, wait_until, ChildGuard, GENERATE_100K, SLOW_GENERATOR,
};

fn spawn(dir: &std::path::Path, args: &[&str]) -> ChildGuard {
    ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(args)
            .current_dir(dir)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("anduin starts"),
    )
}

#[test]
fn a_second_run_on_a_held_checkpoint_directory_or_output_is_refused_with_the_holders_pid() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("slow.flow"), SLOW_GENERATOR).expect("query");
    let first = spawn(
        dir.path(),
        &[
            "run",
            "slow.flow",
            "--var",
            "OUTPUT=o1",
            "--checkpoint-dir",
            "ck",
            "--checkpoint-interval",
            "1s",
        ],
    );
    let pid = first.pid().to_string();
    wait_until("the first run to lock its checkpoint directory", || {
        std::fs::read_to_string(dir.path().join("ck/LOCK")).is_ok_and(|t| t.trim() == pid)
    });

    let same_dir = anduin(
        dir.path(),
        &[
            "run",
            "slow.flow",
            "--var",
            "OUTPUT=o2",
            "--checkpoint-dir",
            "ck",
        ],
    );
    assert_eq!(same_dir.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&same_dir.stderr);
    assert!(
        stderr.contains("the checkpoint directory `ck` is in use by another anduin run")
            && stderr.contains(&format!("PID {pid}")),
        "{stderr}"
    );
    assert!(
        !dir.path().join("o2").exists(),
        "the refused run wrote nothing"
    );
    // Issue 19: with its `LOCK` file removed, the directory is still locked (by itself).
    std::fs::remove_file(dir.path().join("ck/LOCK")).expect("LOCK removed");
    // (Spawned, so that a run let in is killed rather than waited for.)
    let mut refused = spawn(
        dir.path(),
        &[
            "run",
            "slow.flow",
            "--var",
            "OUTPUT=o3",
            "--checkpoint-dir",
            "ck",
        ],
    );
    wait_until(
        "the run on the directory without its LOCK file to be refused",
        || refused.0.try_wait().expect("its state").is_some(),
    );
    let without_lock_file = refused.wait_output();
    assert_eq!(without_lock_file.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&without_lock_file.stderr);
    assert!(
        stderr.contains("the checkpoint directory `ck` is in use by another anduin run")
            && stderr.contains(&format!("PID {pid}")),
        "{stderr}"
    );
    assert!(
        !dir.path().join("o3").exists(),
        "the refused run wrote nothing"
    );

    let same_output = anduin(
        dir.path(),
        &[
            "run",
            "slow.flow",
            "--var",
            "OUTPUT=./o1",
            "--checkpoint-dir",
            "ck2",
        ],
    );
    assert_eq!(same_output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&same_output.stderr);
    assert!(
        stderr.contains("the output `./o1` is in use by another anduin run")
            && stderr.contains(&format!("PID {pid}")),
        "{stderr}"
    );
    assert!(
        !dir.path().join("ck2").join("chk-00000001").exists(),
        "the refused run took no checkpoint"
    );

    // kill -9 leaves no stale lock: the next run resumes at once.
    drop(first);
    let mut again = spawn(
        dir.path(),
        &[
            "run",
            "slow.flow",
            "--var",
            "OUTPUT=o1",
            "--checkpoint-dir",
            "ck",
        ],
    );
    let pid = again.pid().to_string();
    wait_until("the next run to take the lock", || {
        std::fs::read_to_string(dir.path().join("ck/LOCK")).is_ok_and(|t| t.trim() == pid)
    });
    assert!(
        again.0.try_wait().expect("status").is_none(),
        "still running"
    );
}

/// The reproduction, run for real: two runs of one windowed query on one checkpoint
/// directory, the second started after a seeded delay. Whatever the interleaving, the output
/// is the uninterrupted run's and no run that was refused wrote anything.
#[test]
fn two_runs_started_together_on_one_checkpoint_directory_leave_the_uninterrupted_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::write(root.join("gen.flow"), GENERATE_100K).expect("query");
    anduin_ok(
        root,
        &["run", "gen.flow", "--var", "OUTPUT=in.csv", "--quiet"],
    );
    let q2 = common::repo().join("examples/q2.sql");
    let q2 = q2.to_str().expect("utf-8 path");
    anduin_ok(
        root,
        &[
            "run",
            q2,
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=ref.csv",
            "--quiet",
        ],
    );
    let expected = output_rows(&root.join("ref.csv"));
    assert!(expected.len() > 1000, "a window per second and sensor");

    for seed in 0..6u64 {
        let out = format!("out{seed}");
        let ck = format!("ck{seed}");
        let args = [
            "run",
            q2,
            "--var",
            "INPUT=in.csv",
            "--var",
            &format!("OUTPUT={out}"),
            "--checkpoint-dir",
            &ck,
            "--checkpoint-interval",
            "50ms",
            "--quiet",
        ];
        let a = spawn(root, &args);
        // A seeded delay varies where the second run starts; nothing waits on it.
        std::thread::sleep(std::time::Duration::from_millis(seed * 30));
        let b = spawn(root, &args);
        let mut outcomes = Vec::new();
        for mut run in [a, b] {
            let status = run.0.wait().expect("ends");
            let mut stderr = String::new();
            if let Some(mut e) = run.0.stderr.take() {
                use std::io::Read;
                e.read_to_string(&mut stderr).expect("stderr");
            }
            outcomes.push((status.code(), stderr));
        }
        let refused = outcomes
            .iter()
            .filter(|(c, e)| *c == Some(1) && e.contains("is in use by another anduin run"))
            .count();
        let succeeded = outcomes.iter().filter(|(c, _)| *c == Some(0)).count();
        assert_eq!(
            refused + succeeded,
            2,
            "seed {seed}: each run either finished or was refused: {outcomes:?}"
        );
        assert!(succeeded >= 1, "seed {seed}: {outcomes:?}");
        assert_eq!(
            output_rows(&root.join(&out)),
            expected,
            "seed {seed}: the output is the uninterrupted run's ({outcomes:?})"
        );
    }
}
