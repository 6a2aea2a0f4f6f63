//! Issue 22, point 10: every `kill -9` of a `--state-backend lsm` run left a temporary
//! directory as large as its state behind. Now a run's LSM files live in a directory of its
//! own, locked while it runs and removed when it ends; the next run removes what a killed one
//! left, and a clean run leaves nothing.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{anduin_ok, kill_after, output_rows, GENERATE_100K};

fn run_dirs(root: &Path) -> Vec<String> {
    std::fs::read_dir(root)
        .map(|d| {
            d.map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
                .filter(|n| n.starts_with("run-") || n.starts_with(".new-"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_next_run_removes_what_a_killed_lsm_run_left_and_a_clean_run_leaves_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let tmp = root.join("tmp");
    std::fs::create_dir(&tmp).expect("tmp");
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
        "--checkpoint-dir",
        "ck",
        "--checkpoint-every",
        "5000",
        "--batch-size",
        "1000",
    ];
    let states = tmp.join("anduin-state");
    let child = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(args)
        .current_dir(root)
        // The default state directory is under the system's temporary directory.
        .env("TMPDIR", &tmp)
        .args(["--events", "-"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    assert!(kill_after(child, 1, 0), "the run was killed mid-way");
    let left = run_dirs(&states);
    assert_eq!(left.len(), 1, "a killed run cannot clean up: {left:?}");

    let out = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(args)
        .current_dir(root)
        .env("TMPDIR", &tmp)
        .env_remove("RUST_LOG")
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(run_dirs(&states), Vec::<String>::new(), "nothing is left");
    let leaked: Vec<_> = std::fs::read_dir(&tmp)
        .expect("tmp")
        .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("anduin-state-"))
        .collect();
    assert!(
        leaked.is_empty(),
        "no temporary state directory: {leaked:?}"
    );

    // The resumed run's output is the uninterrupted one's.
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
    assert_eq!(
        output_rows(&root.join("out")),
        output_rows(&root.join("ref.csv"))
    );
}
