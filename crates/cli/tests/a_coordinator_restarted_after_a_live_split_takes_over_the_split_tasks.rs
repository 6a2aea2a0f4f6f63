//! A live split and its coordinator's restart (issue 15): on a two-worker cluster `late` is
//! split from its window while the query runs (`ctl set q late pipeline split`), then the
//! coordinator is killed and started again on the same address and state.
//!
//! - Killed with SIGKILL once a checkpoint covers the split: the restarted coordinator takes
//!   the split instances over with the rest (the query stays at attempt 1): its listing shows
//!   the split task under the same numbers, a checkpoint of its own waits for the split
//!   instances' shares and completes, and a second split asked of it (`m` from the filter) is
//!   numbered after the first, as the executors number it.
//! - Exiting the moment it recorded the change in its catalog (`--inject-exit-after
//!   parameter-recorded`), before any checkpoint covered the split: as for any rescale no
//!   checkpoint covers, the restarted coordinator rolls the query back as a whole, undoing
//!   the split (it cannot know whether every executor split); the split asked again of it is
//!   numbered as the first time, and `m`'s after it.
//!
//! The output is the rows of an uninterrupted embedded run.

use crate::a_chain_split_on_a_cluster_while_it_runs_writes_what_an_unsplit_run_writes::SplitOnCluster;
use crate::a_chain_split_while_it_runs_writes_what_an_unsplit_run_writes::tasks;
use crate::common;

use common::cluster::Setup;
use common::{ctl, wait_until, wait_until_or_show};

/// The task headed by `head` in the coordinator's topology: its number, and its instances'
/// (instance, number).
fn numbers(client: &anduin_api::Client, head: &str) -> Option<(usize, Vec<(usize, usize)>)> {
    let topology = client.topology("q").ok()?;
    let task = topology
        .tasks
        .iter()
        .find(|t| t.operators.first().is_some_and(|o| o == head))?;
    let mut ids: Vec<(usize, usize)> = task.instances.iter().map(|i| (i.instance, i.id)).collect();
    ids.sort_unstable();
    Some((task.id, ids))
}

/// `late`'s task and instances, numbered from the plan (tasks 0 to 2, instances 0 to 3).
fn late_numbers() -> Option<(usize, Vec<(usize, usize)>)> {
    Some((3, vec![(0, 4), (1, 5)]))
}

fn scenario(exit_once_recorded: bool) {
    let setup = Setup {
        coordinator_flags: if exit_once_recorded {
            vec!["--inject-exit-after".into(), "parameter-recorded".into()]
        } else {
            Vec::new()
        },
        ..Setup::default()
    };
    let mut s = SplitOnCluster::submitted(setup, &["--checkpoint-interval", "300ms"]);
    if exit_once_recorded {
        // The coordinator exits once the change is in its catalog: `ctl` gets no answer.
        let _ = ctl(s.dir(), &s.api, &["set", "q", "late", "pipeline", "split"]);
        wait_until(
            "the coordinator to exit once the split is in its catalog",
            || matches!(s.cluster.coordinator.0.try_wait(), Ok(Some(_))),
        );
        s.cluster.setup.coordinator_flags.clear();
    } else {
        s.split("late");
        let client = anduin_api::Client::new(&s.api, None).expect("an address");
        assert_eq!(numbers(&client, "late"), late_numbers());
        let covered = s.split_at;
        wait_until("a checkpoint covering the split", || {
            s.cluster.status("q")["last_checkpoint"]
                .as_u64()
                .is_some_and(|e| e >= covered)
        });
    }
    let before = s.cluster.status("q")["last_checkpoint"].as_u64();

    s.cluster.restart_coordinator();
    s.api = s.cluster.api();
    let client = anduin_api::Client::new(&s.api, None).expect("an address");
    let attempt = if exit_once_recorded {
        wait_until_or_show(
            "the restarted coordinator's second attempt, without the split",
            || {
                s.cluster.status("q")["attempt"] == 2
                    && client.query("q").is_ok_and(|q| {
                        q.tasks
                            .iter()
                            .any(|t| t.operators == ["w".to_string(), "late".to_string()])
                    })
            },
            || s.cluster.logs(),
        );
        assert!(
            s.cluster
                .coordinator_log()
                .contains("undoes the change of late.pipeline to \"split\""),
            "{}",
            s.cluster.logs()
        );
        s.split("late");
        2
    } else {
        1
    };
    wait_until_or_show(
        "the split in the restarted coordinator's topology",
        || numbers(&client, "late") == late_numbers(),
        || format!("{:?}\n{}", client.topology("q"), s.cluster.logs()),
    );
    // A checkpoint of the restarted coordinator: every instance, the split ones too, gave
    // their share to it.
    let mut taken_over = None;
    wait_until_or_show(
        "the restarted coordinator's status of the query",
        || {
            taken_over = s.cluster.status("q")["last_checkpoint"].as_u64();
            taken_over.is_some()
        },
        || s.cluster.logs(),
    );
    let after = taken_over.max(before).expect("read above") + 1;
    wait_until_or_show(
        "a checkpoint completed by the restarted coordinator after the split",
        || {
            s.cluster.status("q")["last_checkpoint"]
                .as_u64()
                .is_some_and(|e| e >= after)
        },
        || s.cluster.logs(),
    );
    assert_eq!(
        s.cluster.status("q")["attempt"],
        attempt,
        "taken over (or rolled back once)\n{}",
        s.cluster.logs()
    );
    let mut listed = tasks(&client);
    listed.retain(|t| t.first().is_some_and(|o| o == "late"));
    assert_eq!(
        listed,
        [["late".to_string()]],
        "the listing shows the split"
    );

    // A second split, asked of the restarted coordinator, comes after the first.
    s.split("m");
    assert_eq!(
        numbers(&client, "m"),
        Some((4, vec![(0, 6)])),
        "numbered after `late`"
    );
    let logs = s.finish();
    // The whole log: `logs` keeps each process's last lines only.
    assert!(
        exit_once_recorded || s.cluster.coordinator_log().contains("taken over"),
        "the restarted coordinator took the query over\n{logs}"
    );
}

#[test]
fn a_coordinator_restarted_after_a_live_split_takes_over_the_split_tasks() {
    scenario(false);
}

#[test]
fn a_coordinator_restarted_after_a_live_split_no_checkpoint_covers_rolls_it_back_and_splits_again()
{
    scenario(true);
}
