//! From a hostile probe: four workers, a windowed query over all of them. One worker is
//! paused (its heartbeats stop, but within a long `--heartbeat-timeout` it is not declared
//! dead) and two others are killed at once: their two parts are restored on the two workers
//! left, one of them the paused one. It is killed too while the restore waits for it: the
//! whole query rolls back, its next attempt running every instance on the one live worker.
//! The query's life must then know where every task runs: it once still had tasks on the
//! worker that died during the restore (the failure it heard of named another), so that when
//! the last worker died in its turn, with three fresh workers back, the restore of its tasks
//! was refused by the life, the query stayed `recovering` for ever and `submit --wait` never
//! returned. Now the loss is restored and the output equals an uninterrupted run's.

use crate::common;

use common::cluster::{signal, windowed_reference, LocalCluster, Setup};
use common::{output_rows, wait_until};

#[test]
fn a_restore_whose_host_dies_rolls_back_and_a_later_loss_is_still_restored() {
    let work = tempfile::tempdir().expect("tempdir");
    let expected = windowed_reference(work.path(), 7, 150_000, 5_000);
    let mut cluster = LocalCluster::start_with(
        4,
        8,
        Setup {
            coordinator_flags: vec!["--heartbeat-timeout".into(), "60s".into()],
            ..Setup::default()
        },
    );
    let submit = cluster.submit(
        work.path(),
        "q.flow",
        &[
            "--var",
            "OUTPUT=out",
            "--parallelism",
            "3",
            "--checkpoint-every",
            "4000",
        ],
    );
    wait_until("a first checkpoint", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|c| c >= 1)
    });
    // w2 paused (alive to the coordinator), w0 and w1 killed: their parts go to w2 and w3.
    // Killed together while the coordinator is paused, so that it finds both gone at once
    // and restores both parts together.
    signal(cluster.coordinator.pid(), libc::SIGSTOP);
    signal(cluster.workers[2].pid(), libc::SIGSTOP);
    for w in [0, 1] {
        signal(cluster.workers[w].pid(), libc::SIGKILL);
    }
    for w in [0, 1] {
        let _ = cluster.workers[w].0.wait();
    }
    signal(cluster.coordinator.pid(), libc::SIGCONT);
    wait_until("the lost parts being restored", || {
        cluster
            .coordinator_log()
            .contains("restoring the instances of worker")
    });
    // The paused host dies before its restored part could start: the whole query rolls back
    // (had the coordinator restored the parts one by one, each goes to w3 in turn). Either
    // way every instance runs on w3 alone.
    let _ = cluster.workers[2].0.kill();
    let _ = cluster.workers[2].0.wait();
    wait_until("every instance on w3", || {
        let placement = &cluster.status("q")["placement"];
        placement.as_object().is_some_and(|p| p.len() == 1) && placement["w3"].as_u64() > Some(0)
    });
    for w in ["w0", "w1", "w2"] {
        cluster.add_worker(w, 8);
    }
    wait_until("four workers", || cluster.workers_joined() >= 4);
    let now = cluster.status("q")["last_checkpoint"].as_u64().unwrap_or(0);
    wait_until("a checkpoint of the second attempt", || {
        let s = cluster.status("q");
        s["last_checkpoint"].as_u64().is_some_and(|c| c > now) || s["state"] == "finished"
    });
    // The last worker of the first ones dies: its tasks — every task — are restored.
    let _ = cluster.workers[3].0.kill();
    let _ = cluster.workers[3].0.wait();

    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", cluster.logs());
    let status = cluster.status("q");
    assert_eq!(status["state"], "finished", "{status}");
    let got = output_rows(&work.path().join("out"));
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated");
    assert!(
        got == expected,
        "the output differs from the uninterrupted run"
    );
}
