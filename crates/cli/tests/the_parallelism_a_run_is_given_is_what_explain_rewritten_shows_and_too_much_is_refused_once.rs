//! `--parallelism N` is applied by the partitioning rules: `explain --rewritten` shows the
//! rule splitting the keyed window of `examples/q4.flow` into N copies, as `explain` shows N
//! instances; instances that add up to more than one rule makes (two windows of 600) are
//! planned; more than a rule makes for one operator is refused before anything runs, naming
//! the operator, once; and 0 is refused by `explain` as by `run`.

use crate::common;

use common::{anduin, anduin_ok, repo};

const VARS: [&str; 4] = [
    "--var",
    "INPUT=data/readings.csv",
    "--var",
    "OUTPUT=/dev/null",
];

fn args<'a>(head: &[&'a str], tail: &[&'a str]) -> Vec<&'a str> {
    head.iter()
        .chain(VARS.iter())
        .chain(tail)
        .copied()
        .collect()
}

#[test]
fn explain_rewritten_partitions_the_window_as_the_run_does() {
    let q = "examples/q4.flow";
    let rewritten = anduin_ok(
        &repo(),
        &args(&["explain", q, "--rewritten"], &["--parallelism", "3"]),
    );
    let text = String::from_utf8_lossy(&rewritten.stdout);
    assert!(
        text.contains("  partitioning at q4 (a = events, f = q4)\n"),
        "{text}"
    );
    assert!(text.contains("q4_replica_2 := window"), "{text}");
    let plan = anduin_ok(&repo(), &args(&["explain", q], &["--parallelism", "3"]));
    let text = String::from_utf8_lossy(&plan.stdout);
    assert!(text.contains("task 1: q4 (3 instances)"), "{text}");
    // Without --parallelism, nothing is split.
    let serial = anduin_ok(&repo(), &args(&["explain", q, "--rewritten"], &[]));
    assert!(
        String::from_utf8_lossy(&serial.stdout).contains("rules applied:\n  none"),
        "{}",
        String::from_utf8_lossy(&serial.stdout)
    );
}

#[test]
fn instances_of_several_operators_may_add_up_to_more_than_one_rule_makes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let q = dir.path().join("two.flow");
    let text = std::fs::read_to_string(repo().join("examples/q4.flow")).expect("q4");
    // A second keyed window after the first.
    let text = text.replace(
        "operator name = \"shape\", type = \"map\" {\n  input name = \"averages\"",
        "operator name = \"again\", type = \"window\" {\n  input name = \"averages\"\n  param kind = \"tumbling\"\n  param size = \"10s\"\n  param time = \"window_end\"\n  param keys = \"sensor\"\n  param aggregates = \"MAX(avg) AS top\"\n  output name = \"again\"\n}\noperator name = \"shape\", type = \"map\" {\n  input name = \"again\"",
    )
    .replace("window_start, sensor, avg", "window_start, sensor, top AS avg");
    std::fs::write(&q, text).expect("write");
    let q = q.to_str().expect("utf-8");
    let plan = anduin_ok(&repo(), &args(&["explain", q], &["--parallelism", "600"]));
    let text = String::from_utf8_lossy(&plan.stdout);
    assert!(text.contains("q4 (600 instances)"), "{text}");
    assert!(text.contains("again (600 instances)"), "{text}");
    // And the rewritten graph shows them, not a refusal for growing too much.
    let rewritten = anduin_ok(
        &repo(),
        &args(&["explain", q, "--rewritten"], &["--parallelism", "600"]),
    );
    let text = String::from_utf8_lossy(&rewritten.stdout);
    assert!(
        text.contains("q4_replica_599") && text.contains("again_replica_599"),
        "{}",
        text.lines().take(20).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn more_instances_than_a_rule_makes_are_refused_once_naming_the_operator() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out.csv");
    let output = format!("OUTPUT={}", out.display());
    let run = anduin(
        &repo(),
        &[
            "run",
            "examples/q4.flow",
            "--var",
            "INPUT=data/readings.csv",
            "--var",
            &output,
            "--parallelism",
            "1025",
        ],
    );
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    // The reader is the first operator that takes `--parallelism` (it reads in parallel).
    let message = "operator \"events\" asks for 1025 instances (--parallelism), more than the 1024";
    assert_eq!(stderr.matches(message).count(), 1, "{stderr}");
    for n in ["0", "-1", "two"] {
        let explain = anduin(
            &repo(),
            &args(&["explain", "examples/q4.flow"], &["--parallelism", n]),
        );
        assert_eq!(explain.status.code(), Some(2), "--parallelism {n}");
    }
}
