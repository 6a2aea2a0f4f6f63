//! An attempt can fail after its executors have started and reported: its checkpoint
//! coordinator may refuse the checkpoint to resume from. Whatever ends an attempt, its
//! executors must end with it.
//!
//! Found by a hostile probe: a query cancelled after a checkpoint and submitted again under
//! its name with one parameter changed (the name is free once the query is over) resumes from
//! the old query's checkpoint, which `anduin_runtime::coordinate` refuses ("param `rate`
//! changed … start over with --from-scratch", a flag `submit` does not take). driver.rs
//! `attempt` returns that error with `?` straight after `start_checkpointer`, without
//! `wind_down`: the attempt's executors, waiting for `Start`, are never cancelled. Ten attempts
//! later the query has failed and twenty executor processes wait for ever.

use crate::common;

use common::cluster::{children, running, LocalCluster};
use common::wait_until;

const SLOW: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 100000
  param rate = "${RATE}"
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "out", type = "writer" {
  input name = "events"
  param path = "${OUTPUT}"
}
"#;

fn state(cluster: &LocalCluster) -> String {
    cluster.status("q")["state"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn an_attempt_whose_checkpoints_cannot_start_leaves_no_executor_running() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(work.path().join("q.flow"), SLOW).expect("query");
    let cluster = LocalCluster::start(2, 4);
    let first = cluster.submit(
        work.path(),
        "q.flow",
        &[
            "--var",
            "RATE=2000",
            "--var",
            "OUTPUT=out",
            "--no-chaining",
            "--checkpoint-every",
            "1000",
        ],
    );
    wait_until("a first checkpoint", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });
    let cancel = common::anduin(
        work.path(),
        &["cancel", "q", "--coordinator", &cluster.addr],
    );
    assert!(cancel.status.success());
    wait_until("the query cancelled", || state(&cluster) == "cancelled");
    drop(first.wait_output());

    // The name again, one parameter changed: the old checkpoint cannot be resumed.
    let second = cluster
        .submit(
            work.path(),
            "q.flow",
            &[
                "--var",
                "RATE=3000",
                "--var",
                "OUTPUT=out",
                "--no-chaining",
                "--checkpoint-every",
                "1000",
            ],
        )
        .wait_output();
    let stderr = String::from_utf8_lossy(&second.stderr).to_string();
    assert!(
        matches!(state(&cluster).as_str(), "finished" | "failed"),
        "{stderr}"
    );
    let workers: Vec<u32> = cluster.workers.iter().map(|w| w.pid()).collect();
    let mut left = Vec::new();
    // The coordinator has given the query up: what its attempts started ends (a bounded wait
    // for the workers to reap their killed executors).
    let ended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_until("every executor of the query to end", || {
            left = workers
                .iter()
                .flat_map(|w| children(*w).into_iter().filter(|p| running(*p)))
                .collect();
            left.is_empty()
        })
    }));
    assert!(
        ended.is_ok(),
        "{} executor processes still run after the query {}: {left:?}\n{stderr}",
        left.len(),
        state(&cluster)
    );
}
