//! A probe found `--events o4.csv`, where o4.csv was the query's output, mixed JSON lines
//! into the CSV and exited 0; an events file inside a directory of parts was overwritten when
//! a part was committed. The events file must be none of the run's outputs, the dead-letter
//! file, nor inside the checkpoint directory or the state directory; the run is refused,
//! naming both, before anything is written. `-` (stderr) stays apart from an output on stdout.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{anduin, anduin_ok, repo};

fn refused(dir: &Path, args: &[&str], events: &str, names: &str) {
    let mut all = vec!["run", "q2.sql", "--var", "INPUT=in.csv", "--events", events];
    all.extend_from_slice(args);
    let out = anduin(dir, &all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{all:?}: {stderr}");
    assert!(
        stderr.contains(&format!("the events file `{events}`")) && stderr.contains(names),
        "{all:?}: {stderr}"
    );
}

#[test]
fn an_events_file_that_is_an_output_or_inside_one_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::write(
        root.join("in.csv"),
        "ts,sensor,value\n1000,1,1\n2500,1,2\n3000,2,4\n",
    )
    .expect("input");
    std::fs::copy(repo().join("examples/q2.sql"), root.join("q2.sql")).expect("query");

    // The output, as it is from an earlier run: refused, and left as it was.
    std::fs::write(root.join("o4.csv"), "an earlier output\n").expect("output");
    let output_of = "is the output of operator \"out\" (`o4.csv`)";
    refused(root, &["--var", "OUTPUT=o4.csv"], "o4.csv", output_of);
    assert_eq!(
        std::fs::read_to_string(root.join("o4.csv")).expect("output"),
        "an earlier output\n"
    );
    // The dead-letter file, derived or named.
    refused(
        root,
        &["--var", "OUTPUT=o5.csv"],
        "o5.csv.rejected",
        "is the dead-letter file (`o5.csv.rejected`)",
    );
    refused(
        root,
        &["--var", "OUTPUT=o5.csv", "--dead-letter", "bad.jsonl"],
        "bad.jsonl",
        "is the dead-letter file (`bad.jsonl`)",
    );
    // Inside a directory of parts (with checkpoints), and inside the checkpoint directory.
    refused(
        root,
        &["--var", "OUTPUT=parts", "--checkpoint-dir", "ck"],
        "parts/events.jsonl",
        "is inside the output of operator \"out\" (`parts`)",
    );
    refused(
        root,
        &["--var", "OUTPUT=o6.csv", "--checkpoint-dir", "ck"],
        "ck/events.jsonl",
        "is inside the checkpoint directory (`ck`)",
    );
    // Inside the state directory of LSM backends.
    refused(
        root,
        &[
            "--var",
            "OUTPUT=o7.csv",
            "--state-backend",
            "lsm",
            "--state-dir",
            "state",
        ],
        "state/events.jsonl",
        "is inside the state directory (`state`)",
    );
    // Nor is an events file that cannot be made left to fail after the outputs are made.
    refused(
        root,
        &["--var", "OUTPUT=o8.csv"],
        "missing/events.jsonl",
        "does not exist",
    );
    for never in [
        "o5.csv", "parts", "ck", "o6.csv", "o7.csv", "state", "o8.csv",
    ] {
        assert!(
            !root.join(never).exists(),
            "a refused run made `{never}` before it was refused"
        );
    }

    // The output on stdout, redirected to a file, and the events sent there by name.
    let stdout = std::fs::File::create(root.join("stdout.csv")).expect("stdout file");
    let out = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args([
            "run",
            "q2.sql",
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=-",
            "--events",
            "stdout.csv",
        ])
        .current_dir(root)
        .env_remove("RUST_LOG")
        .stdout(Stdio::from(stdout))
        .output()
        .expect("anduin runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the events file `stdout.csv` is this run's standard output"),
        "{stderr}"
    );

    // `--events -` is stderr: the output on stdout is the query's alone.
    let out = anduin_ok(
        root,
        &[
            "run",
            "q2.sql",
            "--var",
            "INPUT=in.csv",
            "--var",
            "OUTPUT=-",
            "--events",
            "-",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("window_start,") && !stdout.contains("\"event\""),
        "{stdout}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(r#"{"event":"task_finished""#),
        "the events went to stderr"
    );
}
