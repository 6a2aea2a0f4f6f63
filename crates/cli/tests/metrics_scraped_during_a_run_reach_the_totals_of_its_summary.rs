//! `/metrics` scraped while a query runs parses as Prometheus text, and once its source is
//! paused through the API (its rate set to one row in 1000 s) and everything in flight has
//! gone through, the row counters of every operator equal the totals the run prints when it
//! is stopped. Busy and backpressured time and the queue are exported per instance.

use crate::common;

use std::collections::BTreeMap;
use std::io::Read;
use std::process::Command;

use common::wait_until;

/// `(metric, operator) -> value` of the samples of `text` with an `operator` label.
fn samples(text: &str) -> BTreeMap<(String, String), f64> {
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .expect("the exposition parses as Prometheus text");
    scrape
        .samples
        .iter()
        .filter_map(|s| {
            let operator = s.labels.get("operator")?;
            let v = match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => return None,
            };
            Some(((s.metric.clone(), operator.to_string()), v))
        })
        .collect()
}

#[test]
fn scraped_row_counters_reach_the_totals_of_the_run_summary() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(
        d.join("q.flow"),
        common::generated_filtered(5000, "value % 2 = 0"),
    )
    .expect("writes");
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    let mut c = Command::new(env!("CARGO_BIN_EXE_anduin"));
    c.args(["run", "q.flow"])
        .current_dir(d)
        .env("XDG_RUNTIME_DIR", d.join("rt"))
        .env_remove("RUST_LOG");
    let (mut run, api, mut stderr) = common::start_with_api(c);
    let client = anduin_api::Client::new(&api, None).expect("an address");
    let rows = |name: &str, of: &str| -> f64 {
        let all = samples(&client.prometheus().expect("scrapes"));
        all.get(&(name.to_string(), of.to_string()))
            .copied()
            .unwrap_or(0.0)
    };
    wait_until("rows through the filter", || {
        rows("anduin_operator_rows_in_total", "low") > 500.0
    });
    let all = samples(&client.prometheus().expect("scrapes"));
    for metric in [
        "anduin_operator_busy_seconds_total",
        "anduin_operator_blocked_seconds_total",
        "anduin_operator_input_queue_messages",
    ] {
        assert!(
            all.contains_key(&(metric.to_string(), "low".to_string())),
            "{metric} is exported for the filter"
        );
    }
    // Pause the source, then let what is in flight arrive.
    client
        .set("q", "gen", "rate", "0.001", "test")
        .expect("the rate changes");
    wait_until("the filter to catch up with the paused source", || {
        let all = samples(&client.prometheus().expect("scrapes"));
        let get = |m: &str, o: &str| all.get(&(m.to_string(), o.to_string())).copied();
        get("anduin_operator_rows_out_total", "gen") == get("anduin_operator_rows_in_total", "low")
            && get("anduin_operator_rows_out_total", "low")
                == get("anduin_operator_rows_in_total", "out")
    });
    let scraped = samples(&client.prometheus().expect("scrapes"));
    client.stop("q").expect("stops");
    let status = run.0.wait().expect("ends");
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).expect("reads");
    assert_eq!(status.code(), Some(0), "{rest}");
    let get = |m: &str, o: &str| scraped[&(m.to_string(), o.to_string())] as u64;
    let low_in = get("anduin_operator_rows_in_total", "low");
    let low_out = get("anduin_operator_rows_out_total", "low");
    let written = get("anduin_operator_rows_in_total", "out");
    assert!(
        low_out > 0 && low_out < low_in,
        "the filter keeps some rows"
    );
    let summary = |kind: &str| {
        rest.lines()
            .find(|l| l.contains(kind))
            .map(|l| l.split_whitespace().skip(2).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|| panic!("a {kind} line in {rest}"))
    };
    assert_eq!(
        summary("[filter]"),
        format!("{low_in} rows in, {low_out} rows out")
    );
    assert_eq!(summary("[writer]"), format!("{written} rows written"));
}
