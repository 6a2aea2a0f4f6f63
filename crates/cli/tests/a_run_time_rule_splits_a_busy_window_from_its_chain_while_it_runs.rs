//! A run-time rule (`anduin run --rules FILE`) whose right side sets `pipeline = "split"`
//! splits the window from the chain it is fused in while the query runs, through the same
//! path as `anduin ctl set`: the history records the change once, from `rule:NAME` (the rule
//! does not split it again in later rounds), and the output is what an unsplit run writes.

use crate::a_chain_split_while_it_runs_writes_what_an_unsplit_run_writes::{rows_in, tasks, CHAIN};
use crate::common;

use common::{slowed, wait_until};

/// Measured busy time at all (rather than a threshold, which depends on the machine) and rows
/// arriving: split.
const RULES: &str = r#"
rule split_busy_window:
  w := window [busy(w) > 0 and rate(w) > 100] => w{pipeline = "split"}
"#;

#[test]
fn a_run_time_rule_splits_a_busy_window_from_its_chain_while_it_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let expected = slowed::prepare(d, CHAIN);
    std::fs::write(d.join("split.rules"), RULES).expect("rules");
    let flags = ["--rules", "split.rules", "--rules-interval", "200ms"];
    let (run, api) = slowed::start(d, &flags);
    let client = anduin_api::Client::new(&api, None).expect("an address");
    let by_rules = || -> Vec<String> {
        client
            .history("q")
            .expect("the history")
            .into_iter()
            .filter(|r| r.from.starts_with("rule:"))
            .map(|r| format!("{} {}.{} {}", r.from, r.operator, r.param, r.new))
            .collect()
    };
    wait_until("the rule split the window", || !by_rules().is_empty());
    let split = tasks(&client);
    assert!(
        split.contains(&vec!["w".to_string(), "out".to_string()]),
        "{split:?}"
    );
    // Some more rounds (1 500 rows at 2 000 a second, a round every 200 ms): none splits
    // it again.
    let rounds = |c: &anduin_api::Client| c.metrics("q").map_or(0, |m| m.control_changes);
    let changes = rounds(&client);
    let seen = rows_in(&client, "w");
    wait_until("more rows through the window", || {
        rows_in(&client, "w") > seen + 1500
    });
    assert_eq!(rounds(&client), changes, "no change after the split");
    assert_eq!(
        by_rules(),
        ["rule:split_busy_window w.pipeline split".to_string()]
    );
    slowed::finish(d, &api, run, &["gen"], &expected);
}
