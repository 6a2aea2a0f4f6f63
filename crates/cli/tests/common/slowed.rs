//! A query run slowed down beside the run it must match: the rescale, autoscale and rules
//! scenarios run a query whose generators emit 2 000 rows a second (instead of the 40 000 the
//! query says), change it while it runs, then let the generators run at full speed to the end
//! and compare the output with a run that was never changed.

use std::path::Path;
use std::process::{Command, Stdio};

use super::{anduin_ok, ctl, output_rows, start_with_api, stdout_ok, ChildGuard};

/// Writes `query` as `ref.flow` and `q.flow` (slowed down) in `d`, and runs `ref.flow`
/// unchanged: its sorted output rows.
pub fn prepare(d: &Path, query: &str) -> Vec<String> {
    std::fs::create_dir_all(d.join("rt")).expect("a runtime dir");
    std::fs::write(d.join("ref.flow"), query).expect("query");
    anduin_ok(d, &["run", "ref.flow", "--var", "OUTPUT=reference.csv"]);
    let slow = query.replace("param rate = 40000", "param rate = 2000");
    std::fs::write(d.join("q.flow"), slow).expect("query");
    output_rows(&d.join("reference.csv"))
}

/// `anduin run q.flow` in `d` (query `q`, output `out.csv`, batches of 200 rows sent at
/// least every 20 ms) with `flags`.
fn run_command(d: &Path, flags: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_anduin"));
    command
        .args(["run", "q.flow", "-q", "--var", "OUTPUT=out.csv"])
        .args(["--batch-size", "200", "--linger", "20ms"])
        .args(flags)
        .current_dir(d)
        .env("XDG_RUNTIME_DIR", d.join("rt"))
        .env_remove("RUST_LOG")
        .stdout(Stdio::null());
    command
}

/// Starts `anduin run q.flow` in `d` (query `q`, output `out.csv`, batches of 200 rows sent
/// at least every 20 ms) with `flags`; the run and its API's address.
pub fn start(d: &Path, flags: &[&str]) -> (ChildGuard, String) {
    let (run, api, _stderr) = start_with_api(run_command(d, flags));
    (run, api)
}

/// [`start`] logging as `RUST_LOG=log` says; also its stderr's lines, once it has ended.
pub fn start_logging(
    d: &Path,
    flags: &[&str],
    log: &str,
) -> (ChildGuard, String, std::thread::JoinHandle<Vec<String>>) {
    let mut command = run_command(d, flags);
    command.env("RUST_LOG", log);
    let (run, api, stderr) = start_with_api(command);
    (run, api, drain(stderr))
}

/// The lines of `stderr`, read to the end on a thread (so that the run never waits on a
/// full pipe), for when the run has ended.
pub fn drain(
    stderr: std::io::BufReader<std::process::ChildStderr>,
) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        use std::io::BufRead;
        stderr
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    })
}

/// How many instances own `operator`'s key groups now (its `parallelism` param).
pub fn owners(client: &anduin_api::Client, operator: &str) -> Option<String> {
    client
        .params("q", operator)
        .ok()
        .and_then(|ps| ps.into_iter().find(|p| p.name == "parallelism"))
        .map(|p| p.value)
}

/// Lets the generators `sources` run at full speed to the end and asserts that the run ended
/// well and wrote exactly `expected`.
pub fn finish(d: &Path, api: &str, run: ChildGuard, sources: &[&str], expected: &[String]) {
    for source in sources {
        stdout_ok(&ctl(d, api, &["set", "q", source, "rate", "1000000"]));
    }
    let out = run.wait_output();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = output_rows(&d.join("out.csv"));
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != expected[i]) {
        panic!(
            "the output differs from the unchanged run at sorted row {i}: {:?} instead of {:?}",
            got[i], expected[i]
        );
    }
}

/// Starts the slowed-down `q.flow` in `d` (output `out`) with checkpoints every 1500 rows,
/// the API and `flags`; its stderr carries the events.
pub fn start_checkpointed(
    d: &Path,
    flags: &[&str],
) -> (
    ChildGuard,
    String,
    std::io::BufReader<std::process::ChildStderr>,
) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_anduin"));
    command
        .args(["run", "q.flow", "-q", "--var", "OUTPUT=out"])
        .args(flags)
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
pub fn checkpoints(stderr: &mut impl std::io::BufRead, n: usize) {
    let mut seen = 0;
    let mut line = String::new();
    while seen < n {
        line.clear();
        assert!(
            stderr.read_line(&mut line).expect("reads") > 0,
            "the run ended"
        );
        seen += usize::from(line.contains(super::CHECKPOINT_COMPLETED));
    }
}
