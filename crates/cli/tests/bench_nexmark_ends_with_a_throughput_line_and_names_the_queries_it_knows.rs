//! `anduin bench nexmark` runs a query of `benches/nexmark/` into discard sinks and ends with
//! `q0: 20000 events in W s, C cores, E events/s/core`; an unknown query is an error that
//! lists the queries there are. Only the format is checked: no figure, no timing.

use crate::common;

use common::{anduin, anduin_ok, repo};

/// Whether `line` follows `template`, where `#` stands for one or more digits, `?` for
/// exactly one, and every other character for itself.
fn matches(template: &str, line: &str) -> bool {
    let mut line = line.chars().peekable();
    for t in template.chars() {
        if t == '#' {
            let mut digits = 0;
            while line.peek().is_some_and(char::is_ascii_digit) {
                line.next();
                digits += 1;
            }
            if digits == 0 {
                return false;
            }
        } else if t == '?' {
            if !line.next().is_some_and(|c| c.is_ascii_digit()) {
                return false;
            }
        } else if line.next() != Some(t) {
            return false;
        }
    }
    line.next().is_none()
}

#[test]
fn the_last_line_gives_the_events_the_wall_time_the_cores_and_the_events_per_core_second() {
    let out = anduin_ok(
        &repo(),
        &["bench", "nexmark", "--query", "q0", "--events", "20000"],
    );
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    let last = stdout.lines().last().expect("some output");
    assert!(
        matches(
            "q0: 20000 events in #.?? s, #.?? cores, # events/s/core",
            last
        ),
        "last line: {last}\nstdout:\n{stdout}"
    );
    assert!(
        stdout.contains("sinks replaced by discard"),
        "stdout:\n{stdout}"
    );
}

#[test]
fn an_unknown_query_is_an_error_that_lists_the_queries() {
    let out = anduin(&repo(), &["bench", "nexmark", "--query", "q99"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).expect("utf-8");
    assert!(stderr.contains("unknown query `q99`"), "{stderr}");
    for q in ["q0", "q1", "q2", "cep_q0", "cep_q3", "all"] {
        assert!(stderr.contains(q), "`{q}` is not listed: {stderr}");
    }
}

#[test]
fn the_template_matcher_tells_the_format_apart() {
    let t = "q0: 20000 events in #.?? s, #.?? cores, # events/s/core";
    assert!(matches(
        t,
        "q0: 20000 events in 0.12 s, 0.98 cores, 170940 events/s/core"
    ));
    assert!(!matches(
        t,
        "q0: 20000 events in 0.1 s, 0.98 cores, 170940 events/s/core"
    ));
    assert!(!matches(
        t,
        "q0: 20000 events in 0.12 s, 0.98 cores, 170940.5 events/s/core"
    ));
}

/// q13 reads its side table, `side_input.txt`, beside the query files the bench found: run
/// from another directory (issue 17's probe: `cd /tmp && anduin bench nexmark --query q13`),
/// with or without `--dir`, it still finds it.
#[test]
fn q13_finds_its_side_table_beside_the_queries_from_any_directory() {
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let copied = elsewhere.path().join("queries");
    std::fs::create_dir(&copied).expect("mkdir");
    for f in ["q13.sql", "side_input.txt"] {
        std::fs::copy(repo().join("benches/nexmark").join(f), copied.join(f)).expect("copy");
    }
    let cwd = tempfile::tempdir().expect("tempdir");
    let dir = copied.display().to_string();
    for args in [
        vec!["bench", "nexmark", "--query", "q13", "--events", "2000"],
        vec![
            "bench", "nexmark", "--query", "q13", "--events", "2000", "--dir", &dir,
        ],
    ] {
        let out = anduin_ok(cwd.path(), &args);
        let stdout = String::from_utf8(out.stdout).expect("utf-8");
        let last = stdout.lines().last().expect("some output");
        assert!(
            matches(
                "q13: 2000 events in #.?? s, #.?? cores, # events/s/core",
                last
            ),
            "{args:?}: last line: {last}\nstdout:\n{stdout}"
        );
    }
}
