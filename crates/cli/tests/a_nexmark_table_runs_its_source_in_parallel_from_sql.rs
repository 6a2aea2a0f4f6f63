//! A `'nexmark'` SQL table runs its source as several instances, by its `parallelism` option
//! or by `anduin run --parallelism`, and the query gives the serial run's rows: `explain` shows
//! the instances, and Nexmark's q2 over the table keeps the same bids.

use crate::common;

use common::{anduin_ok, sorted_rows};

/// Nexmark's q2, with the table's extra options in `{options}`.
fn q2(options: &str) -> String {
    format!(
        "
CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime TIMESTAMP, extra VARCHAR)
WITH (connector = 'nexmark', events = '30000', event_time = 'dateTime'{options});
CREATE TABLE out WITH (connector = 'file', path = 'q2.csv');
INSERT INTO out SELECT auction, price FROM bid WHERE auction % 123 = 0;
"
    )
}

/// Runs `script` with `args` and returns its sorted rows and `explain`'s plan.
fn run(script: &str, args: &[&str]) -> (Vec<String>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("q2.sql"), script).expect("script");
    let mut explain = vec!["explain", "q2.sql"];
    explain.extend_from_slice(args);
    let plan = String::from_utf8_lossy(&anduin_ok(dir.path(), &explain).stdout).to_string();
    let mut run = vec!["run", "q2.sql", "-q"];
    run.extend_from_slice(args);
    anduin_ok(dir.path(), &run);
    let rows = std::fs::read_to_string(dir.path().join("q2.csv")).expect("q2 output");
    (sorted_rows(&rows), plan)
}

#[test]
fn a_nexmark_table_runs_its_source_in_parallel_from_sql() {
    let (serial, plan) = run(&q2(""), &[]);
    assert!(serial.len() > 50, "{} rows", serial.len());
    assert!(!plan.contains("instances"), "{plan}");

    let (by_option, plan) = run(&q2(", parallelism = '2'"), &[]);
    assert!(plan.contains("task 0: bid (2 instances)\n"), "{plan}");
    assert!(by_option == serial, "parallelism = '2' changed the rows");

    let (by_flag, plan) = run(&q2(""), &["--parallelism", "2"]);
    assert!(plan.contains("task 0: bid (2 instances)\n"), "{plan}");
    assert!(by_flag == serial, "--parallelism 2 changed the rows");
}
