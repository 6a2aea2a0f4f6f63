//! Rules applied at run time (`anduin run --rules FILE`, paper §4.2): a rule whose constraint
//! reads a measured figure (`rate(w)`) sets a param of the operator it matches while the query
//! runs. Here two rules rescale a keyed window live: to 3 instances while rows arrive, back to
//! 1 when none do (the generator's rate stepped through `ctl set`). The history records the
//! changes from `rule:NAME`, and the output is what a run never rescaled writes. Rules that
//! reshape the graph and read a figure, or do not parse, are refused before the query runs, at
//! FILE:LINE:COL.

use crate::a_killed_run_resumes_to_the_output_of_an_uninterrupted_one::WINDOWED;
use crate::common;

use common::{anduin, ctl, slowed, stdout_ok, wait_until};

pub(crate) const RULES: &str = r#"
# more instances while rows arrive, one when none do
rule scale_busy_window:
  w := window [rate(w) > 100 and param(w, "parallelism") < 3] => w{parallelism = "3"}
rule shrink_idle_window:
  w := window [rate(w) < 1 and param(w, "parallelism") > 1] => w{parallelism = "1"}
"#;

#[test]
fn a_run_time_rule_rescales_a_window_while_its_measured_rate_holds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let expected = slowed::prepare(d, WINDOWED);
    std::fs::write(d.join("scale.rules"), RULES).expect("rules");
    let (run, api) = slowed::start(
        d,
        &[
            "--parallelism",
            "1",
            "--max-parallelism",
            "4",
            "--rules",
            "scale.rules",
            "--rules-interval",
            "200ms",
        ],
    );
    let client = anduin_api::Client::new(&api, None).expect("an address");
    let parallelism = || slowed::owners(&client, "w");
    wait_until("the busy window rescaled to 3", || {
        parallelism().as_deref() == Some("3")
    });
    stdout_ok(&ctl(d, &api, &["set", "q", "gen", "rate", "0.001"]));
    wait_until("the idle window rescaled to 1", || {
        parallelism().as_deref() == Some("1")
    });
    let by_rules: Vec<String> = client
        .history("q")
        .expect("the history")
        .into_iter()
        .filter(|r| r.from.starts_with("rule:"))
        .map(|r| format!("{} {}.{} {}→{}", r.from, r.operator, r.param, r.old, r.new))
        .collect();
    assert!(
        by_rules.contains(&"rule:scale_busy_window w.parallelism 1→3".to_string()),
        "{by_rules:?}"
    );
    assert!(
        by_rules.contains(&"rule:shrink_idle_window w.parallelism 3→1".to_string()),
        "{by_rules:?}"
    );

    slowed::finish(d, &api, run, &["gen"], &expected);
}

#[test]
fn rules_that_cannot_run_are_refused_before_the_query_runs_at_their_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("q.flow"), WINDOWED).expect("query");
    let refused = |rules: &str, says: &str| {
        std::fs::write(d.join("bad.rules"), rules).expect("rules");
        let out = anduin(
            d,
            &[
                "run",
                "q.flow",
                "--var",
                "OUTPUT=out.csv",
                "--rules",
                "bad.rules",
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{rules} must be refused");
        assert!(stderr.contains(says), "{rules}: {stderr}");
        assert!(!d.join("out.csv").exists(), "nothing ran");
    };
    refused(
        "\n w := window [rate(w) > 1] => merge(w)",
        "bad.rules:2:2: rule bad.rules:2: it reads the figure `rate` and its right side makes a new `merge` operator",
    );
    refused(
        "w := window [rate(w) >] => w{parallelism = \"2\"}",
        "bad.rules:1:",
    );
    refused("# nothing", "holds no rule");
    refused(
        "rule typo: w := window [ratee(w) > 1] => w{parallelism = \"2\"}",
        "rule typo: no figure `ratee` is measured",
    );
    refused(&format!("# {}", "x".repeat(2 << 20)), "larger than 1 MiB");
    let out = anduin(
        d,
        &[
            "run",
            "q.flow",
            "--var",
            "OUTPUT=out.csv",
            "--rules",
            "/dev/zero",
        ],
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not a file"),
        "a device is not read"
    );
}
