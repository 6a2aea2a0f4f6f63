//! A changelog query killed at seeded moments and run to its end: what the killed GROUP BY
//! and regular join scenarios share.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::{anduin, kill_after, rows_in_order, Rng};

/// The flags of every run: `query` into `OUTPUT=out`, a checkpoint every 5000 rows in
/// `ckpt`, batches of 500, then `extra`.
fn args<'a>(query: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        query,
        "--var",
        "OUTPUT=out",
        "--checkpoint-dir",
        "ckpt",
        "--checkpoint-every",
        "5000",
        "--batch-size",
        "500",
    ];
    args.extend_from_slice(extra);
    args
}

fn start(dir: &Path, query: &str, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(args(query, extra))
        .current_dir(dir)
        .args(["--events", "-"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts")
}

/// Runs `q.flow` in `dir` killed with SIGKILL two to four times (seeded by `seed`, each after
/// a seeded number of checkpoints and milliseconds), run `i` with the flags
/// `extra[i % extra.len()]`, then to its end with the last; the output's lines in order.
pub fn killed_then_finished(dir: &Path, seed: u64, extra: &[&[&str]]) -> Vec<String> {
    killed_then_finished_query(dir, "q.flow", seed, extra)
}

/// [`killed_then_finished`] for the query file `query` of `dir` (`q.sql`).
pub fn killed_then_finished_query(
    dir: &Path,
    query: &str,
    seed: u64,
    extra: &[&[&str]],
) -> Vec<String> {
    killed_then_ended(dir, query, seed, extra);
    rows_in_order(&dir.join("out"))
}

/// [`killed_then_finished_query`] for a query that writes more than `OUTPUT=out` (files
/// under it, say): the runs alone, the outputs left to the caller to read.
pub fn killed_then_ended(dir: &Path, query: &str, seed: u64, extra: &[&[&str]]) {
    let mut rng = Rng(seed);
    let kills = 2 + rng.next(3);
    let mut killed = 0;
    for i in 0..kills {
        let drawn = 1 + rng.next(4);
        // The first kill after the first checkpoint, which every run reaches: a later count may
        // outlast what is left of the input (on a fast machine, the whole run).
        let after = if i == 0 { 1 } else { drawn };
        let delay_ms = rng.next(150);
        let flags = extra[usize::try_from(i).expect("small") % extra.len()];
        if kill_after(start(dir, query, flags), after, delay_ms) {
            killed += 1;
        }
    }
    assert!(killed >= 1, "seed {seed}: the run was never killed mid-way");
    let out = anduin(dir, &args(query, extra.last().expect("flags")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "seed {seed}: {stderr}");
}
