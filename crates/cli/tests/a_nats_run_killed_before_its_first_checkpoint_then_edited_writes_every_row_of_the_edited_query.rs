//! A run killed before its first checkpoint and started again in the same checkpoint location
//! after its query was edited (another filter) writes every row of the edited query: its
//! lineage was drawn for the other query, so it draws a new one, and its rows get ids of their
//! own instead of those of the killed run's first rows, which the stream would drop as
//! duplicates within its window, silently. (The same query started again keeps its lineage and
//! writes nothing twice: see
//! `a_nats_run_killed_before_its_first_checkpoint_runs_again_to_the_rows_of_an_uninterrupted_one`,
//! whose second run differs only in `bounded`, which says where the input ends.)

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::nats::NatsServer;
use common::{anduin, wait_until, ChildGuard};

fn query(bounded: bool, condition: &str) -> String {
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
  param bounded = {bounded}
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

#[test]
fn a_nats_run_killed_before_its_first_checkpoint_then_edited_writes_every_row_of_the_edited_query()
{
    let window = Duration::from_secs(120);
    let server = NatsServer::start();
    server.stream("EVENTS", &["events"], window);
    server.stream("OUT", &["out"], window);
    let input: Vec<String> = (0..20_000u64)
        .map(|i| format!("{},{},{}", 1_700_000_000_000 + i, i % 7, (i * 53) % 100))
        .collect();
    server.publish("events", &input);
    let var = format!("SERVER={}", server.url);
    let dir = tempfile::tempdir().expect("tempdir");
    // A checkpoint only every million rows: none before the kill.
    let args = |q: &'static str| {
        vec![
            "run",
            q,
            "--var",
            var.as_str(),
            "--checkpoint-dir",
            "ckpt",
            "--checkpoint-every",
            "1000000",
            "--name",
            "q",
        ]
    };

    std::fs::write(dir.path().join("low.flow"), query(false, "value < 50")).expect("query");
    let mut child = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(args("low.flow"))
            .current_dir(dir.path())
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starts"),
    );
    wait_until("the killed run's rows in the output stream", || {
        server.count("OUT") >= 1000
    });
    assert!(
        child.0.try_wait().expect("waits").is_none(),
        "the run is still running when killed"
    );
    let _ = child.0.kill();
    let _ = child.0.wait();
    let killed = server.read("OUT");
    assert!(killed.len() >= 1000);
    assert!(
        killed.iter().all(|r| value(r) < 50),
        "the killed run's rows"
    );
    let lineage = || std::fs::read_to_string(dir.path().join("ckpt/lineage")).expect("kept");
    let drawn_first = lineage();

    // Edited: the other half of the values. No checkpoint to resume from, another query.
    std::fs::write(dir.path().join("high.flow"), query(true, "value >= 50")).expect("query");
    let out = anduin(dir.path(), &args("high.flow"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let expected: Vec<String> = input.iter().filter(|r| value(r) >= 50).cloned().collect();
    let got = server.read("OUT");
    assert_eq!(
        got.len(),
        killed.len() + expected.len(),
        "rows of the edited query dropped as duplicates of the killed run's ({} written before the kill)",
        killed.len()
    );
    assert!(
        got[..killed.len()] == killed[..],
        "the killed run's rows stay"
    );
    assert!(
        got[killed.len()..] == expected[..],
        "every row of the edited query, in order"
    );
    assert!(
        stderr.contains(
            "the query or its parallelism changed since the lineage was drawn: a new lineage"
        ),
        "{stderr}"
    );
    assert_ne!(
        lineage(),
        drawn_first,
        "a new lineage, kept for the edited query"
    );
}
