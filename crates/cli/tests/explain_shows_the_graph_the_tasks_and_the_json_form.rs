//! `anduin explain` in its three formats, and the JSON form runs like the `.flow` it came from.

use crate::common;

use common::{anduin, assert_golden, golden, repo};

#[test]
fn explain_prints_text_dot_and_json() {
    for (format, file) in [
        ("text", "sensors.txt"),
        ("dot", "sensors.dot"),
        ("json", "sensors.json"),
    ] {
        let out = anduin(
            &repo(),
            &[
                "explain",
                "examples/sensors.flow",
                "--format",
                format,
                "--var",
                "INPUT=data/readings.csv",
                "--var",
                "OUTPUT=/tmp/low.csv",
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_golden(
            &golden().join("explain").join(file),
            &String::from_utf8_lossy(&out.stdout),
        );
    }
}

#[test]
fn without_chaining_every_operator_is_a_task() {
    let out = anduin(
        &repo(),
        &["explain", "examples/sensors.flow", "--no-chaining"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("physical plan: 3 tasks, 2 channels"),
        "{text}"
    );
}

#[test]
fn the_json_form_runs_like_the_flow_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = repo().join("data/readings.csv");
    let input = input.to_str().expect("utf-8");
    let json = anduin(
        &repo(),
        &[
            "explain",
            "examples/sensors.flow",
            "--format",
            "json",
            "--var",
            &format!("INPUT={input}"),
            "--var",
            "OUTPUT=from_json.csv",
        ],
    );
    assert_eq!(json.status.code(), Some(0));
    std::fs::write(dir.path().join("q.json"), &json.stdout).expect("json query");
    let out = anduin(dir.path(), &["run", "q.json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = anduin(
        dir.path(),
        &[
            "run",
            repo()
                .join("examples/sensors.flow")
                .to_str()
                .expect("utf-8"),
            "--var",
            &format!("INPUT={input}"),
            "--var",
            "OUTPUT=from_flow.csv",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let a = std::fs::read(dir.path().join("from_json.csv")).expect("json run output");
    let b = std::fs::read(dir.path().join("from_flow.csv")).expect("flow run output");
    assert!(!a.is_empty());
    assert_eq!(a, b);
}
