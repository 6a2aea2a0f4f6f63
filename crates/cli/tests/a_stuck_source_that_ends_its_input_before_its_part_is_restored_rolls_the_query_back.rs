//! A part taken as stuck may only be slow (a loaded machine) or paused for a while: its source
//! can read the rest of its input and report its end after per-task recovery has chosen to
//! restore the part alone, and before the part's new incarnation is recorded (so the report
//! still counts). The checkpoint coordinator then holds every source as ended, and the last
//! checkpoint it takes once the restored part runs ends the restored source where its
//! checkpoint had left it: the rest of its input is never read, and — when nothing that kept
//! running could notice the replay fall short, as here where the whole query is one part —
//! the query "finishes" at its first attempt with a fraction of its output (seen on a loaded
//! machine, every part restored at once: 2% of the rows). Per-task recovery must see the end
//! as it restores, and roll the whole query back instead, as for a source that had ended
//! before the failure: the output equals an uninterrupted run's.
//!
//! Aimed without timing: `--inject-hold-restore` holds the restore, after its choice, until a
//! source reports its end; the query's only executor is stopped (SIGSTOP) until its
//! checkpoint times out and the restore is held, then continued (SIGCONT) to read its input
//! to the end.

use crate::common;

use common::cluster::{children, signal, windowed_generator, worker_of_the_source, PerTask};
use common::{output_rows, wait_until};

#[test]
fn a_stuck_source_that_ends_its_input_before_its_part_is_restored_rolls_the_query_back() {
    let t = PerTask::start_with(
        &windowed_generator(
            13,
            200_000,
            20_000,
            r#"param kind = "sliding" param size = "200ms" param slide = "50ms""#,
        ),
        &["--inject-hold-restore"],
    );
    // One instance per operator, chained: the whole query is one task, one part.
    let submit = t.cluster.submit(
        t.work.path(),
        "q.flow",
        &[
            "--var",
            "OUTPUT=out",
            "--parallelism",
            "1",
            "--checkpoint-every",
            "4000",
            "--checkpoint-timeout",
            "1s",
            "--checkpoint-interval",
            "500ms",
        ],
    );
    wait_until("the first checkpoint", || {
        t.cluster.status("q")["last_checkpoint"]
            .as_u64()
            .is_some_and(|e| e >= 1)
    });
    let worker = worker_of_the_source(&t.cluster);
    let executors = children(t.cluster.workers[worker].pid());
    assert_eq!(executors.len(), 1, "the worker runs one executor");
    signal(executors[0], libc::SIGSTOP);
    wait_until("the restore of the stopped part held", || {
        t.cluster
            .coordinator_log()
            .contains("holding the restore of the part(s)")
    });
    signal(executors[0], libc::SIGCONT);
    let out = submit.wait_output();
    let logs = t.cluster.logs();
    assert!(
        out.status.success(),
        "{}\n{logs}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = output_rows(&t.work.path().join("out"));
    assert_eq!(
        got.len(),
        t.expected.len(),
        "rows lost or duplicated\n{logs}"
    );
    assert!(
        got == t.expected,
        "the output differs from the uninterrupted run"
    );
    let log = t.cluster.coordinator_log();
    assert!(
        log.contains("had already read all its input: the query is finishing"),
        "the whole query must roll back: {log}"
    );
    // Rolled back (on a loaded machine a later attempt may be taken as stuck and roll back
    // again, with the same exact output).
    let attempt = t.cluster.status("q")["attempt"].as_u64();
    assert!(
        attempt.is_some_and(|a| a >= 2),
        "attempt {attempt:?}: {log}"
    );
}
