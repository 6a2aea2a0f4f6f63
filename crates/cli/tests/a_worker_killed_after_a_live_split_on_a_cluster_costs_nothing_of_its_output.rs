//! A live split on a cluster, then SIGKILL (issue 15): the query of
//! `a_chain_split_on_a_cluster_while_it_runs_writes_what_an_unsplit_run_writes` is split twice
//! while it runs, a checkpoint after the splits completes (it waits for the new tasks'
//! shares), and the worker that runs the source — with the filter, the map split off it, and
//! one instance of the window and of the `late` split off it — is killed. Its part is
//! restored on the other worker from that checkpoint (per-task recovery: the query stays at
//! its first attempt): the restored executor plans the splits the checkpoint recorded with
//! the numbers the live splits gave, so that the coordinator, the running executor and the
//! restored one agree on every task instance. The output is the rows of an uninterrupted
//! embedded run.

use crate::a_chain_split_on_a_cluster_while_it_runs_writes_what_an_unsplit_run_writes::SplitOnCluster;
use crate::common;

use anduin_runtime::control::QueryState;
use common::cluster::{kill_worker_after, worker_of_the_source, Setup};
use common::wait_until;

#[test]
fn a_worker_killed_after_a_live_split_on_a_cluster_costs_nothing_of_its_output() {
    // The executors say what they plan (`anduin_runtime` at `info`).
    let setup = Setup {
        worker_env: vec![("RUST_LOG".into(), "anduin_runtime=info".into())],
        ..Setup::default()
    };
    let mut s = SplitOnCluster::start(setup);
    let victim = worker_of_the_source(&s.cluster);
    let after = s.split_at + 1;
    assert!(
        kill_worker_after(&mut s.cluster, "q", victim, after),
        "the kill must come mid-run"
    );
    let logs = s.finish();
    let status = s.cluster.status("q");
    assert_eq!(
        status["attempt"], 1,
        "restored alone, not rolled back as a whole: {status}\n{logs}"
    );
    // The part restored on the other worker planned both splits, with the live numbers.
    let host = 1 - victim;
    let log = std::fs::read_to_string(s.cluster.dir.path().join(format!("w{host}.log")))
        .expect("the surviving worker's log");
    let planned = log
        .lines()
        .find(|l| l.contains("plans the splits its checkpoint recorded"))
        .unwrap_or_else(|| panic!("the restored part planned no split\n{logs}"));
    assert!(planned.contains(r#"["late", "m"]"#), "{planned}");
}

/// With per-task recovery off, the query rolls back as a whole to that checkpoint: every
/// executor of the new attempt, and the coordinator, plan the splits it recorded with the
/// same numbers, and the output is still exact.
#[test]
fn a_query_split_on_a_cluster_rolled_back_as_a_whole_keeps_its_splits_and_its_output() {
    let setup = Setup {
        coordinator_flags: vec!["--no-per-task-recovery".into()],
        ..Setup::default()
    };
    let mut s = SplitOnCluster::start(setup);
    let victim = worker_of_the_source(&s.cluster);
    let after = s.split_at + 1;
    let client = anduin_api::Client::new(&s.api, None).expect("an address");
    let first = client.query("q").expect("the first attempt's").started_ms;
    assert!(
        kill_worker_after(&mut s.cluster, "q", victim, after),
        "the kill must come mid-run"
    );
    // The new attempt's control plane (the first's is served until it replaces it).
    wait_until("the new attempt runs and lists the split tasks", || {
        client.query("q").is_ok_and(|q| {
            if q.started_ms == first || q.state != QueryState::Running {
                return false;
            }
            let mut t: Vec<Vec<String>> = q
                .tasks
                .into_iter()
                .filter(|t| !t.operators.is_empty())
                .map(|t| t.operators)
                .collect();
            t.sort();
            t.contains(&vec!["late".to_string()]) && t.contains(&vec!["m".to_string()])
        })
    });
    assert!(
        s.cluster.status("q")["attempt"]
            .as_u64()
            .is_some_and(|a| a >= 2),
        "rolled back as a whole"
    );
    s.finish();
}

/// Checkpoints only on demand, and the one whose barrier carries the split of `late` fails
/// (injected): the last complete checkpoint is from before the split. The worker that does
/// not run the source is killed; its part — one instance of the window, from which `late`
/// was split — is restored alone from that checkpoint, unsplit, and splits again when the
/// replayed barrier that carried the change reaches it, numbering the new instance as the
/// live split did (task 3, instance 5 or 4). The output is still exact.
#[test]
fn a_part_restored_from_before_a_live_split_splits_again_at_the_replayed_barrier() {
    let setup = Setup {
        worker_env: vec![("RUST_LOG".into(), "anduin_runtime=info".into())],
        ..Setup::default()
    };
    // Checkpoint 1 asked for; the split's is 2.
    let mut s = SplitOnCluster::submitted(
        setup,
        &[
            "--checkpoint-interval",
            "1h",
            "--inject-checkpoint-failure",
            "2",
        ],
    );
    s.split("late");
    assert_eq!(
        s.split_at, 2,
        "the split rides on the second checkpoint's barrier"
    );
    let victim = 1 - worker_of_the_source(&s.cluster);
    let host = 1 - victim;
    let dir = s.cluster.dir.path().to_path_buf();
    let log = |w: usize| std::fs::read_to_string(dir.join(format!("w{w}.log"))).unwrap_or_default();
    // The victim split its instance of the window's task: which one, by its new number.
    let split_line = |text: &str| -> Option<String> {
        text.lines()
            .find(|l| {
                l.contains("split the chain before the operator") && l.contains("operator=late")
            })
            .map(str::to_string)
    };
    let mut first = None;
    wait_until("the victim's executor logged its split", || {
        first = split_line(&log(victim));
        first.is_some()
    });
    let first = first.expect("found above");
    let id = first
        .split_whitespace()
        .find(|f| f.starts_with("task="))
        .expect("the new instance's number")
        .to_string();
    assert_eq!(s.cluster.status("q")["last_checkpoint"], 1);
    assert!(
        kill_worker_after(&mut s.cluster, "q", victim, 1),
        "the kill must come mid-run"
    );
    // Restored on the other worker, from checkpoint 1: it splits again, under the same number.
    wait_until("the restored part split again", || {
        log(host)
            .lines()
            .any(|l| l.contains("split the chain before the operator") && l.contains(&id))
    });
    let logs = s.finish();
    let status = s.cluster.status("q");
    assert_eq!(
        status["attempt"], 1,
        "restored alone, not rolled back as a whole: {status}\n{logs}"
    );
}
