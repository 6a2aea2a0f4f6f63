//! probe41 M2: a Kafka broker lost for longer than `connect.timeout` while an exactly-once
//! query ran failed the run at its next checkpoint (reading the topic's end offsets), and a
//! commit gave up after 60 s. Now the checkpoint keeps the end offsets read before, and the
//! sink tries its commit again (with backoff) until the broker is back: the query stalls,
//! then goes on, and the topic holds every row of a run without the outage, once. A stop
//! while it waits ends the run as a stop does (exit 143), the rows not committed kept in the
//! stop's last checkpoint for the resumed run.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::kafka::Cluster;
use common::{anduin_ok, wait_until_or_show, ChildGuard, CHECKPOINT_COMPLETED};

const QUERY: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 3000
  param rate = RATE
  output name = "events", type = "Event"
}
operator name = "low", type = "filter" {
  input name = "events"
  param condition = "value < 50"
  output name = "low", type = "Event"
}
operator name = "out", type = "kafka" {
  input name = "low"
  param topic = "${TOPIC}"
  param properties.bootstrap.servers = "${SERVERS}"
  param format = "csv"
  param connect.timeout = "1s"
}
"#;

/// A mock cluster with topics `ref` and `out`, a directory with the query at full speed
/// (`fast.flow`), at 300 rows a second (`slow.flow`) and at 1 000 (`brisk.flow`), the `--var`
/// of the servers, and the
/// rows of a run without faults (into `ref`), sorted.
fn prepared() -> (Cluster, tempfile::TempDir, String, Vec<String>) {
    let cluster = Cluster::start();
    cluster.topic("ref", 1);
    cluster.topic("out", 1);
    let dir = tempfile::tempdir().expect("tempdir");
    // The same rows either way: the generator's rows do not depend on its rate.
    std::fs::write(
        dir.path().join("fast.flow"),
        QUERY.replace("RATE", "1000000"),
    )
    .expect("q");
    std::fs::write(dir.path().join("slow.flow"), QUERY.replace("RATE", "300")).expect("q");
    std::fs::write(dir.path().join("brisk.flow"), QUERY.replace("RATE", "1000")).expect("q");
    let servers = format!("SERVERS={}", cluster.servers());
    let mut args = vec!["run", "fast.flow", "--no-api", "-q", "--var", &servers];
    args.extend(["--var", "TOPIC=ref", "--checkpoint-dir", "ck-ref"]);
    args.extend(["--checkpoint-interval", "200ms"]);
    anduin_ok(dir.path(), &args);
    let mut expected = cluster.read_committed("ref");
    expected.sort();
    assert!(expected.len() > 100, "the reference run wrote {expected:?}");
    (cluster, dir, servers, expected)
}

/// `anduin run slow.flow` into `out`, checkpointed into `ck`, its stderr (events and logs)
/// into `log`.
fn slow_run(dir: &Path, servers: &str, log: &Path) -> ChildGuard {
    run_of(dir, "slow.flow", "200ms", servers, log)
}

/// `anduin run FILE` into `out`, checkpointed into `ck` every `interval`, its stderr (events
/// and logs) into `log`.
fn run_of(dir: &Path, file: &str, interval: &str, servers: &str, log: &Path) -> ChildGuard {
    // Its API on a port the system picks (`anduin ctl stop`).
    let mut args = vec!["run", file, "--events", "-"];
    args.extend([
        "--var",
        servers,
        "--var",
        "TOPIC=out",
        "--checkpoint-dir",
        "ck",
    ]);
    args.extend(["--checkpoint-interval", interval]);
    ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(&args)
            .current_dir(dir)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).expect("log"))
            .spawn()
            .expect("anduin starts"),
    )
}

/// Starts the slow run, takes the broker down after its first checkpoint, and waits until a
/// commit fails on it (the run must still be running); the run and its log.
fn lost_while_running(cluster: &Cluster, dir: &Path, servers: &str) -> (ChildGuard, PathBuf) {
    lost_once(
        cluster,
        dir,
        servers,
        ("slow.flow", "200ms"),
        ("the run's first checkpoint", &|s| {
            s.contains(CHECKPOINT_COMPLETED)
        }),
        ("a commit to fail while the broker is lost", &|s| {
            s.contains("the sink tries again")
        }),
    )
}

/// Starts `brisk.flow`, takes the broker down once its task started, and waits until its
/// input ended, its last checkpoint completed and the commit of that checkpoint failed (the
/// run must still be running); the run and its log.
fn waiting_for_the_last_commit(
    cluster: &Cluster,
    dir: &Path,
    servers: &str,
) -> (ChildGuard, PathBuf) {
    lost_once(
        cluster,
        dir,
        servers,
        // No checkpoint before the input ends: the only one is the last, at its end.
        ("brisk.flow", "1h"),
        // Its transactional producer is started before its task.
        ("the run's task to start", &|s| {
            s.contains(r#"{"event":"task_started""#)
        }),
        (
            "the last checkpoint, and its commit to fail while the broker is lost",
            &|s| s.contains(CHECKPOINT_COMPLETED) && s.contains("the sink tries again"),
        ),
    )
}

/// What a run's log says, for a wait: what is awaited, and whether the log shows it.
type Awaited<'a> = (&'a str, &'a dyn Fn(&str) -> bool);

/// Starts `(file, checkpoint interval)` into `run.log`, takes the broker down once the log
/// shows `before`, and waits until it shows `lost` (the run must still be running); the run
/// and its log.
fn lost_once(
    cluster: &Cluster,
    dir: &Path,
    servers: &str,
    (file, interval): (&str, &str),
    before: Awaited<'_>,
    lost: Awaited<'_>,
) -> (ChildGuard, PathBuf) {
    let log = dir.join("run.log");
    let mut run = run_of(dir, file, interval, servers, &log);
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_until_or_show(before.0, || before.1(&said()), said);
    cluster.down();
    let mut ended = None;
    wait_until_or_show(
        lost.0,
        || {
            ended = run.0.try_wait().expect("waits");
            ended.is_some() || lost.1(&said())
        },
        said,
    );
    assert_eq!(
        ended,
        None,
        "the run ended while the broker was lost: {}",
        said()
    );
    (run, log)
}

/// Waits for `run` to end; how it ended.
fn ended(run: &mut ChildGuard, log: &Path) -> std::process::ExitStatus {
    let said = || std::fs::read_to_string(log).unwrap_or_default();
    let mut ended = None;
    wait_until_or_show(
        "the run to end",
        || {
            ended = run.0.try_wait().expect("waits");
            ended.is_some()
        },
        said,
    );
    ended.expect("it ended")
}

/// Stops `run` with SIGTERM while its sink cannot commit; asserts that it ends as a stop
/// (exit 143) whose last line names the rows the sink could not commit; what it said.
fn stopped_with_rows_uncommitted(run: &mut ChildGuard, log: &Path) -> String {
    let status = Command::new("kill")
        .args(["-TERM", &run.pid().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    ended_with_rows_uncommitted(run, log, 143)
}

/// Asserts that `run` ends as a stop, with exit status `code`, whose last line names the
/// rows the sink could not commit; what it said.
fn ended_with_rows_uncommitted(run: &mut ChildGuard, log: &Path, code: i32) -> String {
    let status = ended(run, log);
    let said = std::fs::read_to_string(log).unwrap_or_default();
    assert_eq!(status.code(), Some(code), "a stop: {said}");
    assert!(!said.contains("finished in"), "{said}");
    assert!(said.contains("stopped after"), "{said}");
    // Its last line says so too (it once said everything read was written).
    assert!(
        said.contains("but not all of it written") && said.contains("could not commit"),
        "{said}"
    );
    assert!(!said.contains("processed and written"), "{said}");
    said
}

/// Waits for `run`, run again once the broker is back, to end well; asserts that `out` then
/// holds the rows of the run without faults, once each.
fn writes_every_row_once(cluster: &Cluster, run: &mut ChildGuard, log: &Path, expected: &[String]) {
    let status = ended(run, log);
    let said = std::fs::read_to_string(log).unwrap_or_default();
    assert!(status.success(), "{said}");
    let got = committed(cluster);
    assert_eq!(
        got.len(),
        expected.len(),
        "rows lost or written twice: {said}"
    );
    assert_eq!(got, expected);
}

/// What `out` holds, as a `read_committed` consumer reads it, sorted.
fn committed(cluster: &Cluster) -> Vec<String> {
    let mut got = cluster.read_committed("out");
    got.sort();
    got
}

#[test]
fn a_kafka_broker_lost_while_an_exactly_once_query_runs_stalls_it_and_every_row_is_written_once_when_it_is_back(
) {
    let (cluster, dir, servers, expected) = prepared();
    let (mut run, log) = lost_while_running(&cluster, dir.path(), &servers);
    cluster.up();
    let status = ended(&mut run, &log);
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        status.success(),
        "the run goes on once the broker is back: {said}"
    );
    assert!(said.contains("the Kafka broker answers again"), "{said}");
    let got = committed(&cluster);
    assert_eq!(got.len(), expected.len(), "{said}");
    assert_eq!(got, expected);
}

#[test]
fn a_stop_while_the_broker_is_lost_ends_the_run_as_a_stop_and_the_resumed_run_writes_every_row_once(
) {
    let (cluster, dir, servers, expected) = prepared();
    let (mut run, log) = lost_while_running(&cluster, dir.path(), &servers);
    let said = stopped_with_rows_uncommitted(&mut run, &log);
    assert!(
        said.contains("not committed: the run stops while the Kafka broker is lost"),
        "{said}"
    );

    cluster.up();
    let log = dir.path().join("resumed.log");
    let mut resumed = slow_run(dir.path(), &servers, &log);
    writes_every_row_once(&cluster, &mut resumed, &log, &expected);
}

/// probe48 H1: a stop that comes after the input ended, while the commit of the last
/// checkpoint waits for a lost broker, is a stop too. The run said "finished" and exited 0
/// with none of its rows in the topic.
#[test]
fn a_stop_after_the_input_ended_while_the_last_commit_waits_for_the_broker_is_a_stop_not_a_finish()
{
    let (cluster, dir, servers, expected) = prepared();
    let (mut run, log) = waiting_for_the_last_commit(&cluster, dir.path(), &servers);
    stopped_with_rows_uncommitted(&mut run, &log);
    again_writes_every_row_once(&cluster, dir.path(), &servers, &expected);
}

/// probe49: the same stop asked through the API (`anduin ctl stop`) said "finished", then
/// failed the run. It is a stop as well (exit 0, as for any stop through the API).
#[test]
fn a_stop_through_the_api_after_the_input_ended_while_the_last_commit_waits_is_a_stop_too() {
    let (cluster, dir, servers, expected) = prepared();
    let (mut run, log) = waiting_for_the_last_commit(&cluster, dir.path(), &servers);
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    let api = said
        .lines()
        .find_map(|l| l.trim().strip_prefix("api: http://"))
        .expect("the run serves its API")
        .to_string();
    let stopped = common::ctl(dir.path(), &api, &["stop", "brisk"]);
    assert!(stopped.status.success(), "{stopped:?}");
    let said = ended_with_rows_uncommitted(&mut run, &log, 0);
    assert!(said.contains("stopped through the API"), "{said}");
    again_writes_every_row_once(&cluster, dir.path(), &servers, &expected);
}

/// `brisk.flow` run again once the broker is back: it commits what its last checkpoint
/// holds, once.
fn again_writes_every_row_once(cluster: &Cluster, dir: &Path, servers: &str, expected: &[String]) {
    cluster.up();
    let log = dir.join("again.log");
    let mut again = run_of(dir, "brisk.flow", "1h", servers, &log);
    writes_every_row_once(cluster, &mut again, &log, expected);
}
