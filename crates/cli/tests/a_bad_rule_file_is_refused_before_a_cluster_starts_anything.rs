//! `anduin cluster q.flow --rules FILE` (and `anduin submit`) read and check the rule file
//! before they start or reach anything: a file that does not parse, or holds a rule that
//! reshapes the graph and reads a measured figure (it is applied before anything is
//! measured), is refused at FILE:LINE:COL,
//! and no coordinator was started (its state directory and address file were never made).

use crate::common;

use common::anduin;

const QUERY: &str = r#"type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "events", type = "generator" {
  param profile = "events"
  param count = "10"
  output name = "events", type = "Event"
}
operator name = "low", type = "filter" {
  input name = "events"
  param condition = "value < 42"
  output name = "low", type = "Event"
}
operator name = "drop", type = "discard" {
  input name = "low"
}
"#;

#[test]
fn a_bad_rule_file_is_refused_before_a_cluster_starts_anything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("q.flow"), QUERY).expect("query");
    let refused = |rules: &str, says: &str| {
        std::fs::write(d.join("bad.rules"), rules).expect("rules");
        let state = d.join("cluster");
        let out = anduin(
            d,
            &[
                "cluster",
                "q.flow",
                "--workers",
                "1",
                "--dir",
                "cluster",
                "--rules",
                "bad.rules",
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{rules} must be refused");
        assert!(stderr.contains(says), "{rules}: {stderr}");
        assert!(!stderr.contains("worker error"), "{stderr}");
        assert!(
            !state.join("coordinator").exists(),
            "no coordinator started"
        );
        assert!(
            !state.join("coordinator.addr").exists(),
            "no coordinator started"
        );
        // `submit` refuses it before it asks for a coordinator (none listens at this one).
        let out = anduin(
            d,
            &[
                "submit",
                "q.flow",
                "--coordinator",
                "127.0.0.1:9",
                "--rules",
                "bad.rules",
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{rules} must be refused");
        assert!(stderr.contains(says), "submit, {rules}: {stderr}");
    };
    refused(
        "rule r: f := filter [rate(f) >] => f{parallelism = \"2\"}",
        "bad.rules:1:",
    );
    refused(
        "\nrule wrap: f := filter [busy(f) > 0.5] => merge(f)",
        "bad.rules:2:1: rule wrap: it reads the figure `busy` and its right side makes a new `merge` operator",
    );
}
