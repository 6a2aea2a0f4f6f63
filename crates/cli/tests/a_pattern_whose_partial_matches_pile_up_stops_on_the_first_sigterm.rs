//! Issue 18, M3, from the hostile probe: a pattern whose partial matches pile up (`A B* C`,
//! every row a `B`, no `C`: each row advances a partial match per row before it) takes an hour
//! over the rows read, and the first SIGTERM, which stops a run once every operator has
//! processed what was read, did not stop it: it printed "stopping on SIGTERM" and ran on at
//! 100% CPU until a second signal. The pattern now gives up feeding rows a second after the
//! stop, and the run ends as a stop does.

use crate::common;

use std::process::{Command, Stdio};

use common::{wait_until, ChildGuard};

/// The CPU time, in clock ticks, of the run's task threads (`anduin-task-N`).
fn tasks_cpu(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.trim().starts_with("anduin-task"))
        })
        .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
        .filter_map(|stat| {
            // After the command's `)`: state is field 3, utime field 14.
            let rest = stat.rsplit_once(')')?.1;
            rest.split_whitespace().nth(11)?.parse::<u64>().ok()
        })
        .sum()
}

#[test]
fn a_pattern_whose_partial_matches_pile_up_stops_on_the_first_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 150 000 rows of one partition: n²/2 steps of a partial match, hours in a debug build.
    let mut input = String::from("p,ts,v\n");
    for ts in 1..=150_000 {
        input.push_str(&format!("1,{ts},1\n"));
    }
    std::fs::write(dir.path().join("in.csv"), input).expect("input");
    std::fs::write(
        dir.path().join("q.sql"),
        "CREATE TABLE t (p BIGINT, ts BIGINT, v BIGINT)
WITH (connector = 'file', path = 'in.csv', format = 'csv', event_time = 'ts');
CREATE TABLE out WITH (connector = 'file', path = 'out.csv', format = 'csv');
INSERT INTO out
SELECT * FROM t MATCH_RECOGNIZE (
  PARTITION BY p ORDER BY ts
  MEASURES FIRST(ts) AS f, LAST(ts) AS l, COUNT(*) AS c
  ONE ROW PER MATCH
  AFTER MATCH SKIP TO NEXT ROW
  PATTERN (A B* C)
  DEFINE B AS true, C AS v < 0
);",
    )
    .expect("query");
    let child = Command::new(env!("CARGO_BIN_EXE_anduin"))
        .args(["run", "q.sql", "--no-api"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let mut child = ChildGuard(child);
    let pid = child.pid();
    // Three seconds of the tasks' CPU: the rows read (a channel's worth at least) keep the
    // pattern busy for far longer, and the signal handler is in place (installed before the
    // tasks start).
    wait_until("the pattern to be busy", || tasks_cpu(pid) >= 300);
    let stderr = child.stop_on_one_sigterm("the piled-up pattern");
    assert!(
        stderr.contains("the pattern gave up matching the rows still waiting"),
        "{stderr}"
    );
    // The last words say what a stop without checkpoints cost: the rows given up, and a match
    // open where the pattern gave up, which ended there as at the end of the input.
    assert!(stderr.contains("it may be cut short"), "{stderr}");
}
