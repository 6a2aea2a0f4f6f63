//! `anduin cancel` is recorded in the coordinator's catalog before it is answered: a
//! coordinator that dies right after answering (told to by a testing flag, before anything
//! acts on the cancel) leaves it to the next, which takes the query over and cancels it. It
//! once ran the query to its end: the cancel had only been held in memory.

use crate::common;

use common::cluster::{paced_filter, LocalCluster, Setup};
use common::{anduin, wait_until};

#[test]
fn a_cancel_answered_just_before_its_coordinator_died_is_carried_out_by_the_next() {
    let work = tempfile::tempdir().expect("tempdir");
    let d = work.path();
    // 90 000 rows at 3 000 a second: half a minute, far longer than the test needs.
    std::fs::write(d.join("q.flow"), paced_filter(90_000)).expect("query");
    let mut cluster = LocalCluster::start_with(
        2,
        8,
        Setup {
            coordinator_flags: vec!["--inject-exit-after".into(), "cancel-answered".into()],
            ..Setup::default()
        },
    );
    let submit = cluster.submit(
        d,
        "q.flow",
        &["--var", "OUTPUT=out", "--checkpoint-every", "2000"],
    );
    wait_until("the first checkpoint", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });
    let cancel = anduin(d, &["cancel", "q", "--coordinator", &cluster.addr]);
    assert!(
        cancel.status.success(),
        "the cancel is answered: {}",
        String::from_utf8_lossy(&cancel.stderr)
    );
    wait_until("the coordinator gone", || {
        cluster
            .coordinator_log()
            .contains("exiting after CancelAnswered")
    });
    cluster.restart_coordinator();
    let out = submit.wait_output();
    let logs = cluster.logs();
    assert!(
        !out.status.success(),
        "a cancelled query's submission fails\n{logs}"
    );
    let status = cluster.status("q");
    assert_eq!(status["state"], "cancelled", "{status}\n{logs}");
}
