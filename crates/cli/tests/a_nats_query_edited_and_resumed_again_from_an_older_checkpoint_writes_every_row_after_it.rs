//! An edited query resumed from the last checkpoint, killed before a checkpoint of its own,
//! and resumed once more from an older checkpoint (the last one removed, as operations.md
//! says to do with a bad one) writes every row it makes after that older checkpoint. Its
//! sink numbers those rows from the older checkpoint's count: in the lineage of its first
//! resumed run, which numbered other rows from the newer checkpoint's count, they would get
//! ids the stream holds and be dropped, silently. A run of an edited query names its rows in
//! a lineage of the checkpoint it resumes from.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::nats::NatsServer;
use common::{wait_until, ChildGuard, CHECKPOINT_COMPLETED};

fn query(condition: &str) -> String {
    format!(
        r#"
type name = "Event" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
operator name = "in", type = "nats" {{
  param server = "${{SERVER}}"
  param stream = "EVENTS"
  param bounded = false
  output name = "events", type = "Event"
}}
operator name = "picked", type = "filter" {{
  input name = "events"
  param condition = "{condition}"
  output name = "picked", type = "Event"
}}
operator name = "out", type = "nats" {{
  input name = "picked"
  param server = "${{SERVER}}"
  param stream = "OUT"
  param subject = "out"
}}
"#
    )
}

fn value(row: &str) -> u32 {
    row.rsplit(',')
        .next()
        .and_then(|v| v.parse().ok())
        .expect("a value")
}

/// How many rows of the input the source had read at checkpoint `epoch`.
fn read_at(dir: &std::path::Path, epoch: u64) -> usize {
    let manifest = std::fs::read_to_string(dir.join(format!("ckpt/chk-{epoch:08}/MANIFEST.json")))
        .expect("the checkpoint");
    let at = ["\"next\":", "\\\"next\\\":"]
        .iter()
        .find_map(|key| manifest.find(key).map(|i| i + key.len()))
        .expect("the source's position");
    let next: String = manifest[at..]
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    next.parse::<usize>().expect("a sequence") - 1
}

const ROWS: u64 = 30_000;

#[test]
fn a_nats_query_edited_and_resumed_again_from_an_older_checkpoint_writes_every_row_after_it() {
    let window = Duration::from_secs(120);
    let server = NatsServer::start();
    server.stream("EVENTS", &["events"], window);
    server.stream("OUT", &["out"], window);
    let input: Vec<String> = (0..ROWS)
        .map(|i| format!("{},{},{}", 1_700_000_000_000 + i, i % 7, (i * 53) % 100))
        .collect();
    server.publish("events", &input);
    let var = format!("SERVER={}", server.url);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q1.flow"), query("value < 20")).expect("query");
    std::fs::write(dir.path().join("q2.flow"), query("value < 80")).expect("query");
    // Started on `q`; says on `checkpoints` each checkpoint it completes.
    let start = |q: &str| {
        let mut child = ChildGuard(
            Command::new(env!("CARGO_BIN_EXE_anduin"))
                .args(["run", q, "--var", var.as_str()])
                .args(["--checkpoint-dir", "ckpt", "--checkpoint-every", "7000"])
                .args([
                    "--checkpoint-keep",
                    "10",
                    "--batch-size",
                    "100",
                    "--name",
                    "q",
                ])
                .args(["--events", "-"])
                .current_dir(dir.path())
                .env_remove("RUST_LOG")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("starts"),
        );
        let stderr = BufReader::new(child.0.stderr.take().expect("stderr"));
        let (completed, checkpoints) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if line.contains(CHECKPOINT_COMPLETED) {
                    let _ = completed.send(());
                }
            }
        });
        (child, checkpoints)
    };
    let kill = |mut child: ChildGuard| {
        assert!(
            child.0.try_wait().expect("waits").is_none(),
            "still running when killed"
        );
        let _ = child.0.kill();
        let _ = child.0.wait();
    };

    // The first query: every row written, four checkpoints (after about 7 000 rows each).
    let (child, checkpoints) = start("q1.flow");
    let low = input.iter().filter(|r| value(r) < 20).count() as u64;
    wait_until("every row of the first query written", || {
        server.count("OUT") >= low
    });
    for _ in 0..4 {
        checkpoints
            .recv_timeout(Duration::from_secs(60))
            .expect("a checkpoint");
    }
    kill(child);

    // Edited, resumed from checkpoint 4, killed before a checkpoint of its own once it wrote
    // a last row (which both queries pick).
    let mut ends = Vec::new();
    for round in 0..2u64 {
        if round == 1 {
            // Checkpoint 4 removed: the next run resumes from checkpoint 3.
            std::fs::remove_dir_all(dir.path().join("ckpt/chk-00000004")).expect("removed");
        }
        let last = format!("{},0,{round}", 1_700_000_000_000 + ROWS + round);
        server.publish("events", std::slice::from_ref(&last));
        let (child, _) = start("q2.flow");
        wait_until("the last row written", || {
            server.read("OUT").last() == Some(&last)
        });
        kill(child);
        ends.push(last);
    }

    let read = read_at(dir.path(), 3);
    let got: std::collections::HashSet<String> = server.read("OUT").into_iter().collect();
    let missing: Vec<&String> = input[read..]
        .iter()
        .filter(|r| value(r) < 80)
        .chain(&ends)
        .filter(|r| !got.contains(*r))
        .collect();
    assert!(
        missing.is_empty(),
        "{} rows of the edited query after checkpoint 3 (after {read} rows) missing, e.g. {:?}",
        missing.len(),
        missing.first()
    );
}
