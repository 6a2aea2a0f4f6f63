//! A part can fail while its worker lives on (its executor is killed by the system, say, for
//! memory): with per-task recovery only that part's instances are restored — on another
//! worker, since the failure may be its worker's — from the last complete checkpoint, while
//! the rest of the query runs on at its first attempt. The output equals an uninterrupted
//! embedded run's.

use crate::common;

use common::cluster::{children, signal, windowed_generator, PerTask};

#[test]
fn an_executor_killed_alone_is_restored_while_the_rest_of_the_query_runs_on() {
    let t = PerTask::start(&windowed_generator(
        13,
        200_000,
        20_000,
        r#"param kind = "sliding" param size = "200ms" param slide = "50ms""#,
    ));
    let submit = t.submit(&["--no-chaining"]);
    let executors = children(t.cluster.workers[2].pid());
    assert_eq!(executors.len(), 1, "the worker runs one executor");
    signal(executors[0], libc::SIGKILL);
    let log = t.assert_same_output_at_attempt_1(submit);
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
