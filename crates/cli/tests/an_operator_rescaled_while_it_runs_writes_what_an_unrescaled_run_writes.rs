//! Live rescaling: a keyed window, a join and a pattern run with `--max-parallelism 4` at
//! `--parallelism 2` are rescaled to 4, 1 and 3 instances while they run (`anduin ctl set Q
//! OP parallelism N`, at points set by how far the input has got), and write exactly the
//! rows of a run that was never rescaled: at each rescale the instances hand the key groups
//! they lose to their new owners (open windows, buffered join rows, partial matches and rows
//! waiting for the watermark) while the rest of the query keeps running; each moves only the
//! key groups that move (its log says `directly=true`), not a snapshot of its whole state.
//! Run with `--max-parallelism 2`, they grow beyond it while running: a rescale to more
//! instances than run starts the new ones at its barrier (here embedded, and with loopback
//! workers; on a cluster: `a_keyed_window_rescaled_on_a_cluster_while_it_runs…`), and a
//! scale-down below the instances added retires them (embedded: their threads end; a later
//! rescale beyond starts new ones). A
//! rescale to more instances than key groups, or of an operator that cannot be rescaled, is
//! refused; so is one to the number of instances it has (nothing would change, nothing is
//! recorded); a param that cannot change is refused with a list of those that can,
//! `parallelism` in it. A run resumed from a checkpoint taken after a rescale beyond its
//! `--max-parallelism` starts as many instances as the rescale gave.

use crate::a_killed_run_resumes_to_the_output_of_an_uninterrupted_one::{CEP, JOINED, WINDOWED};
use crate::common;

use common::{anduin_ok, ctl, output_rows, slowed, stdout_ok, wait_until};

/// Runs `query` (its generators slowed down) rescaling `op` at each step of `steps` once
/// `op` has taken more rows, then lets the generators `sources` run at full speed to the end.
fn scenario(query: &str, op: &str, sources: &[&str], steps: &[&str], extra: &[&str]) {
    rescaled(query, (op, "4"), sources, steps, extra);
}

/// [`scenario`] with `--max-parallelism max`: steps beyond it start instances while running.
fn rescaled(
    query: &str,
    (op, max): (&str, &str),
    sources: &[&str],
    steps: &[&str],
    extra: &[&str],
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    // Slow: 60000 rows at 2000 a second would take 30 s; the rescales come well before.
    let expected = slowed::prepare(d, query);
    assert!(expected.len() > 10_000, "the query produces enough rows");
    let flags = [&["--parallelism", "2", "--max-parallelism", max][..], extra].concat();
    let (run, api, log) = slowed::start_logging(
        d,
        &flags,
        "warn,anduin_runtime::rescale=info,anduin_runtime::grow=info,anduin_runtime::task=info",
    );
    let client = anduin_api::Client::new(&api, None).expect("an address");
    let rows_in = || {
        client.metrics("q").map_or(0, |m| {
            m.instances
                .iter()
                .filter(|i| i.operator == op)
                .map(|i| i.rows_in)
                .sum::<u64>()
        })
    };
    // 721: more instances than key groups.
    for bad in ["0", "721", "two"] {
        let out = ctl(d, &api, &["set", "q", op, "parallelism", bad]);
        assert_ne!(
            out.status.code(),
            Some(0),
            "parallelism {bad} must be refused"
        );
    }
    let out = ctl(d, &api, &["set", "q", op, "parallelism", "721"]);
    let why = String::from_utf8_lossy(&out.stderr);
    assert!(
        why.contains("at most 720 (one key group each)"),
        "the key groups are the limit: {why}"
    );
    let out = ctl(d, &api, &["set", "q", "out", "parallelism", "2"]);
    assert_ne!(out.status.code(), Some(0), "a writer is not rescaled");
    let why = String::from_utf8_lossy(&out.stderr);
    assert!(
        why.contains("it does not split its input by key")
            && why.contains(&format!("the operators of this query that can be: {op}")),
        "the reason is the writer's, not --max-parallelism: {why}"
    );
    // A param that cannot change is refused naming those that can: `parallelism` among them.
    let out = ctl(d, &api, &["set", "q", op, "no_such_param", "1"]);
    assert_ne!(out.status.code(), Some(0), "no such param");
    let why = String::from_utf8_lossy(&out.stderr);
    let can = why.split("it can change: ").nth(1).unwrap_or_default();
    assert!(
        can.trim_end()
            .trim_end_matches(')')
            .split(", ")
            .any(|p| p == "parallelism"),
        "the params {op} can change include its parallelism: {why}"
    );
    let same = |n: &str| {
        let out = ctl(d, &api, &["set", "q", op, "parallelism", n]);
        assert_ne!(out.status.code(), Some(0), "a rescale to {n} is a change");
        let why = String::from_utf8_lossy(&out.stderr);
        assert!(why.contains("nothing to change"), "{why}");
    };
    same("2");
    // A step beyond the instances that run `op` starts as many more (`max` at first); one
    // below those added retires them down to it (not below `max`).
    let planned = max.parse::<usize>().expect("a number");
    let (mut instances, mut added, mut retired) = (planned, 0, 0);
    for step in steps {
        let n: usize = step.parse().expect("a number");
        added += n.saturating_sub(instances);
        let kept = n.max(planned);
        retired += instances.saturating_sub(kept);
        instances = kept.max(n);
        let seen = rows_in();
        wait_until("more rows", || rows_in() > seen + 1000);
        let applied = stdout_ok(&ctl(d, &api, &["set", "q", op, "parallelism", step]));
        assert!(applied.contains("applied at epoch"), "{applied}");
        same(step);
    }
    slowed::finish(d, &api, run, sources, &expected);
    // Every instance that took part moved only the key groups that moved (no snapshot).
    let log = log.join().expect("the drain ends with the run");
    let moves: Vec<&String> = log
        .iter()
        .filter(|l| l.contains("key groups moved"))
        .collect();
    assert!(
        !moves.is_empty(),
        "the moves are logged: {}",
        log.join("\n")
    );
    for m in moves {
        assert!(m.contains("directly=true"), "{op} moved by snapshot: {m}");
    }
    let started = log
        .iter()
        .filter(|l| l.contains("started an instance beyond those the query started with"))
        .count();
    assert_eq!(started, added, "instances started: {}", log.join("\n"));
    let ended = log
        .iter()
        .filter(|l| l.contains("retires: a scale-down left it no key group"))
        .count();
    assert_eq!(ended, retired, "instances retired: {}", log.join("\n"));
}

#[test]
fn a_keyed_window_rescaled_while_it_runs_writes_what_an_unrescaled_run_writes() {
    scenario(WINDOWED, "w", &["gen"], &["4", "1", "3"], &[]);
}

/// Started with 2 instances (`--max-parallelism 2`), grown to 4 and 6 while running: the new
/// instances take their key groups at the barrier as spare instances would; scaled down to 1,
/// the 4 added retire, and grown to 3 again, a new one starts.
#[test]
fn a_keyed_window_grown_beyond_its_max_parallelism_while_it_runs_writes_what_an_unrescaled_run_writes(
) {
    rescaled(WINDOWED, ("w", "2"), &["gen"], &["4", "6", "1", "3"], &[]);
}

#[test]
fn a_join_grown_beyond_its_max_parallelism_while_it_runs_writes_what_an_unrescaled_run_writes() {
    rescaled(JOINED, ("j", "2"), &["a", "b"], &["5", "1", "3"], &[]);
}

#[test]
fn a_pattern_grown_beyond_its_max_parallelism_while_it_runs_writes_what_an_unrescaled_run_writes() {
    rescaled(CEP, ("p", "2"), &["gen"], &["3", "5", "1"], &[]);
}

#[test]
fn a_join_rescaled_while_it_runs_writes_what_an_unrescaled_run_writes() {
    scenario(JOINED, "j", &["a", "b"], &["4", "1", "3"], &[]);
}

#[test]
fn a_pattern_rescaled_while_it_runs_writes_what_an_unrescaled_run_writes() {
    scenario(CEP, "p", &["gen"], &["3", "4", "1"], &[]);
}

/// Every operator a task, spread over three workers whose channels cross loopback TCP: the
/// producers' routes switch on network edges too, and the join grows beyond its 4 instances
/// (the new ones in the process, over in-process channels) and retires them.
#[test]
fn a_join_rescaled_while_its_channels_cross_loopback_tcp_writes_what_an_unrescaled_run_writes() {
    let tcp = ["--no-chaining", "--loopback-workers", "3"];
    scenario(JOINED, "j", &["a", "b"], &["4", "1", "6", "3"], &tcp);
}

#[test]
fn a_run_killed_right_after_live_rescales_resumes_to_what_an_unrescaled_run_writes() {
    let owners = killed_after_rescales("4", ("4", "1"), 0);
    assert!(["4", "1"].contains(&owners.as_str()), "{owners}");
}

/// Grown to 5 instances beyond `--max-parallelism 2`, checkpointed, rescaled to 3 and killed:
/// the resumed run (`--max-parallelism 2` again) starts as many instances as the last rescale
/// its checkpoint recorded gave, and writes what an unrescaled run writes.
#[test]
fn a_run_killed_after_growing_beyond_its_max_parallelism_resumes_with_as_many_instances() {
    let owners = killed_after_rescales("2", ("5", "3"), 0);
    assert!(["5", "3"].contains(&owners.as_str()), "{owners}");
}

/// Grown to 5 instances beyond `--max-parallelism 2`, scaled down to 1 (the 3 added retire),
/// checkpointed twice after (without them) and killed: the resumed run starts the planned 2
/// instances, 1 owning the key groups, and writes what an unrescaled run writes.
#[test]
fn a_run_killed_after_its_added_instances_retired_resumes_from_a_checkpoint_without_them() {
    let owners = killed_after_rescales("2", ("5", "1"), 2);
    assert_eq!(owners, "1");
}

/// The windowed query run with `--max-parallelism max`, rescaled to `first`, checkpointed
/// twice, rescaled to `then`, checkpointed `after` times more and killed; resumed and run to
/// the end at full speed,
/// its output compared with an unrescaled run's. Returns how many instances owned the
/// window's key groups when the resumed run started.
fn killed_after_rescales(max: &str, (first, then): (&str, &str), after: usize) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    std::fs::write(d.join("ref.flow"), WINDOWED).expect("query");
    anduin_ok(d, &["run", "ref.flow", "--var", "OUTPUT=reference.csv"]);
    let expected = output_rows(&d.join("reference.csv"));
    let slow = WINDOWED.replace("param rate = 40000", "param rate = 2000");
    std::fs::write(d.join("q.flow"), slow).expect("query");

    // Rescaled, a checkpoint after it (owned so), rescaled again and killed at once.
    let flags = ["--parallelism", "2", "--max-parallelism", max];
    let (run, api, mut stderr) = slowed::start_checkpointed(d, &flags);
    slowed::checkpoints(&mut stderr, 1);
    stdout_ok(&ctl(d, &api, &["scale", "q", "w", first]));
    slowed::checkpoints(&mut stderr, 2);
    stdout_ok(&ctl(d, &api, &["scale", "q", "w", then]));
    // The first may be the one whose barrier carried the rescale (the state before it).
    slowed::checkpoints(&mut stderr, after);
    drop(run);

    // Resumed: the rescales are kept (or the state re-cut); the rest at full speed.
    let (run, api, stderr) = slowed::start_checkpointed(d, &flags);
    // Its events are read to the end, so that it never waits on a full pipe.
    let drain = slowed::drain(stderr);
    let client = anduin_api::Client::new(&api, None).expect("an address");
    let owners = slowed::owners(&client, "w").unwrap_or_default();
    let params = stdout_ok(&ctl(d, &api, &["params", "q", "w"]));
    assert!(params.contains("parallelism"), "{params}");
    stdout_ok(&ctl(d, &api, &["set", "q", "gen", "rate", "1000000"]));
    let out = run.wait_output();
    let events = drain.join().expect("the drain ends with the run");
    assert_eq!(out.status.code(), Some(0), "{}", events.join("\n"));
    let got = output_rows(&d.join("out"));
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated");
    assert!(
        got == expected,
        "the output differs from the unrescaled run"
    );
    owners
}

/// Rescaled to 4, checkpointed and killed, then resumed with `--max-parallelism 2`: the run
/// keeps the rescale, starting 4 instances; `ctl scale` starts from those (a rescale to 4
/// changes nothing, one to 1 was 4).
#[test]
fn a_run_resumed_with_fewer_instances_than_its_last_rescale_scales_from_what_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    let slow = WINDOWED.replace("param rate = 40000", "param rate = 2000");
    std::fs::write(d.join("q.flow"), slow).expect("query");
    let (run, api, mut stderr) =
        slowed::start_checkpointed(d, &["--parallelism", "2", "--max-parallelism", "4"]);
    slowed::checkpoints(&mut stderr, 1);
    stdout_ok(&ctl(d, &api, &["scale", "q", "w", "4"]));
    slowed::checkpoints(&mut stderr, 2);
    drop(run);

    let (run, api, stderr) =
        slowed::start_checkpointed(d, &["--parallelism", "2", "--max-parallelism", "2"]);
    let _drain = slowed::drain(stderr);
    let client = anduin_api::Client::new(&api, None).expect("an address");
    assert_eq!(slowed::owners(&client, "w").as_deref(), Some("4"));
    let same = ctl(d, &api, &["scale", "q", "w", "4"]);
    let why = String::from_utf8_lossy(&same.stderr);
    assert!(
        same.status.code() != Some(0) && why.contains("nothing to change"),
        "the window runs at 4 already: {why}"
    );
    let applied = stdout_ok(&ctl(d, &api, &["scale", "q", "w", "1"]));
    assert!(
        applied.contains("w has 1 instance owning its key groups (was 4)"),
        "{applied}"
    );
    drop(run);
}
