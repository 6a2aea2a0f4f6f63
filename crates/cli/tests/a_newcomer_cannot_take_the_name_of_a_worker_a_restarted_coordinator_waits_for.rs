//! A restarted coordinator waits, for one heartbeat timeout, for the workers its catalog knows:
//! their executors still run the query's parts. A new worker that registers first under the
//! name of one of them used to be taken, and the returning worker, whose parts those are, was
//! refused as a duplicate name and stopped. The name now stays reserved until its worker is
//! back or declared dead: the newcomer is refused, saying why and what to do, and the
//! returning worker takes its parts back, the query finishing at its first attempt with the
//! output of an uninterrupted embedded run. The returning worker is held back with SIGSTOP
//! (not by timing) until the newcomer has been answered.

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
    t.cluster.restart_coordinator();
    let other_dir = t.cluster.dir.path().join("newcomer");
    let mut newcomer = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_anduin"))
            .args(["worker", "--coordinator", &t.cluster.addr, "--name", "w0"])
            .arg("--work-dir")
            .arg(&other_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("a worker starts"),
    );
    wait_until("the newcomer to be answered", || {
        newcomer.0.try_wait().is_ok_and(|s| s.is_some())
    });
    let out = newcomer.wait_output();
    let why = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{why}");
    assert!(
        why.contains("a worker named w0")
            && why.contains("may come back until it is declared dead")
            && why.contains("give this one another --name"),
        "{why}"
    );
    signal(w0, libc::SIGCONT);
    let log = t.assert_same_output_at_attempt_1(submit);
    assert!(!log.contains("restoring"), "{log}");
}
