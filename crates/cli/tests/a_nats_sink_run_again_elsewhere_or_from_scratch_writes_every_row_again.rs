//! A NATS sink's message ids name the lineage of the run's checkpoints, kept in the
//! checkpoint location: another run of the same query (same name) with checkpoints
//! elsewhere, or started over on purpose with `--from-scratch`, within the stream's
//! duplicate window, writes every one of its rows; none is dropped as a duplicate of the
//! earlier run's. (A run killed before its first checkpoint and started again in the same
//! location keeps its lineage: see
//! `a_nats_run_killed_before_its_first_checkpoint_runs_again_to_the_rows_of_an_uninterrupted_one`.)

use crate::common;

use std::time::Duration;

use common::anduin;
use common::nats::NatsServer;

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "in", type = "nats" {
  param server = "${SERVER}"
  param stream = "EVENTS"
  param bounded = true
  output name = "events", type = "Event"
}
operator name = "low", type = "filter" {
  input name = "events"
  param condition = "value < 50"
  output name = "low", type = "Event"
}
operator name = "out", type = "nats" {
  input name = "low"
  param server = "${SERVER}"
  param stream = "OUT"
  param subject = "out"
}
"#;

#[test]
fn a_nats_sink_run_again_elsewhere_or_from_scratch_writes_every_row_again() {
    let window = Duration::from_secs(120);
    let server = NatsServer::start();
    server.stream("EVENTS", &["events"], window);
    server.stream("OUT", &["out"], window);
    let input: Vec<String> = (0..3_000u64)
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
    std::fs::write(dir.path().join("q.flow"), QUERY).expect("query");
    let run = |ckpt: &str, more: &[&str]| {
        let mut args = vec![
            "run",
            "q.flow",
            "--var",
            var.as_str(),
            "--checkpoint-dir",
            ckpt,
            "--name",
            "q",
        ];
        args.extend_from_slice(more);
        let out = anduin(dir.path(), &args);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        stderr
    };
    let lineage = |ckpt: &str| {
        std::fs::read_to_string(dir.path().join(ckpt).join("lineage"))
            .expect("the lineage is kept beside the checkpoints")
    };

    run("ck1", &[]);
    assert_eq!(server.read("OUT"), expected, "the first run's rows");
    let first = lineage("ck1");

    // Another run of the same query, checkpoints elsewhere: every row again.
    let stderr = run("ck2", &[]);
    assert_ne!(lineage("ck2"), first, "another location, another lineage");
    let got = server.read("OUT");
    assert_eq!(
        got.len(),
        2 * expected.len(),
        "the second run's rows dropped as duplicates of the first's: {stderr}"
    );
    assert_eq!(got[expected.len()..], expected[..]);

    // The first location started over on purpose: every row again, in a new lineage.
    let stderr = run("ck1", &["--from-scratch"]);
    assert_ne!(lineage("ck1"), first, "a start over draws another lineage");
    let got = server.read("OUT");
    assert_eq!(
        got.len(),
        3 * expected.len(),
        "the rows of the run started over dropped as duplicates: {stderr}"
    );
    assert_eq!(got[2 * expected.len()..], expected[..]);
}

/// A reader run at `--parallelism 3` into an exactly-once NATS sink: its three instances'
/// rows interleave in another order on every run, so a restarted run would give rows the ids
/// of others. Refused before anything runs, naming the sink; at least once, it runs.
#[test]
fn a_nats_sink_fed_by_several_reader_instances_is_refused_unless_at_least_once() {
    let window = Duration::from_secs(120);
    let server = NatsServer::start();
    server.stream("OUT", &["out"], window);
    let dir = tempfile::tempdir().expect("tempdir");
    let rows: String = (0..3_000u64)
        .map(|i| format!("{},{},{}\n", 1_700_000_000_000 + i, i % 7, i % 100))
        .collect();
    std::fs::write(dir.path().join("events.csv"), rows).expect("input");
    let query = |delivery: &str| {
        format!(
            r#"
type name = "Event" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
operator name = "in", type = "reader" {{
  param path = "events.csv"
  param header = false
  output name = "events", type = "Event"
}}
operator name = "out", type = "nats" {{
  input name = "events"
  param server = "{}"
  param stream = "OUT"
  param subject = "out"
  {delivery}
}}
"#,
            server.url
        )
    };
    let args = [
        "run",
        "q.flow",
        "--parallelism",
        "3",
        "--checkpoint-dir",
        "ckpt",
    ];
    std::fs::write(dir.path().join("q.flow"), query("")).expect("query");
    let out = anduin(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(r#"operator "out" (a NATS sink, exactly once)"#)
            && stderr.contains(r#"3 instances of "in""#)
            && stderr.contains(r#"delivery = "at-least-once""#),
        "{stderr}"
    );
    assert_eq!(server.count("OUT"), 0, "nothing written");

    std::fs::write(
        dir.path().join("q.flow"),
        query(r#"param delivery = "at-least-once""#),
    )
    .expect("query");
    let out = anduin(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(server.count("OUT"), 3_000, "every row, at least once");
}
