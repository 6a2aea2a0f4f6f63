//! `anduin explain --rewritten --rules FILE` (docs/rewriting.md): two user rules that create
//! operators for each other never reach a fixed point, and are refused with the iteration-limit
//! error naming both; a rule applied once to each operator of a chain of 300 filters (with the
//! built-in rules tried before it in every round) is explained, one application per filter.
//! The fixed point's work grows about linearly with the applications, so both end by
//! themselves: the test asserts what they print, not how long they take.

use crate::common;

use common::{anduin, anduin_ok};

/// A generator, `n` filters one after the other, a discard.
fn chain_of_filters(n: usize) -> String {
    let mut q = String::from(
        "type name = \"Event\" {\n  column name = \"ts\", type = \"timestamp\"\n  \
         column name = \"sensor\", type = \"int\"\n  column name = \"value\", type = \"int\"\n}\n\
         operator name = \"events\", type = \"generator\" {\n  param profile = \"events\"\n  \
         param count = \"10\"\n  output name = \"s0\", type = \"Event\"\n}\n",
    );
    for i in 0..n {
        q.push_str(&format!(
            "operator name = \"f{i}\", type = \"filter\" {{\n  input name = \"s{i}\"\n  \
             param condition = \"value < 42\"\n  output name = \"s{}\", type = \"Event\"\n}}\n",
            i + 1
        ));
    }
    q.push_str(&format!(
        "operator name = \"drop\", type = \"discard\" {{\n  input name = \"s{n}\"\n}}\n"
    ));
    q
}

#[test]
fn rules_that_feed_each_other_are_refused_naming_both() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("q.flow"), chain_of_filters(2)).expect("query");
    // Each wraps what the other made: a filter in a map, a map in a filter, forever.
    std::fs::write(
        d.join("cycle.rules"),
        "rule wrap_filter: f := filter => map(f)\nrule wrap_map: m := map => filter(m)\n",
    )
    .expect("rules");
    let out = anduin(
        d,
        &["explain", "q.flow", "--rewritten", "--rules", "cycle.rules"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "rewriting did not reach a fixed point after 1000 rule applications; \
             the rules still applying: wrap_filter, wrap_map"
        ),
        "{stderr}"
    );
}

#[test]
fn a_rule_on_each_of_300_filters_is_explained_once_per_filter() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("q.flow"), chain_of_filters(300)).expect("query");
    std::fs::write(d.join("pin.rules"), "rule pin: f := filter => f@{p}\n").expect("rules");
    let out = anduin_ok(
        d,
        &["explain", "q.flow", "--rewritten", "--rules", "pin.rules"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let applied = text.lines().filter(|l| l.starts_with("  pin at f")).count();
    assert_eq!(applied, 300, "{text}");
    assert!(text.contains("  pin at f0 (f = f0)\n"), "{text}");
    assert!(text.contains("  pin at f299 (f = f299)\n"), "{text}");
}
