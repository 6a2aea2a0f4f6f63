//! A chain split while the query runs (`anduin ctl set q w pipeline split`), a checkpoint
//! taken after the split (which waits for the new task's share), then SIGKILL: the run
//! resumed from that checkpoint plans the split from the start (the change is in the history
//! the checkpoint keeps) and writes exactly the rows of a run never split nor killed.

use crate::a_chain_split_while_it_runs_writes_what_an_unsplit_run_writes::{tasks, CHAIN};
use crate::common;

use common::{anduin_ok, ctl, output_rows, slowed, stdout_ok, wait_until};

#[test]
fn a_run_killed_after_a_live_split_resumes_to_the_unsplit_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    std::fs::write(d.join("ref.flow"), CHAIN).expect("query");
    anduin_ok(d, &["run", "ref.flow", "--var", "OUTPUT=reference.csv"]);
    let expected = output_rows(&d.join("reference.csv"));
    let slow = CHAIN.replace("param rate = 40000", "param rate = 2000");
    std::fs::write(d.join("q.flow"), slow).expect("query");

    // Split after a checkpoint; two more complete (the new task acknowledges the second);
    // killed at once.
    let (run, api, mut stderr) = slowed::start_checkpointed(d, &[]);
    slowed::checkpoints(&mut stderr, 1);
    let applied = stdout_ok(&ctl(d, &api, &["set", "q", "w", "pipeline", "split"]));
    assert!(applied.contains("applied at epoch"), "{applied}");
    let client = anduin_api::Client::new(&api, None).expect("an address");
    // The change is answered as applied once the barrier has reached the window, a moment
    // before its task has split (and the listing shows it).
    wait_until("the split in the task listing", || {
        tasks(&client).contains(&vec!["w".to_string(), "out".to_string()])
    });
    slowed::checkpoints(&mut stderr, 2);
    drop(run);

    // Resumed: split from the start; the rest at full speed.
    let (run, api, stderr) = slowed::start_checkpointed(d, &[]);
    // Its events are read to the end, so that it never waits on a full pipe.
    let drain = std::thread::spawn(move || {
        use std::io::BufRead;
        stderr
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    let client = anduin_api::Client::new(&api, None).expect("an address");
    let split = tasks(&client);
    assert!(
        split.contains(&vec!["w".to_string(), "out".to_string()]),
        "the resumed run plans the split: {split:?}"
    );
    stdout_ok(&ctl(d, &api, &["set", "q", "gen", "rate", "1000000"]));
    let out = run.wait_output();
    let events = drain.join().expect("the drain ends with the run");
    assert_eq!(out.status.code(), Some(0), "{}", events.join("\n"));
    let got = output_rows(&d.join("out"));
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated");
    assert!(got == expected, "the output differs from the unsplit run");
}
