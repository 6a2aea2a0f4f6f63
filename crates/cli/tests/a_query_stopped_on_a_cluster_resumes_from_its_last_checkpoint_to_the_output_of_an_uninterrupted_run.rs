//! A clean stop on a cluster (Flink's `stop` with a savepoint): `anduin ctl stop q` against
//! the coordinator's API stops the sources of every executor, which take a last checkpoint
//! that is not the end of their input; the parts finish what they hold and end, `submit
//! --wait` exits 0, and the coordinator says at which checkpoint the query stopped. Submitted
//! again with `--resume`, the query goes on from that checkpoint and writes, in all, exactly
//! what an uninterrupted run writes. A second stop while it stops is refused, saying so. A
//! stop interrupted by a rollback as a whole (a worker lost before the last checkpoint) is
//! carried out by the next attempt as soon as it runs.

use crate::a_killed_run_resumes_to_the_output_of_an_uninterrupted_one::WINDOWED;
use crate::common;

use common::cluster::{assert_submitted_output, LocalCluster, Setup};
use common::{anduin_ok, ctl, output_rows, stdout_ok, wait_until, wait_until_or_show};

#[test]
fn a_query_stopped_on_a_cluster_resumes_from_its_last_checkpoint_to_the_output_of_an_uninterrupted_run(
) {
    stop_and_resume(false);
}

/// The executors of `w1` are paused (its sources cannot take the stop's last checkpoint),
/// `ctl stop` is accepted, then `w1` is killed: without per-task recovery the query rolls
/// back as a whole, and the new attempt (on `w0` alone) stops as soon as it runs.
#[test]
fn a_stop_interrupted_by_a_rollback_is_carried_out_by_the_next_attempt() {
    stop_and_resume(true);
}

fn stop_and_resume(interrupted: bool) {
    let mut cluster = LocalCluster::start_with(
        2,
        8,
        Setup {
            coordinator_flags: if interrupted {
                vec!["--no-per-task-recovery".to_string()]
            } else {
                Vec::new()
            },
            ..Setup::default()
        },
    );
    let work = cluster.dir.path().to_path_buf();
    let d = work.as_path();
    std::fs::write(d.join("ref.flow"), WINDOWED).expect("query");
    anduin_ok(d, &["run", "ref.flow", "--var", "OUTPUT=reference.csv"]);
    let expected = output_rows(&d.join("reference.csv"));
    assert!(expected.len() > 10_000, "the query produces enough rows");
    // Slow: 60000 rows at 2000 a second would take 30 s; the stop comes well before.
    let slow = WINDOWED.replace("param rate = 40000", "param rate = 2000");
    std::fs::write(d.join("q.flow"), &slow).expect("query");
    let flags = [
        "--var",
        "OUTPUT=out",
        "--parallelism",
        "2",
        "--checkpoint-interval",
        "300ms",
    ];
    let submit = cluster.submit(d, "q.flow", &flags);
    wait_until("a checkpoint", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 2)
    });
    let api = cluster.api();
    let paused: Vec<u32> = if interrupted {
        common::cluster::children(cluster.workers[1].pid())
    } else {
        Vec::new()
    };
    for pid in &paused {
        common::cluster::signal(*pid, libc::SIGSTOP);
    }
    stdout_ok(&ctl(d, &api, &["stop", "q"]));
    let again = ctl(d, &api, &["stop", "q"]);
    if again.status.code() != Some(0) {
        let why = String::from_utf8_lossy(&again.stderr);
        assert!(
            why.contains("stopping") || why.contains("finished"),
            "a second stop says why it is refused: {why}"
        );
    }
    if interrupted {
        assert!(!paused.is_empty(), "w1 runs an executor");
        let _ = cluster.workers[1].0.kill();
        let _ = cluster.workers[1].0.wait();
        for pid in &paused {
            common::cluster::signal(*pid, libc::SIGKILL);
        }
    }
    let done = submit.wait_output();
    let logs = cluster.logs();
    assert!(
        done.status.success(),
        "{}\n{logs}",
        String::from_utf8_lossy(&done.stderr)
    );
    if interrupted {
        // Said by the thread that asked the next attempt to stop, once the stop was asked:
        // the query's end may come first (the coordinator runs on).
        wait_until_or_show(
            "the coordinator saying that the next attempt stops",
            || {
                cluster
                    .coordinator_log()
                    .contains("attempt 2: stopping again")
            },
            || cluster.logs(),
        );
    }
    let log = cluster.coordinator_log();
    let at: u64 = log
        .split("query q stopped at checkpoint ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|e| e.trim().parse().ok())
        .unwrap_or_else(|| panic!("the coordinator says where it stopped\n{log}"));
    let store = anduin_checkpoint::Store::open(cluster.checkpoints("q")).expect("opens");
    let manifest = store
        .manifest(anduin_types::Epoch(at))
        .expect("reads")
        .unwrap_or_else(|| panic!("checkpoint {at} is complete"));
    assert!(!manifest.finished, "a stop is not the end of the input");
    let so_far = output_rows(&d.join("out"));
    assert!(
        !so_far.is_empty() && so_far.len() < expected.len(),
        "stopped mid-run: {} of {} rows",
        so_far.len(),
        expected.len()
    );
    if !interrupted {
        // A coordinator restarted since still serves the ended query, with its state.
        cluster.restart_coordinator();
        let client = anduin_api::Client::new(&cluster.api(), None).expect("an address");
        wait_until("the restarted coordinator's API", || {
            client.queries().is_ok()
        });
        let info = client.query("q").expect("the ended query is served");
        assert_eq!(info.state, anduin_runtime::control::QueryState::Finished);
    }
    // The rest from that checkpoint (the same query: a changed param is refused), at full
    // speed once it runs.
    let resume = [&flags[..], &["--resume"]].concat();
    let submit = cluster.submit(d, "q.flow", &resume);
    wait_until("the resumed query takes a faster rate", || {
        ctl(d, &cluster.api(), &["set", "q", "gen", "rate", "1000000"])
            .status
            .success()
    });
    assert_submitted_output(&cluster, submit, &d.join("out"), &expected);
    assert!(
        cluster
            .coordinator_log()
            .contains(&format!("query q resumes from checkpoint {at}")),
        "{}",
        cluster.coordinator_log()
    );
}
