//! A part can fail while its worker lives on (its executor is killed by the system, say, for
//! memory): with per-task recovery only that part's instances are restored — on another
//! worker, since the failure may be its worker's — from the last complete checkpoint, while
//! the rest of the query runs on at its first attempt. The output equals an uninterrupted
//! embedded run's.

mod common;

use common::cluster::{children, windowed_generator, LocalCluster, Setup};
use common::{anduin_ok, output_rows, wait_until};

#[test]
fn an_executor_killed_alone_is_restored_while_the_rest_of_the_query_runs_on() {
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        work.path().join("q.flow"),
        windowed_generator(
            13,
            200_000,
            20_000,
            r#"param kind = "sliding" param size = "200ms" param slide = "50ms""#,
        ),
    )
    .expect("query");
    anduin_ok(
        work.path(),
        &["run", "q.flow", "--var", "OUTPUT=reference.csv"],
    );
    let expected = output_rows(&work.path().join("reference.csv"));

    let cluster = LocalCluster::start_with(
        3,
        8,
        Setup {
            coordinator_flags: vec!["--per-task-recovery".into()],
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
            "--no-chaining",
            "--checkpoint-every",
            "4000",
        ],
    );
    wait_until("a checkpoint before the kill", || {
        cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });
    let executors = children(cluster.workers[2].pid());
    assert_eq!(executors.len(), 1, "the worker runs one executor");
    let pid = libc::pid_t::try_from(executors[0]).expect("a pid");
    // SAFETY: kill(2) on the executor the test's worker started.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    let out = submit.wait_output();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        cluster.logs()
    );
    let got = output_rows(&work.path().join("out"));
    assert_eq!(
        got.len(),
        expected.len(),
        "rows lost or duplicated\n{}",
        cluster.logs()
    );
    assert!(
        got == expected,
        "the output differs from the uninterrupted run"
    );
    let status = cluster.status("q");
    let log = cluster.coordinator_log();
    assert_eq!(
        status["attempt"],
        1,
        "the query rolled back as a whole: {status}\n{}",
        cluster.logs()
    );
    // `… the part of worker P failed (…); restoring its instances on worker H from …`
    let line = log
        .lines()
        .find(|l| l.contains("failed (") && l.contains("restoring its instances on worker"))
        .unwrap_or_else(|| panic!("no restore of the failed part: {log}"));
    let number_after = |what: &str| -> String {
        let (_, rest) = line.split_once(what).expect("the line names it");
        rest.chars().take_while(char::is_ascii_digit).collect()
    };
    let (part, host) = (
        number_after("the part of worker "),
        number_after("its instances on worker "),
    );
    assert_ne!(part, host, "a failed part goes to another worker: {line}");
    assert!(log.contains("instances restored; no other task"), "{log}");
}
