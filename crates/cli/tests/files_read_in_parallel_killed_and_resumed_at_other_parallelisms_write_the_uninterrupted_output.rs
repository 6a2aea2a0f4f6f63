//! Files read in parallel, exactly once: a reader of a glob of CSV files (quoted fields that
//! span lines, malformed records) cut into byte ranges shared by its instances, killed with
//! SIGKILL at seeded moments at parallelism 2, then 3, then 1, and run to its end at 4 (each
//! restore deals the splits the instances had left over the new ones), writes exactly the
//! rows of an uninterrupted run at parallelism 1.

use crate::common;

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::{anduin, anduin_ok, kill_after, output_rows, Rng};

const QUERY: &str = r#"
type name = "Reading" {
  column name = "id", type = "int"
  column name = "sensor", type = "int"
  column name = "note", type = "string"
}
operator name = "files", type = "reader" {
  param path = "in/*.csv"
  param min_split_bytes = "8KB"
  param rate = "${RATE:-1000000000}"
  output name = "readings", type = "Reading"
}
operator name = "some", type = "filter" {
  input name = "readings"
  param condition = "readings.sensor < 7"
  output name = "kept", type = "Reading"
}
operator name = "out", type = "writer" {
  input name = "kept"
  param path = "${OUTPUT}"
}
"#;

/// Three files of `rows` records each: every 37th note a quoted field over two lines, every
/// 101st record malformed.
fn write_input(dir: &Path, rows: u64) {
    std::fs::create_dir_all(dir.join("in")).expect("in/");
    for f in 0..3u64 {
        let mut text = String::from("id,sensor,note\n");
        for i in 0..rows {
            let id = f * rows + i;
            let note = match id % 37 {
                0 => format!("\"two\nlines, {id}\""),
                1 => format!("\"a \"\"quote\"\" {id}\""),
                _ => format!("n{id}"),
            };
            if id.is_multiple_of(101) {
                writeln!(text, "{id},not a number,{note}").expect("writes");
            } else {
                writeln!(text, "{id},{},{note}", id % 10).expect("writes");
            }
        }
        std::fs::write(dir.join(format!("in/part{f}.csv")), text).expect("writes");
    }
}

fn checkpointed(parallelism: &str) -> Vec<String> {
    [
        "run",
        "q.flow",
        "--var",
        "OUTPUT=out",
        "--var",
        "RATE=20000",
        "--checkpoint-dir",
        "ckpt",
        "--checkpoint-every",
        "3000",
        "--batch-size",
        "500",
        "--parallelism",
        parallelism,
    ]
    .map(String::from)
    .to_vec()
}

fn start(dir: &Path, parallelism: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(checkpointed(parallelism))
        .current_dir(dir)
        .args(["--events", "-"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts")
}

#[test]
fn files_read_in_parallel_killed_and_resumed_at_other_parallelisms_write_the_uninterrupted_output()
{
    let seed = 19;
    let dir = tempfile::tempdir().expect("tempdir");
    write_input(dir.path(), 20_000);
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    anduin_ok(
        dir.path(),
        &["run", "q.flow", "-q", "--var", "OUTPUT=reference.csv"],
    );
    let expected = output_rows(&dir.path().join("reference.csv"));
    assert!(expected.len() > 30_000, "{} rows", expected.len());
    assert!(
        expected.iter().any(|r| r.contains("\"two")),
        "quoted fields over two lines are read"
    );

    // The reader runs as as many instances as asked.
    let plan = anduin_ok(
        dir.path(),
        &[
            "explain",
            "q.flow",
            "--var",
            "OUTPUT=out",
            "--parallelism",
            "3",
        ],
    );
    let plan = String::from_utf8_lossy(&plan.stdout);
    assert!(plan.contains("files (3 instances)"), "{plan}");

    let mut rng = Rng(seed);
    let mut killed = 0;
    for p in ["2", "3", "1"] {
        let after = 1 + rng.next(3);
        let delay_ms = rng.next(100);
        if kill_after(start(dir.path(), p), after, delay_ms) {
            killed += 1;
        }
    }
    assert!(
        killed >= 2,
        "seed {seed}: killed only {killed} times mid-way"
    );

    let args = checkpointed("4");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = anduin(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "seed {seed}: {stderr}");
    let got = output_rows(&dir.path().join("out"));
    assert_eq!(
        got.len(),
        expected.len(),
        "seed {seed}: rows lost or duplicated"
    );
    if let Some(i) = (0..got.len()).find(|&i| got[i] != expected[i]) {
        panic!(
            "seed {seed}: the output differs from the uninterrupted run at sorted row {i}: {:?} instead of {:?}",
            got[i], expected[i]
        );
    }
}
