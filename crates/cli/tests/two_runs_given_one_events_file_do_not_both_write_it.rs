//! A probe found that a second run given the same `--events` file emptied the first run's
//! events. The events file is locked as an output is: a second run is refused, naming the
//! first run's PID, whatever name (a hard link) or `$TMPDIR` it comes with, and the first
//! run's events are left as they are.

use crate::common;

use std::path::Path;
use std::process::{Output, Stdio};

use common::{anduin_in_tmpdir, wait_until, ChildGuard, SLOW_GENERATOR};

fn run(dir: &Path, tmp: &str, args: &[&str]) -> Output {
    anduin_in_tmpdir(dir, tmp, args)
        .output()
        .expect("anduin runs")
}

#[test]
fn two_runs_given_one_events_file_do_not_both_write_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::write(root.join("slow.flow"), SLOW_GENERATOR).expect("query");
    // Ten rows, then the end: a second run that is not refused ends at once (and the test
    // fails rather than waits).
    std::fs::write(
        root.join("quick.flow"),
        SLOW_GENERATOR.replace("param rate = 50", "param count = 10"),
    )
    .expect("query");

    let first = ChildGuard(
        anduin_in_tmpdir(
            root,
            "t1",
            &[
                "run",
                "slow.flow",
                "--var",
                "OUTPUT=o1.csv",
                "--events",
                "events.jsonl",
            ],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("anduin starts"),
    );
    let pid = first.pid();
    // Its task has started (the file is locked before it is opened, and opened before the
    // run starts), and it writes no more events until it ends.
    wait_until("the first run to write its first event", || {
        std::fs::read_to_string(root.join("events.jsonl"))
            .is_ok_and(|t| t.contains(r#"{"event":"task_started""#))
    });
    let events = std::fs::read(root.join("events.jsonl")).expect("events");
    std::fs::hard_link(root.join("events.jsonl"), root.join("alias.jsonl")).expect("hard link");

    for (tmp, name) in [
        ("t1", "events.jsonl"),
        ("t2", "events.jsonl"),
        ("t2", "alias.jsonl"),
    ] {
        let second = run(
            root,
            tmp,
            &[
                "run",
                "quick.flow",
                "--var",
                "OUTPUT=o2.csv",
                "--events",
                name,
            ],
        );
        let stderr = String::from_utf8_lossy(&second.stderr);
        assert_eq!(second.status.code(), Some(1), "{name} in {tmp}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "the events file `{name}` is in use by another anduin run (PID {pid})"
            )),
            "{name} in {tmp}: {stderr}"
        );
        assert_eq!(
            std::fs::read(root.join("events.jsonl")).expect("events"),
            events,
            "the refused run ({name} in {tmp}) touched the first run's events"
        );
    }
    drop(first);

    // Once the first run is gone, the file is free for the next.
    let next = run(
        root,
        "t1",
        &[
            "run",
            "quick.flow",
            "--var",
            "OUTPUT=o2.csv",
            "--events",
            "events.jsonl",
        ],
    );
    assert_eq!(
        next.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&next.stderr)
    );
    let text = std::fs::read_to_string(root.join("events.jsonl")).expect("events");
    assert!(
        text.starts_with(r#"{"event":"task_started""#)
            && text.contains(r#"{"event":"task_finished""#),
        "the next run's events replace the first's: {text}"
    );
}
