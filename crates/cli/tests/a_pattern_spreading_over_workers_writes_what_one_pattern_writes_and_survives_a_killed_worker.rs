//! A pattern that spreads its partial matches over copies (`overflow_instances = 3`) on a
//! cluster of four workers of two slots each: the copies run on at least two workers, so
//! partial matches cross processes (over the data plane, at the same handoff points as in one
//! process). The output is one pattern's; a worker killed with SIGKILL after a checkpoint
//! costs nothing: a copy is restored only with the copies it hands to and takes from (the
//! query rolls back as a whole when they run on). The same with the pattern and its copies
//! at two instances each (instance i of each copy hands to instance i of the next), on five
//! workers.

use crate::a_pattern_spreading_its_partial_matches_over_copies_writes_what_one_pattern_writes::SPREAD;
use crate::common;

use common::cluster::{kill_worker_after, LocalCluster, Setup};
use common::{anduin_ok, output_rows};

/// Runs `SPREAD` embedded as one pattern, then with three copies on a cluster (killing worker
/// `victim` after checkpoint 2 if asked; `parallel`: each copy at two instances); asserts the
/// same rows and that partial matches crossed processes. The cluster's logs.
fn over_workers(parallel: bool, victim: Option<usize>) -> String {
    let work = tempfile::tempdir().expect("tempdir");
    let d = work.path();
    // Slower than the embedded tests' pace, so that a kill lands mid-run.
    let mut query = SPREAD.replace("param rate = 40000", "param rate = 15000");
    if parallel {
        query = query.replace(
            "param overflow_instances",
            "param parallelism = 2\n  param overflow_instances",
        );
    }
    std::fs::write(d.join("q.flow"), &query).expect("query");
    anduin_ok(d, &["run", "q.flow", "--no-api", "--var", "OUTPUT=one.csv"]);
    let expected = output_rows(&d.join("one.csv"));
    assert!(expected.len() > 500, "enough matches: {}", expected.len());
    // Two slots a worker: the three copies cannot all run on one. Four workers: three are
    // enough for the query's five tasks after a kill.
    let workers = if parallel { 5 } else { 4 };
    let mut cluster = LocalCluster::start_with(
        workers,
        2,
        Setup {
            worker_env: vec![("RUST_LOG".into(), "anduin_runtime::spread=info".into())],
            ..Setup::default()
        },
    );
    let submit = cluster.submit(
        d,
        "q.flow",
        &[
            "--var",
            "K=3",
            "--var",
            "OUTPUT=out",
            "--checkpoint-every",
            "4000",
        ],
    );
    if let Some(victim) = victim {
        kill_worker_after(&mut cluster, "q", victim, 2);
    }
    let out = submit.wait_output();
    let logs = cluster.logs();
    assert!(
        out.status.success(),
        "{}\n{logs}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        output_rows(&d.join("out")),
        expected,
        "rows lost or repeated\n{logs}"
    );
    let workers: String = (0..workers)
        .map(|i| std::fs::read_to_string(cluster.dir.path().join(format!("w{i}.log"))))
        .filter_map(Result::ok)
        .collect();
    assert!(
        workers.contains("partial matches arrived from a copy on another worker"),
        "no partial matches crossed processes:\n{logs}"
    );
    logs
}

#[test]
fn copies_on_several_workers_hand_partial_matches_across_processes_and_write_one_patterns_rows() {
    over_workers(false, None);
}

#[test]
fn a_worker_killed_under_spreading_copies_costs_the_output_nothing() {
    over_workers(false, Some(1));
}

#[test]
fn copies_of_two_instances_on_several_workers_hand_over_instance_by_instance() {
    over_workers(true, None);
}

#[test]
fn a_worker_killed_under_spreading_copies_of_two_instances_costs_the_output_nothing() {
    over_workers(true, Some(1));
}
