//! The control plane through the coordinator: `anduin ctl --api COORDINATOR_API` sets a
//! filter's condition while the query runs on two workers. The change is checked by the
//! coordinator (a condition that does not parse is refused, with its position), goes on the
//! next barrier to the executors, and applies at the epoch `ctl` reports: the output is
//! exactly the rows generated before that checkpoint filtered by the old condition and the
//! rest by the new one. `ctl history` lists the change.

use crate::common;

use std::process::Command;

use anduin_checkpoint::Store;
use common::cluster::{all_generated, paced_filter, LocalCluster};
use common::{ctl, output_rows, stdout_ok, wait_until};

#[test]
fn ctl_changes_a_query_running_on_the_cluster_through_the_coordinator() {
    let work = tempfile::tempdir().expect("tempdir");
    let d = work.path();
    std::fs::write(d.join("q.flow"), paced_filter(30_000)).expect("query");
    std::fs::write(d.join("all.flow"), all_generated(30_000)).expect("query");
    let cluster = LocalCluster::start(2, 8);
    let api = std::fs::read_to_string(cluster.dir.path().join("coordinator/api.url"))
        .expect("the coordinator wrote its API's URL");
    let submit = cluster.submit(
        d,
        "q.flow",
        &[
            "--var",
            "OUTPUT=out",
            "--no-chaining",
            "--checkpoint-interval",
            "300ms",
            "--checkpoint-keep",
            "1000",
        ],
    );
    wait_until("the query runs with a checkpoint", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });

    let bad = ctl(d, &api, &["set", "q", "low", "condition", "value <"]);
    assert_ne!(bad.status.code(), Some(0));
    let message = String::from_utf8_lossy(&bad.stderr);
    assert!(message.contains("low.condition:1:"), "{message}");

    let applied = stdout_ok(&ctl(
        d,
        &api,
        &["set", "q", "low", "condition", "value >= 42"],
    ));
    let epoch: u64 = applied
        .split("applied at epoch ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|e| e.parse().ok())
        .unwrap_or_else(|| panic!("an epoch in {applied:?}"));
    let history = stdout_ok(&ctl(d, &api, &["history", "q"]));
    assert!(history.contains("value >= 42"), "{history}");

    let out = submit.wait_output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest = Store::open(cluster.checkpoints("q"))
        .expect("opens")
        .manifest(anduin_types::Epoch(epoch))
        .expect("reads")
        .unwrap_or_else(|| panic!("checkpoint {epoch} is complete"));
    let switch = manifest.operators["gen"]
        .inline
        .as_ref()
        .expect("a position")["produced"]
        .as_u64()
        .expect("a count") as usize;
    assert!(switch > 0 && switch < 30000, "switch at {switch}");

    let all = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(["run", "all.flow", "-q", "--no-api"])
        .current_dir(d)
        .output()
        .expect("runs");
    assert!(
        all.status.success(),
        "{}",
        String::from_utf8_lossy(&all.stderr)
    );
    let every = common::rows_in_order(&d.join("all.csv"));
    assert_eq!(every.len(), 30000);
    let value = |l: &str| -> i64 {
        l.rsplit(',')
            .next()
            .and_then(|v| v.parse().ok())
            .expect("a value")
    };
    let mut expected: Vec<String> = every
        .iter()
        .enumerate()
        .filter(|(i, l)| {
            if *i < switch {
                value(l) < 42
            } else {
                value(l) >= 42
            }
        })
        .map(|(_, l)| l.clone())
        .collect();
    expected.sort();
    assert!(
        output_rows(&d.join("out")) == expected,
        "the output is not the rows before epoch {epoch} (at row {switch}) under the old condition and the rest under the new"
    );
}
