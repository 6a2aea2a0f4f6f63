//! Checkpoints come every 50 ms, and the worker running the query's source is killed with
//! SIGKILL: its instances are restored alone on a live worker, which takes a few hundred
//! milliseconds. A checkpoint that fell due meanwhile must wait for the restored source: its
//! barrier, sent to the dead executor, would be lost, and that checkpoint — and every one
//! after it, since one runs at a time — would never complete (found as a hang of the
//! worker-kill tests under load). The query finishes at its first attempt with the output of
//! an uninterrupted embedded run.

mod common;

use common::cluster::{tumbling_generator, LocalCluster, PerTask};
use common::wait_until;

/// The index in `cluster.workers` of the worker that runs instance `0#0` (the source) of query
/// `q`'s first attempt, read from the coordinator's catalog.
fn worker_of_the_source(cluster: &LocalCluster) -> usize {
    let catalog = cluster.dir.path().join("coordinator").join("catalog");
    let mut id = None;
    wait_until("the deployment in the catalog", || {
        let text: String = std::fs::read_dir(&catalog)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read(e.path()).ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .collect();
        id = text
            .split("\"attempt_deployed\"")
            .nth(1)
            .and_then(|d| d.split("\"0#0\":").nth(1))
            .map(|rest| {
                rest.chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
            })
            .and_then(|n| n.parse::<u64>().ok());
        id.is_some()
    });
    let workers = cluster.all()["workers"].clone();
    let name = workers
        .as_array()
        .and_then(|ws| ws.iter().find(|w| w["id"].as_u64() == id))
        .and_then(|w| w["name"].as_str())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no worker {id:?} in {workers}"));
    name.trim_start_matches('w')
        .parse()
        .unwrap_or_else(|_| panic!("a worker named {name}"))
}

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
