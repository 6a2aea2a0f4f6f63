//! A NATS sink's rows keep their message ids across a run killed before its first checkpoint
//! completed: the next run starts from nothing (there is no checkpoint), publishes every row
//! again, and the stream drops those the killed run stored. The killed run reads an unbounded
//! stream and is killed with SIGKILL once the output stream holds some of its rows; the next
//! run reads the same stream bounded, to its end.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::nats::NatsServer;
use common::{anduin, wait_until, ChildGuard};

fn query(bounded: bool) -> String {
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
operator name = "low", type = "filter" {{
  input name = "events"
  param condition = "value < 50"
  output name = "low", type = "Event"
}}
operator name = "out", type = "nats" {{
  input name = "low"
  param server = "${{SERVER}}"
  param stream = "OUT"
  param subject = "out"
}}
"#
    )
}

#[test]
fn a_nats_run_killed_before_its_first_checkpoint_runs_again_to_the_rows_of_an_uninterrupted_one() {
    let window = Duration::from_secs(120);
    let server = NatsServer::start();
    server.stream("EVENTS", &["events"], window);
    server.stream("OUT", &["out"], window);
    let input: Vec<String> = (0..20_000u64)
        .map(|i| format!("{},{},{}", 1_700_000_000_000 + i, i % 7, (i * 53) % 100))
        .collect();
    server.publish("events", &input);
    let expected: Vec<String> = input
        .iter()
        .filter(|r| r.rsplit(',').next().and_then(|v| v.parse::<u32>().ok()) < Some(50))
        .cloned()
        .collect();
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

    std::fs::write(dir.path().join("unbounded.flow"), query(false)).expect("query");
    let mut child = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(args("unbounded.flow"))
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
        "the unbounded run is still running when killed"
    );
    let _ = child.0.kill();
    let _ = child.0.wait();
    let written = server.count("OUT");
    assert!(written >= 1000);

    std::fs::write(dir.path().join("bounded.flow"), query(true)).expect("query");
    let out = anduin(dir.path(), &args("bounded.flow"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let got = server.read("OUT");
    assert_eq!(
        got.len(),
        expected.len(),
        "rows lost or duplicated ({written} written before the kill)"
    );
    assert!(got == expected, "other rows than the filtered input");
    assert!(
        stderr.contains("duplicates_dropped"),
        "the summary counts the rows dropped: {stderr}"
    );
}
