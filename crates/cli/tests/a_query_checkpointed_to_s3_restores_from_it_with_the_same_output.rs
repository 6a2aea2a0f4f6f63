//! Checkpoints in an S3-compatible object store (a moto server on loopback): a windowed query
//! killed with SIGKILL at seeded moments and resumed, each time with an empty local cache (as
//! on another machine, so that every restore reads the object store), writes exactly the rows
//! of an uninterrupted run; once finished, a run from the store has nothing to do.

use crate::common;

use common::Rng;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use common::s3::{S3Server, BUCKET};
use common::{kill_after, output_rows};

const WINDOWED: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 11
  param count = 60000
  param rate = 40000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "w", type = "window" {
  input name = "events"
  param kind = "sliding"
  param size = "200ms"
  param slide = "50ms"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, SUM(value) AS total, MAX(value) AS hi"
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "${OUTPUT}"
}
"#;

/// `anduin run q.flow` with checkpoints in `store`, cached in `cache`.
fn command(s3: &S3Server, dir: &Path, store: &str, cache: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_anduin"));
    c.args(["run", "q.flow", "--var", "OUTPUT=out"])
        .args(["--checkpoint-store", store, "--checkpoint-cache", cache])
        .args(["--checkpoint-every", "5000", "--batch-size", "500"])
        .args(extra)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .envs(s3.env());
    c
}

fn start(s3: &S3Server, dir: &Path, store: &str, cache: &str, extra: &[&str]) -> Child {
    command(s3, dir, store, cache, extra)
        .args(["--events", "-"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts")
}

fn run(s3: &S3Server, dir: &Path, store: &str, cache: &str, extra: &[&str]) -> Output {
    command(s3, dir, store, cache, extra)
        .output()
        .expect("runs")
}

#[test]
fn a_killed_windowed_query_checkpointed_to_s3_resumes_to_the_uninterrupted_output() {
    scenario(&[5], &[]);
}

#[test]
fn a_killed_windowed_query_with_lsm_state_checkpointed_to_s3_resumes_to_the_uninterrupted_output() {
    scenario(&[22], &["--state-backend", "lsm"]);
}

fn scenario(seeds: &[u64], extra: &[&str]) {
    let s3 = S3Server::start();
    for &seed in seeds {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("q.flow"), WINDOWED).expect("query");
        let reference = common::anduin_ok(
            dir.path(),
            &["run", "q.flow", "--var", "OUTPUT=reference.csv"],
        );
        drop(reference);
        let expected = output_rows(&dir.path().join("reference.csv"));
        assert!(expected.len() > 1_000, "the query produces enough rows");

        let store = format!("s3://{BUCKET}/seed-{seed}/q");
        let mut rng = Rng(seed);
        let kills = 2 + rng.next(2);
        let mut killed = 0;
        for attempt in 0..kills {
            let drawn = 1 + rng.next(3);
            // The first kill after the first checkpoint, which every run reaches: a later count may
            // outlast what is left of the input (on a fast machine, the whole run).
            let after = if attempt == 0 { 1 } else { drawn };
            let delay_ms = rng.next(150);
            let cache = format!("cache-{attempt}");
            if kill_after(
                start(&s3, dir.path(), &store, &cache, extra),
                after,
                delay_ms,
            ) {
                killed += 1;
            }
        }
        assert!(killed >= 1, "seed {seed}: the run was never killed mid-way");

        let out = run(&s3, dir.path(), &store, "cache-last", extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "seed {seed}: {stderr}");
        assert!(
            stderr.contains("resuming from checkpoint") && stderr.contains(&store),
            "seed {seed}: the last run resumed from the object store: {stderr}"
        );
        let got = output_rows(&dir.path().join("out"));
        assert_eq!(
            got.len(),
            expected.len(),
            "seed {seed}: rows lost or duplicated"
        );
        assert!(
            got == expected,
            "seed {seed}: the output differs from the uninterrupted run"
        );

        // Finished: another machine (another cache) finds nothing to do.
        let out = run(&s3, dir.path(), &store, "cache-after", extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "seed {seed}: {stderr}");
        assert!(stderr.contains("already finished"), "seed {seed}: {stderr}");
        assert!(output_rows(&dir.path().join("out")) == expected);
    }
}
