//! Issue 22, point 10, found again by a probe: a `--state-backend lsm` run killed just after
//! its last checkpoint (the one that says the query finished) left its state directory, and
//! every later run of the query only said "already finished" and left it there too. Such a
//! run now removes the directories of dead runs, as a run that starts does.

use crate::common;

use std::path::Path;

use common::{anduin, anduin_ok, GENERATE_100K};

fn run_dirs(root: &Path) -> Vec<String> {
    std::fs::read_dir(root)
        .map(|d| {
            d.map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
                .filter(|n| n.starts_with("run-"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn an_already_finished_run_removes_what_a_killed_run_left_and_refuses_zero_checkpoint_options() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::write(root.join("gen.flow"), GENERATE_100K).expect("query");
    anduin_ok(
        root,
        &["run", "gen.flow", "--var", "OUTPUT=in.csv", "--quiet"],
    );
    let q2 = common::repo().join("examples/q2.sql");
    let q2 = q2.to_str().expect("utf-8 path");
    let args = [
        "run",
        q2,
        "--var",
        "INPUT=in.csv",
        "--var",
        "OUTPUT=out",
        "--state-backend",
        "lsm",
        "--state-dir",
        "states",
        "--checkpoint-dir",
        "ck",
        "--quiet",
    ];
    anduin_ok(root, &args);
    assert!(run_dirs(&root.join("states")).is_empty());
    // What a run killed after its last checkpoint leaves: its directory, whose lock nobody
    // holds.
    let dead = root.join("states/run-999999-dead");
    std::fs::create_dir_all(dead.join("insert1_window-0")).expect("a dead run's directory");
    std::fs::write(dead.join("LOCK"), "").expect("its lock file");

    let again = anduin_ok(root, &args);
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already finished"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(run_dirs(&root.join("states")), Vec::<String>::new());

    // Zero is not a checkpoint interval, row count or full-snapshot period.
    for (flag, value) in [
        ("--checkpoint-interval", "0s"),
        ("--checkpoint-every", "0"),
        ("--checkpoint-full-every", "0"),
        ("--checkpoint-warn-after", "0ms"),
    ] {
        let out = anduin(
            root,
            &[
                "run",
                q2,
                "--var",
                "INPUT=in.csv",
                "--var",
                "OUTPUT=o0",
                "--checkpoint-dir",
                "ck0",
                flag,
                value,
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert!(stderr.contains("at least 1"), "{flag} {value}: {stderr}");
    }
}
