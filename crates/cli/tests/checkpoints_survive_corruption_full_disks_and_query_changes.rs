//! Checkpoint faults: a corrupt or missing checkpoint makes recovery fall back to the
//! previous one and say so; with none usable, recovery refuses to start without
//! --from-scratch; a checkpoint that fails to write (a full disk) leaves the query running and
//! the previous checkpoint intact; a changed query restores only when no state is affected;
//! stdin cannot be checkpointed; Ctrl-C takes a last checkpoint that a later run resumes.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use common::anduin;

fn query(condition: &str, seed: u64) -> String {
    format!(
        r#"
type name = "Event" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
operator name = "gen", type = "generator" {{
  param profile = "events"
  param seed = {seed}
  param count = 40000
  param rate = 20000
  output name = "events", type = "Event"
}}
operator name = "low", type = "filter" {{
  input name = "events"
  param condition = "{condition}"
  output name = "low", type = "Event"
}}
operator name = "out", type = "writer" {{
  input name = "low"
  param path = "out"
}}
"#
    )
}

const ARGS: &[&str] = &[
    "run",
    "q.flow",
    "--checkpoint-dir",
    "ckpt",
    "--checkpoint-every",
    "4000",
    "--batch-size",
    "500",
];

/// Runs the query until `n` checkpoints are complete, then kills it.
fn run_and_kill_after(dir: &Path, n: usize) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(ARGS)
        .current_dir(dir)
        .args(["--events", "-"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut seen = 0;
    for line in stderr.lines() {
        if line.expect("line").contains(common::CHECKPOINT_COMPLETED) {
            seen += 1;
            if seen == n {
                break;
            }
        }
    }
    assert_eq!(
        seen, n,
        "the run completed {n} checkpoints before being killed"
    );
    let _ = child.kill();
    let _ = child.wait();
}

fn setup(condition: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), query(condition, 3)).expect("query");
    dir
}

fn complete_epochs(dir: &Path) -> Vec<u64> {
    let out = anduin(dir, &["checkpoints", "list", "ckpt"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(" complete"))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect()
}

#[test]
fn a_corrupt_latest_checkpoint_falls_back_to_the_previous_one() {
    let dir = setup("value < 50");
    run_and_kill_after(dir.path(), 3);
    let epochs = complete_epochs(dir.path());
    let latest = *epochs.last().expect("complete checkpoints");
    assert!(epochs.len() >= 2, "{epochs:?}");
    // Flip a byte in the latest manifest.
    let manifest = dir
        .path()
        .join(format!("ckpt/chk-{latest:08}/MANIFEST.json"));
    let mut bytes = std::fs::read(&manifest).expect("manifest");
    let i = bytes.iter().position(|b| *b == b'"').expect("a quote") + 1;
    bytes[i] ^= 0x20;
    std::fs::write(&manifest, bytes).expect("corrupts");
    let listing = anduin(dir.path(), &["checkpoints", "list", "ckpt"]);
    assert!(String::from_utf8_lossy(&listing.stdout).contains("corrupt"));

    let out = anduin(dir.path(), ARGS);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("checkpoint {latest} is unusable"))
            && stderr.contains("checksum mismatch"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "resuming from checkpoint {}",
            epochs[epochs.len() - 2]
        )),
        "{stderr}"
    );
}

#[test]
fn without_a_usable_checkpoint_recovery_needs_from_scratch() {
    let dir = setup("value < 50");
    run_and_kill_after(dir.path(), 2);
    for e in complete_epochs(dir.path()) {
        let manifest = dir.path().join(format!("ckpt/chk-{e:08}/MANIFEST.json"));
        let text = std::fs::read_to_string(&manifest).expect("manifest");
        std::fs::write(&manifest, &text[..text.len() / 2]).expect("truncates");
    }
    let out = anduin(dir.path(), ARGS);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no usable checkpoint") && stderr.contains("--from-scratch"),
        "{stderr}"
    );

    let mut args = ARGS.to_vec();
    args.push("--from-scratch");
    let out = anduin(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("starting from scratch"), "{stderr}");
}

#[test]
fn a_checkpoint_that_cannot_be_written_fails_alone() {
    let dir = setup("value < 50");
    let mut args = ARGS.to_vec();
    args.extend(["--inject-checkpoint-failure", "2"]);
    let out = anduin(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the query keeps running: {stderr}"
    );
    assert!(stderr.contains("checkpoint failed"), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(stderr.contains("1 failed"), "{stderr}");
    // Every row still arrives exactly once.
    let reference = setup("value < 50");
    let out = anduin(reference.path(), &["run", "q.flow"]);
    assert_eq!(out.status.code(), Some(0));
    let rows = |p: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(p)
            .map(|d| {
                d.flat_map(|e| {
                    let p = e.expect("entry").path();
                    std::fs::read_to_string(p)
                        .expect("file")
                        .lines()
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                })
                .filter(|l| !l.starts_with("ts,"))
                .collect()
            })
            .unwrap_or_else(|_| {
                std::fs::read_to_string(p)
                    .expect("file")
                    .lines()
                    .skip(1)
                    .map(str::to_string)
                    .collect()
            });
        v.sort();
        v
    };
    assert!(rows(&dir.path().join("out")) == rows(&reference.path().join("out")));
}

#[test]
fn a_query_change_that_touches_no_state_restores_and_one_that_does_is_refused() {
    let dir = setup("value < 50");
    run_and_kill_after(dir.path(), 2);
    // Another generator seed changes a source's params: its position no longer fits.
    std::fs::write(dir.path().join("changed.flow"), query("value < 40", 4)).expect("query");
    let mut args: Vec<&str> = ARGS.to_vec();
    args[1] = "changed.flow";
    let out = anduin(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("operator \"gen\": param `seed` changed from \"3\" to \"4\"")
            && stderr.contains("--from-scratch"),
        "{stderr}"
    );
    // A different condition in the stateless filter is fine.
    std::fs::write(dir.path().join("q.flow"), query("value < 40", 3)).expect("query");
    let out = anduin(dir.path(), ARGS);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("resuming from checkpoint"), "{stderr}");
}

#[test]
fn stdin_cannot_be_checkpointed() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("q.flow"),
        r#"type name = "T" { column name = "x", type = "int" }
operator name = "in", type = "reader" { param path = "-" output name = "xs", type = "T" }
operator name = "out", type = "discard" { input name = "xs" }"#,
    )
    .expect("query");
    let out = anduin(dir.path(), &["run", "q.flow", "--checkpoint-dir", "ckpt"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("operator \"in\": it reads stdin"),
        "{stderr}"
    );
}

#[test]
fn ctrl_c_takes_a_last_checkpoint_that_the_next_run_resumes() {
    let dir = setup("value < 50");
    let mut child = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(ARGS)
        .current_dir(dir.path())
        .args(["--events", "-"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    while stderr.read_line(&mut line).expect("reads") > 0
        && !line.contains(common::CHECKPOINT_COMPLETED)
    {
        line.clear();
    }
    assert!(Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill")
        .success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).expect("reads");
    let status = child.wait().expect("exits");
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(
        rest.contains(r#""last":true}"#) && rest.contains(r#""finished":false}"#),
        "{rest}"
    );
    let out = anduin(dir.path(), ARGS);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("resuming from checkpoint"), "{stderr}");
}
