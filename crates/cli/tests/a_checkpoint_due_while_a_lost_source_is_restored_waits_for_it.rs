//! Checkpoints come every 50 ms, and the worker running the query's source is killed with
//! SIGKILL: its instances are restored alone on a live worker, which takes a few hundred
//! milliseconds. A checkpoint that fell due meanwhile must wait for the restored source: its
//! barrier, sent to the dead executor, would be lost, and that checkpoint — and every one
//! after it, since one runs at a time — would never complete (found as a hang of the
//! worker-kill tests under load). The query finishes at its first attempt with the output of
//! an uninterrupted embedded run.

use crate::common;

use common::cluster::{tumbling_generator, worker_of_the_source, PerTask};

#[test]
fn a_checkpoint_due_while_a_lost_source_is_restored_waits_for_it() {
    let mut t = PerTask::start(&tumbling_generator(19, 200_000));
    let submit = t.submit(&["--no-chaining", "--checkpoint-interval", "50ms"]);
    let victim = worker_of_the_source(&t.cluster);
    t.kill_mid_run(victim, 2);
    let log = t.assert_same_output_at_attempt_1(submit);
    assert!(
        log.contains("instances restored; no other task was restarted"),
        "{log}"
    );
}
