//! `anduin checkpoints list` reads an object store as it reads a directory: the checkpoints a
//! run left in an S3-compatible store (a moto server on loopback), complete or corrupt, and
//! says so when there are none.

use crate::common;

use std::process::{Command, Output};

use anduin_checkpoint::Store;
use anduin_types::Epoch;
use common::s3::{S3Server, BUCKET};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 3
  param count = 20000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "w", type = "window" {
  input name = "events"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n"
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "out"
}
"#;

fn anduin(s3: &S3Server, dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .envs(s3.env())
        .output()
        .expect("runs")
}

fn stdout_ok(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

#[test]
fn checkpoints_list_reads_an_s3_store() {
    let s3 = S3Server::start();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let store = format!("s3://{BUCKET}/listed");

    let empty = stdout_ok(&anduin(&s3, dir.path(), &["checkpoints", "list", &store]));
    assert_eq!(empty.trim(), format!("no checkpoints in {store}"));

    let run = anduin(
        &s3,
        dir.path(),
        &[
            "run",
            "q.flow",
            "--checkpoint-store",
            &store,
            "--checkpoint-cache",
            "cache",
            "--checkpoint-every",
            "4000",
            "--checkpoint-keep",
            "10",
            "--batch-size",
            "500",
        ],
    );
    stdout_ok(&run);

    // The positional form and the flag of `anduin run` read the same.
    let listed = stdout_ok(&anduin(&s3, dir.path(), &["checkpoints", "list", &store]));
    let flagged = stdout_ok(&anduin(
        &s3,
        dir.path(),
        &["checkpoints", "list", "--checkpoint-store", &store],
    ));
    // Everything but the age, which moves on between the two.
    let without_age = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| l.rsplit_once(' ').map_or(l, |(rest, _)| rest).to_string())
            .collect()
    };
    assert_eq!(without_age(&listed), without_age(&flagged));
    let complete: Vec<u64> = listed
        .lines()
        .filter(|l| l.contains(" complete"))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    // One begun by the count (4 000 of the 20 000 rows), and the last at the end of the
    // input; how many more begin meanwhile depends on how fast the uploads go (a count that
    // comes while one is in flight starts none): at least these two, whatever the machine's
    // load (it asked for 3 and failed under CI load with 2).
    assert!(complete.len() >= 2, "{listed}");
    assert!(listed.contains("complete (finished)"), "{listed}");
    // Nothing was written beside the run's output and cache: the listing keeps no cache.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("lists")
        .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    assert_eq!(names, vec!["cache", "out", "q.flow"]);

    // A flipped byte in a state file: that checkpoint is listed as corrupt, naming the file.
    let cache = tempfile::tempdir().expect("tempdir");
    let first = Epoch(complete[0]);
    let reader = Store::open_s3(BUCKET, "listed", &s3.settings(), cache.path()).expect("opens");
    let manifest = reader.manifest(first).expect("reads").expect("a manifest");
    let file = manifest.files.first().expect("a state file");
    s3.put_object(
        &format!("listed/chk-{:08}/{}", first.0, file.name),
        &vec![b'x'; usize::try_from(file.size).expect("small")],
    );
    let listed = stdout_ok(&anduin(&s3, dir.path(), &["checkpoints", "list", &store]));
    let line = listed
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&first.0.to_string()))
        .expect("listed");
    assert!(
        line.contains("corrupt") && line.contains("checksum mismatch") && line.contains(&file.name),
        "{listed}"
    );
}
