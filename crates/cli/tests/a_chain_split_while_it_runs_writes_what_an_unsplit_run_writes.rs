//! Pipelining while the query runs (pattern 5, live): a generator, a filter, a map, a keyed
//! window and a writer fuse into one task; `anduin ctl set q w pipeline split` in the middle
//! of the input moves the window and the writer (with the window's open state) to a task of
//! their own at the barrier that carries the change, then `… f pipeline split` cuts the filter
//! from the generator. The output is the rows of a run never split, which is also what
//! `param pipeline = "split"` at plan time writes. Other values are refused, and so is going
//! back to fused; a split asked of an operator that heads its task already does nothing, and
//! one asked again is refused as changing nothing.

use crate::common;

use common::{anduin_ok, ctl, output_rows, slowed, stdout_ok, wait_until};

/// One chain: `gen -> f -> m -> w -> out`, all fused at parallelism 1.
pub(crate) const CHAIN: &str = r#"
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param seed = 7
  param count = 60000
  param rate = 40000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "f", type = "filter" {
  input name = "events"
  param condition = "value < 80"
  output name = "kept", type = "Event"
}
operator name = "m", type = "map" {
  input name = "kept"
  param columns = "ts, sensor, value * 3 AS value"
  output name = "tripled"
}
operator name = "w", type = "window" {
  input name = "tripled"
  param kind = "sliding"
  param size = "200ms"
  param slide = "50ms"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, SUM(value) AS total, MAX(value) AS hi"
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "${OUTPUT}"
}
"#;

/// The operators of each task of the running query `q`, head first.
pub(crate) fn tasks(client: &anduin_api::Client) -> Vec<Vec<String>> {
    let mut tasks: Vec<Vec<String>> = client
        .query("q")
        .expect("the query")
        .tasks
        .into_iter()
        .filter(|t| !t.operators.is_empty())
        .map(|t| t.operators)
        .collect();
    tasks.sort();
    tasks
}

/// The rows operator `op` of `q` has taken so far.
pub(crate) fn rows_in(client: &anduin_api::Client, op: &str) -> u64 {
    client.metrics("q").map_or(0, |m| {
        m.instances
            .iter()
            .filter(|i| i.operator == op)
            .map(|i| i.rows_in)
            .sum()
    })
}

fn names(tasks: &[&[&str]]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = tasks
        .iter()
        .map(|t| t.iter().map(|s| s.to_string()).collect())
        .collect();
    out.sort();
    out
}

#[test]
fn a_chain_split_while_it_runs_writes_what_an_unsplit_run_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let expected = slowed::prepare(d, CHAIN);
    assert!(expected.len() > 10_000, "the query produces enough rows");

    // Split at plan time: the same rows.
    let planned = CHAIN.replace(
        "  param keys = \"sensor\"",
        "  param keys = \"sensor\"\n  param pipeline = \"split\"",
    );
    std::fs::write(d.join("planned.flow"), planned).expect("query");
    anduin_ok(d, &["run", "planned.flow", "--var", "OUTPUT=planned.csv"]);
    assert!(
        output_rows(&d.join("planned.csv")) == expected,
        "the plan-time split writes what the unsplit run writes"
    );

    let (run, api) = slowed::start(d, &[]);
    let client = anduin_api::Client::new(&api, None).expect("an address");
    assert_eq!(
        tasks(&client),
        names(&[&["gen", "f", "m", "w", "out"]]),
        "one fused chain"
    );

    let refused = ctl(d, &api, &["set", "q", "w", "pipeline", "fused"]);
    assert_ne!(refused.status.code(), Some(0));
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(why.contains("the only one is \"split\""), "{why}");

    let seen = rows_in(&client, "w");
    wait_until("the window has taken rows", || {
        rows_in(&client, "w") > seen + 1000
    });
    let applied = stdout_ok(&ctl(d, &api, &["set", "q", "w", "pipeline", "split"]));
    assert!(applied.contains("applied at epoch"), "{applied}");
    // Answered as applied once the barrier has reached the window, a moment before its task
    // has split (and the listing shows it).
    let split = names(&[&["gen", "f", "m"], &["w", "out"]]);
    wait_until("the window and the writer as a task of their own", || {
        tasks(&client) == split
    });

    let back = ctl(d, &api, &["set", "q", "w", "pipeline", "fused"]);
    assert_ne!(back.status.code(), Some(0));
    let why = String::from_utf8_lossy(&back.stderr);
    assert!(why.contains("not supported while running"), "{why}");
    // A typo is a typo, split or not.
    let typo = ctl(d, &api, &["set", "q", "w", "pipeline", "SPLIT"]);
    let why = String::from_utf8_lossy(&typo.stderr);
    assert!(why.contains("the only one is \"split\""), "{why}");

    let seen = rows_in(&client, "f");
    wait_until("the filter has taken more rows", || {
        rows_in(&client, "f") > seen + 1000
    });
    stdout_ok(&ctl(d, &api, &["set", "q", "f", "pipeline", "split"]));
    let cut = names(&[&["gen"], &["f", "m"], &["w", "out"]]);
    wait_until("the filter cut from the generator", || {
        tasks(&client) == cut
    });
    // The head of its task already: accepted, nothing changes.
    stdout_ok(&ctl(d, &api, &["set", "q", "gen", "pipeline", "split"]));
    assert_eq!(tasks(&client).len(), 3);
    // Asked again: refused, saying that it is split already and that nothing changed.
    for op in ["w", "f", "gen"] {
        let again = ctl(d, &api, &["set", "q", op, "pipeline", "split"]);
        let why = String::from_utf8_lossy(&again.stderr);
        assert!(
            again.status.code() != Some(0)
                && why.contains(&format!("operator \"{op}\" is split already"))
                && why.contains("nothing changed"),
            "a second split of {op}: {why}"
        );
    }
    assert_eq!(tasks(&client).len(), 3);

    slowed::finish(d, &api, run, &["gen"], &expected);
}
