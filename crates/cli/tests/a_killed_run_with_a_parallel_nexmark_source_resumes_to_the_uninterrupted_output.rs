//! Exactly-once with a parallel source: a query whose `nexmark` source runs as two instances
//! (each checkpointing its own position) feeding a keyed window at parallelism 2, killed with
//! SIGKILL after some checkpoints and resumed, writes exactly the rows of an uninterrupted
//! run; a restore at another parallelism is refused, naming the source.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::{anduin, anduin_ok, kill_after, output_rows};

const QUERY: &str = r#"
operator name = "bids", type = "nexmark" {
  param events = 80000
  param rate = 40000
  param throttle = "${THROTTLE:-true}"
  param event_time = "dateTime"
  output name = "bid"
}
operator name = "w", type = "window" {
  input name = "bid"
  param kind = "tumbling"
  param size = "100ms"
  param time = "dateTime"
  param keys = "auction"
  param aggregates = "COUNT(*) AS n, SUM(price) AS total"
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "${OUTPUT}"
}
"#;

const CHECKPOINTED: [&str; 10] = [
    "run",
    "q.flow",
    "--var",
    "OUTPUT=out",
    "--checkpoint-dir",
    "ckpt",
    "--checkpoint-every",
    "4000",
    "--parallelism",
    "2",
];

/// Starts the checkpointed run, logging its checkpoints on stderr.
fn start(dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(CHECKPOINTED)
        .args(["--batch-size", "500"])
        .current_dir(dir)
        .args(["--events", "-"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts")
}

#[test]
fn a_killed_run_with_a_parallel_nexmark_source_resumes_to_the_uninterrupted_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    anduin_ok(
        dir.path(),
        &[
            "run",
            "q.flow",
            "-q",
            "--var",
            "OUTPUT=reference.csv",
            "--var",
            "THROTTLE=false",
        ],
    );
    let expected = output_rows(&dir.path().join("reference.csv"));
    assert!(expected.len() > 5000, "{} rows", expected.len());

    let mut killed = 0;
    for after in [2, 3] {
        if kill_after(start(dir.path()), after, 0) {
            killed += 1;
        }
    }
    assert!(killed >= 1, "the run was never killed mid-way");
    let manifest = std::fs::read_dir(dir.path().join("ckpt"))
        .expect("checkpoints")
        .count();
    assert!(manifest > 0, "some checkpoint was kept");

    // Another parallelism does not fit the checkpoint's positions: refused, by name.
    let mut other = CHECKPOINTED.to_vec();
    other[9] = "3";
    let refused = anduin(dir.path(), &other);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_ne!(refused.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("bids") && stderr.contains("parallelism"),
        "{stderr}"
    );

    anduin_ok(dir.path(), &CHECKPOINTED);
    let got = output_rows(&dir.path().join("out"));
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated");
    assert!(
        got == expected,
        "the output differs from the uninterrupted run"
    );
}
