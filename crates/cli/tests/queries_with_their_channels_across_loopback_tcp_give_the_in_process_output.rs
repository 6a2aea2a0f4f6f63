//! The network data plane end to end: the shipped examples, with every operator a task of its
//! own, several instances of each parallel one, and the instances spread over three workers
//! whose channels cross loopback TCP (`--loopback-workers 3`), give exactly the output of the
//! same query with in-process channels — windows, keyed exchanges, joins, unions, patterns and
//! a broadcast control stream, with watermarks, idleness and the end of input crossing the
//! network too.

use crate::common;

use common::{anduin_ok, repo};

/// The output of `example` run with `vars` and `extra` flags, its lines sorted (instances
/// interleave their rows in no fixed order).
fn run(example: &str, vars: &[&str], extra: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out.csv");
    let output = format!("OUTPUT={}", out.display());
    let mut args = vec!["run", example];
    for v in vars.iter().chain([&output.as_str()]) {
        args.extend(["--var", v]);
    }
    args.extend(extra);
    let ran = anduin_ok(&repo(), &args);
    let stderr = String::from_utf8_lossy(&ran.stderr);
    // The spread run says how many of its channels crossed the network: most of them.
    let crossed = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("channels: "))
        .map(|l| {
            let n: Vec<usize> = l
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            (n[0], n[1])
        });
    if extra.contains(&"--loopback-workers") {
        let (all, network) = crossed.unwrap_or_else(|| panic!("no channel count: {stderr}"));
        assert!(
            network > 0 && network * 2 >= all,
            "{example}: {all} channels, {network} across workers"
        );
    } else {
        assert_eq!(crossed, None, "{stderr}");
    }
    let mut lines: Vec<String> = std::fs::read_to_string(&out)
        .expect("the query wrote its output")
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

const SPREAD: &[&str] = &[
    "--no-chaining",
    "--parallelism",
    "3",
    "--loopback-workers",
    "3",
];

#[test]
fn queries_with_their_channels_across_loopback_tcp_give_the_in_process_output() {
    let cases: &[(&str, &[&str])] = &[
        ("examples/sensors.flow", &["INPUT=data/readings.csv"]),
        ("examples/q2.flow", &["INPUT=data/readings.csv"]),
        ("examples/q4.flow", &["INPUT=data/readings.csv"]),
        ("examples/q3.flow", &["INPUT=data/readings.csv"]),
        (
            "examples/join.flow",
            &["ALERTS=data/alerts.csv", "READINGS=data/readings.csv"],
        ),
        (
            "examples/union.flow",
            &["A=data/readings.csv", "B=data/more_readings.jsonl"],
        ),
        ("examples/cep_paper.flow", &["INPUT=data/ticks.csv"]),
        (
            "examples/sensors_controlled.flow",
            &[
                "INPUT=data/readings.csv",
                "CHANGES=data/threshold_changes.csv",
            ],
        ),
    ];
    for (example, vars) in cases {
        let local = run(example, vars, &["--no-chaining", "--parallelism", "3"]);
        let spread = run(example, vars, SPREAD);
        assert!(local.len() > 1, "{example} wrote no rows");
        assert_eq!(
            local, spread,
            "{example}: the output over loopback TCP differs from the in-process one"
        );
    }
}
