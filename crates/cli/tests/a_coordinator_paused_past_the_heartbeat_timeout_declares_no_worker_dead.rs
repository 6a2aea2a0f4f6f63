//! A coordinator that does not run for longer than the heartbeat timeout (paused with SIGSTOP
//! here; a starved host or a frozen VM alike) must not blame its workers when it resumes:
//! their heartbeats of that time wait unread in its sockets. It gives each a whole timeout
//! again, declares none dead, restores nothing, and the query ends at its first attempt with
//! the output of an uninterrupted embedded run. (Found by a hostile probe: after 8 s of pause
//! all three workers were declared dead and the query rolled back as a whole.)

use crate::common;

use common::cluster::{signal, tumbling_generator, PerTask};

#[test]
fn a_coordinator_paused_past_the_heartbeat_timeout_declares_no_worker_dead() {
    let t = PerTask::start_with(
        &tumbling_generator(23, 120_000),
        &["--heartbeat-timeout", "2s"],
    );
    let submit = t.submit(&["--no-chaining"]);
    let coordinator = t.cluster.coordinator.pid();
    signal(coordinator, libc::SIGSTOP);
    // The fault lasts twice the heartbeat timeout (its length, not a synchronisation).
    std::thread::sleep(std::time::Duration::from_secs(4));
    signal(coordinator, libc::SIGCONT);
    let log = t.assert_same_output_at_attempt_1(submit);
    assert!(!log.contains("declared dead"), "{log}");
    assert!(!log.contains("restoring the instances"), "{log}");
}
