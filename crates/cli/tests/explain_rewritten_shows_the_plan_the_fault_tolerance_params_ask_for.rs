//! `anduin explain --rewritten` on `examples/fault_tolerance.flow`: the graph before and after
//! the built-in rules (hot standby of the window), which rule matched where and the placement
//! constraints, as text (golden), JSON and Graphviz; user
//! rules from `--rules FILE` apply before the built-in ones (to the query as written, as a run
//! applies them), and a rule file that does not
//! parse is an error at FILE:LINE:COL.

use crate::common;

use common::{anduin, anduin_ok, assert_golden, golden, repo};

const VARS: [&str; 4] = [
    "--var",
    "INPUT=data/readings.csv",
    "--var",
    "OUTPUT=/dev/null",
];

fn explain(extra: &[&str]) -> std::process::Output {
    let mut args = vec!["explain", "examples/fault_tolerance.flow", "--rewritten"];
    args.extend(VARS);
    args.extend(extra);
    anduin(&repo(), &args)
}

#[test]
fn the_text_shows_the_graph_before_and_after_the_rules_and_where_each_matched() {
    let out = explain(&[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_golden(
        &golden().join("explain/fault_tolerance.rewritten.txt"),
        &text,
    );
    assert!(
        text.contains("  hot_standby at per_sensor (a1 = low, f = per_sensor)\n"),
        "{text}"
    );
}

#[test]
fn the_json_names_the_rules_applied_and_the_placement_of_the_replicas() {
    let out = explain(&["--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let rules: Vec<&str> = v["applications"]
        .as_array()
        .expect("applications")
        .iter()
        .map(|a| a["rule"].as_str().expect("a rule"))
        .collect();
    assert_eq!(rules, ["hot_standby"]);
    assert_eq!(v["placement"]["per_sensor"], "@{per_sensor.p1}");
    assert_eq!(v["placement"]["per_sensor_replica_1"], "@{per_sensor.p2}");
    assert!(v["rewritten"]
        .as_str()
        .expect("notation")
        .contains("stream-selector_1 := stream-selector("));
}

#[test]
fn the_dot_draws_both_graphs() {
    let out = explain(&["--format", "dot"]);
    let dot = String::from_utf8_lossy(&out.stdout);
    assert!(dot.starts_with("digraph rewritten {"), "{dot}");
    assert!(
        dot.contains("subgraph cluster_b") && dot.contains("subgraph cluster_a"),
        "{dot}"
    );
    assert!(dot.contains("\\nstream-selector"), "{dot}");
}

#[test]
fn user_rules_apply_before_the_built_in_ones_and_a_bad_one_is_located() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = dir.path().join("audit.rules");
    std::fs::write(
        &rules,
        "# every writer is audited\nrule audit:\n  w := writer [type(w) = \"writer\"] => w{header = \"false\"}\n",
    )
    .expect("rules");
    let r = rules.to_str().expect("utf-8");
    let out = anduin_ok(
        &repo(),
        &[
            "explain",
            "examples/sensors.flow",
            "--rewritten",
            "--rules",
            r,
            "--var",
            "INPUT=x",
            "--var",
            "OUTPUT=y",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("  audit at sink (w = sink)\n"), "{text}");
    assert!(
        text.contains("sink := writer{header = \"false\"}("),
        "{text}"
    );

    std::fs::write(&rules, "rule broken:\n  w := writer [type(w) = ] => w\n").expect("rules");
    let out = explain(&["--rules", r]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{r}:2:")), "{stderr}");
}

#[test]
fn the_plain_plan_shows_the_tasks_that_run_the_copies() {
    let mut args = vec!["explain", "examples/fault_tolerance.flow"];
    args.extend(VARS);
    let out = anduin_ok(&repo(), &args);
    let text = String::from_utf8_lossy(&out.stdout);
    for task in [
        "  task 1: per_sensor\n",
        "  task 2: per_sensor_replica_1\n",
        "  task 3: stream-selector_1 -> sink\n",
    ] {
        assert!(text.contains(task), "{task:?} in {text}");
    }
}
