//! A restarted coordinator waits, for one heartbeat timeout, for the workers its catalog knows:
//! their executors still run the query's parts. A new worker that registers first under the
//! name of one of them used to be taken, and the returning worker, whose parts those are, was
//! refused as a duplicate name and stopped. The name now stays reserved until its worker is
//! back or declared dead: the newcomer waits, saying why and what to do (it may be that
//! worker, restarted: it would register once the name is free), and the returning worker
//! takes its parts back, the query finishing at its first attempt with the output of an
//! uninterrupted embedded run; the newcomer, refused then for a live worker's name, exits.
//! The returning worker is held back with SIGSTOP (not by timing) until the newcomer has
//! been answered, and refused again: the coordinator says the refusal of a held name once,
//! not at every try.

use std::process::{Command, Stdio};

use crate::common;

use common::cluster::{signal, tumbling_generator, PerTask};
use common::{wait_until, ChildGuard};

#[test]
fn a_newcomer_cannot_take_the_name_of_a_worker_a_restarted_coordinator_waits_for() {
    // A long heartbeat timeout: the newcomer is answered well before w0 may be declared dead.
    let mut t = PerTask::start_with(
        &tumbling_generator(49, 60_000),
        &["--heartbeat-timeout", "60s"],
    );
    let submit = t.submit(&["--no-chaining"]);
    let w0 = t.cluster.workers[0].pid();
    signal(w0, libc::SIGSTOP);
    t.cluster.setup.env.push((
        "RUST_LOG".into(),
        "anduin::cluster::coordinator=debug".into(),
    ));
    t.cluster.restart_coordinator();
    let other_dir = t.cluster.dir.path().join("newcomer");
    let newcomer_log = t.cluster.dir.path().join("newcomer.log");
    let mut newcomer = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["worker", "--coordinator", &t.cluster.addr, "--name", "w0"])
            .arg("--work-dir")
            .arg(&other_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&newcomer_log).expect("a log file"))
            .spawn()
            .expect("a worker starts"),
    );
    let said = || std::fs::read_to_string(&newcomer_log).unwrap_or_default();
    wait_until("the newcomer to be answered", || {
        said().contains("waits: the coordinator refused: the name is held")
    });
    let why = said();
    assert!(
        why.contains("a worker named w0")
            && why.contains("may come back until it is declared dead")
            && why.contains("another --name"),
        "{why}"
    );
    assert!(
        newcomer.0.try_wait().expect("its status").is_none(),
        "it waits: {why}"
    );
    wait_until("the newcomer refused again", || {
        t.cluster
            .coordinator_log()
            .contains("refused a held name again")
    });
    let log = t.cluster.coordinator_log();
    assert_eq!(
        log.matches("refused worker w0: the name is held").count(),
        1,
        "said once: {log}"
    );
    signal(w0, libc::SIGCONT);
    let mut ended = None;
    wait_until("the newcomer refused for a live worker's name", || {
        ended = newcomer.0.try_wait().expect("its status");
        ended.is_some()
    });
    assert!(!ended.expect("read above").success(), "{}", said());
    assert!(said().contains("a live worker named w0"), "{}", said());
    let log = t.assert_same_output_at_attempt_1(submit);
    assert!(!log.contains("restoring"), "{log}");
}
