//! A state file of the latest checkpoint in an S3-compatible store (a moto server on
//! loopback) that no longer matches its manifest's checksum is detected as it is fetched: the
//! run says the checkpoint is unusable, falls back to the previous one, keeps nothing of the
//! bad file, and still writes exactly the rows of an uninterrupted run.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use anduin_checkpoint::{CheckpointStatus, Store};
use common::s3::{S3Server, BUCKET};
use common::{output_rows, ChildGuard, CHECKPOINT_COMPLETED};

const WINDOWED: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 13
  param count = 40000
  param rate = 20000
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
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "${OUTPUT}"
}
"#;

const PREFIX: &str = "corrupt/q";

fn command(s3: &S3Server, dir: &Path, cache: &str) -> Command {
    let store = format!("s3://{BUCKET}/{PREFIX}");
    let mut c = Command::new(env!("CARGO_BIN_EXE_anduin"));
    c.args(["run", "q.flow", "--var", "OUTPUT=out"])
        .args(["--checkpoint-store", &store, "--checkpoint-cache", cache])
        .args(["--checkpoint-every", "4000", "--checkpoint-full-every", "1"])
        .args(["--batch-size", "500"])
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .envs(s3.env());
    c
}

#[test]
fn a_corrupt_file_in_s3_makes_the_restore_fall_back_to_the_previous_checkpoint() {
    let s3 = S3Server::start();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), WINDOWED).expect("query");
    common::anduin_ok(
        dir.path(),
        &["run", "q.flow", "--var", "OUTPUT=reference.csv"],
    );
    let expected = output_rows(&dir.path().join("reference.csv"));

    // Three checkpoints, then SIGKILL.
    let mut child = ChildGuard(
        command(&s3, dir.path(), "cache-1")
            .args(["--events", "-"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts"),
    );
    let stderr = BufReader::new(child.0.stderr.take().expect("stderr"));
    let mut seen = 0;
    for line in stderr.lines() {
        if line.expect("a line").contains(CHECKPOINT_COMPLETED) {
            seen += 1;
            if seen == 3 {
                break;
            }
        }
    }
    assert_eq!(seen, 3, "the run completed three checkpoints");
    drop(child);

    // Corrupt a state file of the newest complete checkpoint, in the object store.
    let look = tempfile::tempdir().expect("tempdir");
    let reader = Store::open_s3(BUCKET, PREFIX, &s3.settings(), look.path()).expect("opens");
    let complete: Vec<_> = reader
        .list()
        .expect("lists")
        .into_iter()
        .filter(|l| l.status == CheckpointStatus::Complete)
        .map(|l| l.epoch)
        .collect();
    assert!(complete.len() >= 2, "{complete:?}");
    let latest = *complete.last().expect("one");
    let manifest = reader.manifest(latest).expect("reads").expect("complete");
    let file = manifest.files.first().expect("the window's state file");
    let mut bytes = vec![0u8; usize::try_from(file.size).expect("small")];
    bytes.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
    s3.put_object(
        &format!("{PREFIX}/chk-{:08}/{}", latest.0, file.name),
        &bytes,
    );

    // Another machine resumes: it falls back, saying why, and the output is still exact.
    let out = command(&s3, dir.path(), "cache-2").output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("checkpoint {} is unusable", latest.0))
            && stderr.contains("checksum mismatch in s3://")
            && stderr.contains(&file.name),
        "{stderr}"
    );
    assert!(
        !dir.path()
            .join(format!("cache-2/chk-{:08}/{}", latest.0, file.name))
            .exists(),
        "the bad file was not kept in the cache"
    );
    assert!(
        output_rows(&dir.path().join("out")) == expected,
        "the output differs from the uninterrupted run"
    );
}
