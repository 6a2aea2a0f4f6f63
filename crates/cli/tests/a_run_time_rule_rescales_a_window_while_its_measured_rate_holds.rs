//! Rules applied at run time (`anduin run --rules FILE`, paper §4.2): a rule whose constraint
//! reads a measured figure (`rate(w)`) sets a param of the operator it matches while the query
//! runs. Here two rules rescale a keyed window live: to 3 instances while rows arrive, back to
//! 1 when none do (the generator's rate stepped through `ctl set`). The history records the
//! changes from `rule:NAME`, and the output is what a run never rescaled writes. Rules that
//! reshape the graph, or do not parse, are refused before the query runs, at FILE:LINE:COL.

use crate::a_killed_run_resumes_to_the_output_of_an_uninterrupted_one::WINDOWED;
use crate::common;

use std::process::{Command, Stdio};

use common::{anduin, anduin_ok, ctl, output_rows, start_with_api, stdout_ok, wait_until};

const RULES: &str = r#"
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
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    std::fs::write(d.join("ref.flow"), WINDOWED).expect("query");
    anduin_ok(d, &["run", "ref.flow", "--var", "OUTPUT=reference.csv"]);
    let expected = output_rows(&d.join("reference.csv"));

    let slow = WINDOWED.replace("param rate = 40000", "param rate = 2000");
    std::fs::write(d.join("q.flow"), slow).expect("query");
    std::fs::write(d.join("scale.rules"), RULES).expect("rules");
    let mut command = Command::new(env!("CARGO_BIN_EXE_anduin"));
    command
        .args(["run", "q.flow", "-q", "--var", "OUTPUT=out.csv"])
        .args(["--parallelism", "1", "--max-parallelism", "4"])
        .args(["--batch-size", "200", "--linger", "20ms"])
        .args(["--rules", "scale.rules", "--rules-interval", "200ms"])
        .current_dir(d)
        .env("XDG_RUNTIME_DIR", d.join("rt"))
        .env_remove("RUST_LOG")
        .stdout(Stdio::null());
    let (run, api, _stderr) = start_with_api(command);
    let client = anduin_api::Client::new(&api, None).expect("an address");
    let parallelism = || {
        client
            .params("q", "w")
            .ok()
            .and_then(|ps| ps.into_iter().find(|p| p.name == "parallelism"))
            .map(|p| p.value)
    };
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

    stdout_ok(&ctl(d, &api, &["set", "q", "gen", "rate", "1000000"]));
    let out = run.wait_output();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = output_rows(&d.join("out.csv"));
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated");
    assert!(
        got == expected,
        "the output differs from the unrescaled run"
    );
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
        "\n w := window => merge(w)",
        "bad.rules:2:2: rule bad.rules:2: its right side makes a new `merge` operator",
    );
    refused(
        "w := window [rate(w) >] => w{parallelism = \"2\"}",
        "bad.rules:1:",
    );
    refused("# nothing", "holds no rule");
}
