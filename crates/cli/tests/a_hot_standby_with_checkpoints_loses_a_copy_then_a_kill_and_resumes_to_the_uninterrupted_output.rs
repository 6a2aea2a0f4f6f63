//! Hot standby with checkpoints, embedded: a run of a windowed query whose window runs as two
//! copies behind a stream selector loses one copy (test-only fault injection, at seeded
//! points: before the first checkpoint or later), goes on with the other, takes its
//! checkpoints without waiting for the lost copy, and is then killed with SIGKILL at a seeded
//! moment. Resumed from its last checkpoint, with both copies again (the lost one from its
//! twin's state), it writes exactly the rows of an uninterrupted run of the query without hot
//! standby: none lost, none twice. In process, and over `--loopback-workers 2`.

use crate::common;

use common::Rng;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::{anduin, kill_after, output_rows, repo};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 5
  param count = 40000
  param rate = 40000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "w", type = "window" {
  input name = "events"
  param kind = "tumbling"
  param size = "100ms"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, SUM(value) AS total"
  param fault_tolerance = "hot-standby"
  param replicas = 2
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "${OUTPUT}"
}
"#;

fn start(query: &Path, out: &Path, store: &Path, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_anduin"))
        .arg("run")
        .arg(query)
        .arg("--var")
        .arg(format!("OUTPUT={}", out.display()))
        .arg("--checkpoint-store")
        .arg(store)
        .args(["--checkpoint-every", "2000", "--no-api", "--events", "-"])
        .args(extra)
        .current_dir(repo())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("anduin starts")
}

#[test]
fn a_hot_standby_with_checkpoints_loses_a_copy_then_a_kill_and_resumes_to_the_uninterrupted_output()
{
    loses_a_copy_then_a_kill(&[]);
}

/// The same with the copies' channels across loopback TCP (edges without resumption: a lost
/// copy's end as its in-process channels do), in the run and in the resumed run.
#[test]
fn over_loopback_workers_a_hot_standby_with_checkpoints_loses_a_copy_then_a_kill_and_resumes_to_the_uninterrupted_output(
) {
    loses_a_copy_then_a_kill(&["--loopback-workers", "2"]);
}

/// Loses a copy at seeded points, run with `placement`, kills the run, resumes it (with
/// `placement` too), and compares with the uninterrupted run of the query without hot standby.
fn loses_a_copy_then_a_kill(placement: &[&str]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let query = dir.path().join("q.flow");
    std::fs::write(&query, QUERY).expect("query");
    // The reference: the query without hot standby, without checkpoints, uninterrupted.
    let plain = dir.path().join("plain.flow");
    std::fs::write(
        &plain,
        QUERY.replace(
            "  param fault_tolerance = \"hot-standby\"\n  param replicas = 2\n",
            "",
        ),
    )
    .expect("query");
    let reference = dir.path().join("reference.csv");
    let ok = anduin(
        &repo(),
        &[
            "run",
            plain.to_str().expect("utf-8"),
            "--var",
            &format!("OUTPUT={}", reference.display()),
            "--no-api",
        ],
    );
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let expected = output_rows(&reference);
    assert!(expected.len() > 100, "{}", expected.len());

    let mut rng = Rng(0x00C0_FFEE);
    for seed in 0..3 {
        let run = dir.path().join(format!("seed{seed}"));
        let (out, store) = (run.join("out.csv"), run.join("ckpt"));
        std::fs::create_dir_all(&run).expect("run dir");
        let copy = ["w", "w_replica_1"][rng.next(2) as usize];
        // Seed 0 loses the copy on its first rows, before the first checkpoint: every
        // checkpoint then lacks its own state, and the resumed run restores it from its twin.
        let rows = if seed == 0 { 0 } else { rng.next(30_000) };
        let fault = format!("{copy}:{rows}");
        let (checkpoints, delay) = (1 + rng.next(3), rng.next(80));
        let mut args = vec!["--fail-after", &fault];
        args.extend_from_slice(placement);
        let child = start(&query, &out, &store, &args);
        let killed = kill_after(child, checkpoints, delay);
        // Resumed (or, had the first run finished before the kill, told it finished).
        let resumed = start(&query, &out, &store, placement)
            .wait_with_output()
            .expect("waits");
        let stderr = String::from_utf8_lossy(&resumed.stderr);
        assert!(
            resumed.status.success(),
            "seed {seed} (lost {fault}, killed after {checkpoints} checkpoints + {delay} ms: {killed}): {stderr}"
        );
        assert_eq!(
            output_rows(&out),
            expected,
            "seed {seed}: lost {fault}, killed after {checkpoints} checkpoints + {delay} ms ({killed})"
        );
        // A kill that came as the run was ending (its last checkpoint written) leaves
        // nothing to resume: the resumed run says so instead of restoring the copies.
        let finished = stderr.contains("this query already finished");
        if killed && seed == 0 && !finished {
            assert!(
                stderr.contains("w_replica_1") && !stderr.contains("no state of operator"),
                "seed {seed}: both copies run again: {stderr}"
            );
        }
    }
}
