//! A chain split while the query runs (`anduin ctl set q w pipeline split`), a checkpoint
//! taken after the split (which waits for the new task's share), then SIGKILL: the run
//! resumed from that checkpoint plans the split from the start (the change is in the history
//! the checkpoint keeps) and writes exactly the rows of a run never split nor killed.

use crate::a_chain_split_while_it_runs_writes_what_an_unsplit_run_writes::{tasks, CHAIN};
use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{anduin_ok, ctl, output_rows, start_with_api, stdout_ok};

/// Starts the slowed-down `q.flow` with checkpoints and the API; its stderr carries the
/// events.
fn start_checkpointed(
    d: &Path,
) -> (
    common::ChildGuard,
    String,
    std::io::BufReader<std::process::ChildStderr>,
) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_anduin"));
    command
        .args(["run", "q.flow", "-q", "--var", "OUTPUT=out"])
        .args(["--batch-size", "200", "--linger", "20ms"])
        .args(["--checkpoint-dir", "ck", "--checkpoint-every", "1500"])
        .args(["--events", "-"])
        .current_dir(d)
        .env("XDG_RUNTIME_DIR", d.join("rt"))
        .env_remove("RUST_LOG")
        .stdout(Stdio::null());
    start_with_api(command)
}

/// Reads `stderr` until `n` more checkpoints have completed.
fn checkpoints(stderr: &mut impl std::io::BufRead, n: usize) {
    let mut seen = 0;
    let mut line = String::new();
    while seen < n {
        line.clear();
        assert!(
            stderr.read_line(&mut line).expect("reads") > 0,
            "the run ended"
        );
        seen += usize::from(line.contains(common::CHECKPOINT_COMPLETED));
    }
}

#[test]
fn a_run_killed_after_a_live_split_resumes_to_the_unsplit_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    std::fs::write(d.join("ref.flow"), CHAIN).expect("query");
    anduin_ok(d, &["run", "ref.flow", "--var", "OUTPUT=reference.csv"]);
    let expected = output_rows(&d.join("reference.csv"));
    let slow = CHAIN.replace("param rate = 40000", "param rate = 2000");
    std::fs::write(d.join("q.flow"), slow).expect("query");

    // Split after a checkpoint; two more complete (the new task acknowledges the second);
    // killed at once.
    let (run, api, mut stderr) = start_checkpointed(d);
    checkpoints(&mut stderr, 1);
    let applied = stdout_ok(&ctl(d, &api, &["set", "q", "w", "pipeline", "split"]));
    assert!(applied.contains("applied at epoch"), "{applied}");
    let client = anduin_api::Client::new(&api, None).expect("an address");
    let split = tasks(&client);
    assert!(
        split.contains(&vec!["w".to_string(), "out".to_string()]),
        "split while running: {split:?}"
    );
    checkpoints(&mut stderr, 2);
    drop(run);

    // Resumed: split from the start; the rest at full speed.
    let (run, api, stderr) = start_checkpointed(d);
    // Its events are read to the end, so that it never waits on a full pipe.
    let drain = std::thread::spawn(move || {
        use std::io::BufRead;
        stderr
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    let client = anduin_api::Client::new(&api, None).expect("an address");
    let split = tasks(&client);
    assert!(
        split.contains(&vec!["w".to_string(), "out".to_string()]),
        "the resumed run plans the split: {split:?}"
    );
    stdout_ok(&ctl(d, &api, &["set", "q", "gen", "rate", "1000000"]));
    let out = run.wait_output();
    let events = drain.join().expect("the drain ends with the run");
    assert_eq!(out.status.code(), Some(0), "{}", events.join("\n"));
    let got = output_rows(&d.join("out"));
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated");
    assert!(got == expected, "the output differs from the unsplit run");
}
