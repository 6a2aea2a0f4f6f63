//! A probe found that `anduin run q2.sql --var INPUT=in.csv --events in.csv` emptied the
//! query's input (a million rows became two JSON lines): the events file was created, and
//! so truncated, before anything was checked. It is now checked first, as outputs are, under
//! any name the input is reached by, and the run is refused before anything is opened.

use crate::common;

use std::path::Path;

use common::{anduin, repo};

/// Runs q2 over `input` with `--events events`; it must be refused, naming the events file
/// and `names` (what it collides with), and leave `in.csv` and the query as they were.
fn refused(dir: &Path, input: &str, events: &str, names: &[&str]) {
    let query = dir.join("q2.sql");
    let before = (
        std::fs::read(dir.join("in.csv")).expect("input"),
        std::fs::read(&query).expect("query"),
    );
    let out = anduin(
        dir,
        &[
            "run",
            "q2.sql",
            "--var",
            &format!("INPUT={input}"),
            "--var",
            "OUTPUT=out.csv",
            "--events",
            events,
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "--events {events}: {stderr}");
    assert!(
        stderr.contains(&format!("the events file `{events}`")),
        "{stderr}"
    );
    for name in names {
        assert!(stderr.contains(name), "--events {events}: {stderr}");
    }
    assert_eq!(
        (
            std::fs::read(dir.join("in.csv")).expect("input"),
            std::fs::read(&query).expect("query"),
        ),
        before,
        "--events {events} changed the input or the query"
    );
    assert!(
        !dir.join("out.csv").exists(),
        "--events {events}: the refused run made its output"
    );
}

#[test]
fn an_input_named_as_the_events_file_survives_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let mut input = String::from("ts,sensor,value\n");
    for i in 0..10_000 {
        input.push_str(&format!("{},{},{}\n", i * 100, i % 7, i));
    }
    std::fs::write(root.join("in.csv"), &input).expect("input");
    std::fs::copy(repo().join("examples/q2.sql"), root.join("q2.sql")).expect("query");
    std::fs::create_dir(root.join("sub")).expect("sub");
    std::os::unix::fs::symlink("in.csv", root.join("link.csv")).expect("symlink");
    std::fs::hard_link(root.join("in.csv"), root.join("hard.csv")).expect("hard link");

    let input_of = "an input of operator \"events\"";
    refused(root, "in.csv", "in.csv", &[input_of]);
    refused(root, "in.csv", "sub/../in.csv", &[input_of]);
    refused(root, "in.csv", "link.csv", &[input_of]);
    refused(root, "in.csv", "hard.csv", &[input_of]);
    let absolute = root.join("in.csv").display().to_string();
    refused(root, "in.csv", &absolute, &[input_of]);
    // A glob's match would be read as input, once made.
    refused(root, "i*.csv", "inew.csv", &["the input pattern `i*.csv`"]);
    // The query file is read too.
    refused(root, "in.csv", "q2.sql", &["the query file (`q2.sql`)"]);
    assert_eq!(
        std::fs::read_to_string(root.join("in.csv")).expect("input"),
        input
    );
}
